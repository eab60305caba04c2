# Multi-stage build: a static switchboard binary (modernc sqlite is pure Go,
# so CGO_ENABLED=0) on a small runtime with the tools agents use.
#
#   docker build --build-arg VERSION=$(git describe --always --dirty) -t switchboard .
#   docker run -d --name switchboard -p 127.0.0.1:7700:7700 \
#     -v switchboard-data:/data -v "$PWD":/work \
#     -e SWITCHBOARD_WEB_TOKEN=$(openssl rand -hex 24) \
#     -e OPENAI_BASE_URL=http://host.docker.internal:11434/v1 -e SWITCHBOARD_MODEL=qwen3:8b \
#     switchboard
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The image is built without .git (see .dockerignore), so the version comes
# from this argument rather than from the VCS stamp.
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/switchboard ./cmd/switchboard

FROM debian:bookworm-slim
# tini runs as PID 1: it forwards SIGTERM to serve (which drains running
# turns) and reaps the tool processes agents leave behind. bash, git,
# ripgrep and bubblewrap are what the tools use.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bash git ripgrep ca-certificates bubblewrap tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 switchboard \
 && mkdir -p /data /work /etc/switchboard \
 && chown switchboard:switchboard /data /work \
 && chmod 700 /data
COPY --from=build /out/switchboard /usr/local/bin/switchboard
# Listen address and web token come from the environment through ${VAR}
# references in this file; mount your own over it for Telegram and agents.
COPY contrib/docker/switchboard.toml /etc/switchboard/switchboard.toml
USER switchboard
ENV SWITCHBOARD_HOME=/data \
    SWITCHBOARD_CONFIG=/etc/switchboard/switchboard.toml \
    SWITCHBOARD_LISTEN=0.0.0.0:7700
# The database, the agents' memory repositories and overflow files: a
# volume, so they outlive the container. /work is the agent's workspace.
VOLUME ["/data"]
WORKDIR /work
EXPOSE 7700
# switchboard health asks the running serve's /healthz (no curl needed).
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 CMD ["switchboard", "health"]
ENTRYPOINT ["/usr/bin/tini", "--", "switchboard"]
CMD ["serve"]
