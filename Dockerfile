# Multi-stage build: a static switchboard binary (modernc sqlite is pure Go,
# so CGO_ENABLED=0) on a small runtime with the tools agents use.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/switchboard ./cmd/switchboard

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bash git ripgrep ca-certificates bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 switchboard
COPY --from=build /out/switchboard /usr/local/bin/switchboard
USER switchboard
ENV SWITCHBOARD_HOME=/home/switchboard/.switchboard
WORKDIR /home/switchboard/work
ENTRYPOINT ["switchboard"]
CMD ["serve"]
