# The README's two commands are `go run ./cmd/switchboard serve` (or chat
# until serve exists) and `make test`.
.PHONY: test build bench

test:
	CGO_ENABLED=1 go test -race -timeout 30m ./...

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o bin/switchboard ./cmd/switchboard

bench:
	go test -run '^$$' -bench . -benchmem ./agentcore/... ./store/... ./memfs/... ./sandbox/... ./channels/...
