# fleetgen developer targets. `make test` is what CI (.ci/run) runs.
GO      ?= go
BIN     ?= bin/fleetgen
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: all build test bench bench-mirror lint size cold-build

all: build

## build: bin/fleetgen, with the version from git
build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/fleetgen

## test: every package's tests (needs git and /usr/bin/docker-registry)
test:
	$(GO) test ./...

## bench: render generated fleets of 1,000 and 10,000 clusters to disk
bench: build
	$(GO) run ./internal/cmd/benchrender -bin $(BIN)

## bench-mirror: fleetgen mirror vs a crane copy loop vs the floor, two local registries
bench-mirror:
	$(GO) run ./internal/cmd/benchmirror

## lint: gofmt and go vet
lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt -l:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## size: binary size of bin/fleetgen and how many modules and packages it links
size: build
	@echo "binary: $$(du -b $(BIN) | cut -f1) bytes ($$(du -m $(BIN) | cut -f1) MiB) $(BIN)"
	@echo "modules: $$($(GO) list -deps -f '{{with .Module}}{{.Path}}{{end}}' ./cmd/fleetgen | sort -u | wc -l) (fleetgen's own included)"
	@echo "packages: $$($(GO) list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./cmd/fleetgen | wc -l) non-standard, $$($(GO) list -deps ./cmd/fleetgen | wc -l) in all"

## cold-build: time `go build ./cmd/fleetgen` with an empty build cache (module cache as it is)
cold-build:
	@c=$$(mktemp -d); s=$$(date +%s); GOCACHE=$$c $(GO) build -o $$c/fleetgen ./cmd/fleetgen && \
	echo "cold build: $$(( $$(date +%s) - s )) s, binary $$(du -b $$c/fleetgen | cut -f1) bytes"; rm -rf $$c
