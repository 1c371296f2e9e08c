# fleetgen developer targets. `make test` is what CI (.ci/run) runs.
GO      ?= go
BIN     ?= bin/fleetgen
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: all build test e2e e2e-tools bench bench-mirror lint

all: build

## build: bin/fleetgen, with the version from git
build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/fleetgen

## test: every package's tests but the end-to-end one (needs git and /usr/bin/docker-registry)
test:
	$(GO) test $$($(GO) list ./... | grep -v /test/e2e)

## e2e-tools: etcd, kube-apiserver, Flux and Fleet built from the module proxy
## into ~/.cache/fleetgen/e2e/<versions>/ (about 40 CPU-minutes once, then cached)
e2e-tools:
	test/e2e/tools/build.sh >/dev/null

## e2e: fleetgen's output reconciled by a real control plane, Flux and Fleet
e2e: e2e-tools
	FLEETGEN_E2E_TOOLS="$$(test/e2e/tools/build.sh --dir)" $(GO) test -count=1 -v -timeout 30m ./test/e2e/

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
