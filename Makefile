# fleetgen developer targets. `make test` is what CI (.ci/run) runs.
GO      ?= go
BIN     ?= bin/fleetgen
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: all build test fuzz bench bench-mirror lint

all: build

## build: bin/fleetgen, with the version from git
build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/fleetgen

## test: every package's tests (needs git and /usr/bin/docker-registry)
test:
	$(GO) test -count=1 ./...

## fuzz: each fuzz target for FUZZTIME (10s): the fleet.yaml loader, the lock
## and the kubeconfig checks, seeded from examples/ (CI runs it after test)
FUZZTIME ?= 10s
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./pkg/schema
	$(GO) test -run='^$$' -fuzz='^FuzzCheckKubeconfig$$' -fuzztime=$(FUZZTIME) ./pkg/schema
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./pkg/lock

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
