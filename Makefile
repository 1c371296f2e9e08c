# fleetgen developer targets. `make test` is what CI (.ci/run) runs.
GO      ?= go
BIN     ?= bin/fleetgen
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# Where `make install` puts fleetgen; `make release` writes to DIST.
INSTALL_DIR ?= $(shell $(GO) env GOPATH)/bin
DIST        ?= dist
PLATFORMS   ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
LDFLAGS     := -X main.version=$(VERSION)
# What make release and make install link with: no symbol table, no DWARF,
# no build ID (reproducible).
RELEASE_LDFLAGS := -s -w -buildid= $(LDFLAGS)

.PHONY: all build install release cross test fuzz oracles bench bench-mirror lint size cold-build e2e e2e-tools oracle-argocd

all: build

## build: bin/fleetgen, with the version from git
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/fleetgen

## install: fleetgen into $(go env GOPATH)/bin (INSTALL_DIR=… to change),
## built as make release builds it (static, stripped, -trimpath)
install:
	CGO_ENABLED=0 GOBIN="$(INSTALL_DIR)" $(GO) install -trimpath -ldflags "$(RELEASE_LDFLAGS)" ./cmd/fleetgen
	@echo "installed $(INSTALL_DIR)/fleetgen ($(VERSION))"

## release: static binaries for $(PLATFORMS) in $(DIST)/, with SHA256SUMS
release:
	rm -rf "$(DIST)" && mkdir -p "$(DIST)"
	set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		echo "build $$os/$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath \
			-ldflags "$(RELEASE_LDFLAGS)" \
			-o "$(DIST)/fleetgen-$(VERSION)-$$os-$$arch" ./cmd/fleetgen; \
	done
	cd "$(DIST)" && sha256sum fleetgen-* > SHA256SUMS && cat SHA256SUMS

## cross: the command and the library packages compile for each of
## $(PLATFORMS) (what release ships; test/ is the linux test support)
cross:
	set -e; for p in $(PLATFORMS); do \
		echo "build $$p"; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build ./cmd/... ./pkg/... ./internal/...; \
	done

## test: every package's tests but the end-to-end one (needs git and
## /usr/bin/docker-registry), one line per package as it finishes
## (test/cmd/testrun), and last every test skipped for a missing tool (helm,
## cosign, notation, oras: test/e2e/tools/build.sh NAME) with how to get it
test:
	@echo "make test: compiling the test runner (test/cmd/testrun), then listing packages"
	$(GO) run ./test/cmd/testrun -exclude /test/e2e -- -count=1

## e2e-tools: etcd, kube-apiserver, Flux and Fleet, and the CLIs tests drive
## (helm, cosign, notation, oras, regsync), built from the module proxy into
## ~/.cache/fleetgen/e2e/<versions>/ (about 50 CPU-minutes once, then cached)
e2e-tools:
	test/e2e/tools/build.sh >/dev/null

## e2e: fleetgen's output reconciled by a real control plane, Flux and Fleet
e2e: e2e-tools
	FLEETGEN_E2E_TOOLS="$$(test/e2e/tools/build.sh --dir)" $(GO) test -count=1 -v -timeout 30m ./test/e2e/
## oracle-argocd: fleetgen's Argo CD cluster Secrets and ApplicationSet
## preview against Argo CD v3.2.12's own util/db and generators, in a module of
## its own (test/argocdoracle; docs/managers.md says what its build costs)
oracle-argocd:
	test/argocdoracle/run.sh -v

## fuzz: each fuzz target for FUZZTIME executions: the fleet.yaml loader, the
## kubeconfig checks and the lock parser, seeded from examples/, and diff's
## report in each format (no workflow command, ESC or CR from untrusted text),
## and the chart archive loader
## (CI runs it after test). A count, not a duration: Go 1.26's fuzzing
## coordinator can fail a duration run at its deadline with "context deadline
## exceeded" and no crasher (golang/go#75804, fixed in Go 1.27); CI hit it.
FUZZTIME ?= 50000x
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./pkg/schema
	$(GO) test -run='^$$' -fuzz='^FuzzCheckKubeconfig$$' -fuzztime=$(FUZZTIME) ./pkg/schema
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./pkg/lock
	$(GO) test -run='^$$' -fuzz='^FuzzText$$' -fuzztime=$(FUZZTIME) ./pkg/review
	$(GO) test -run='^$$' -fuzz='^FuzzLoad$$' -fuzztime=$(FUZZTIME) ./pkg/charts
	$(GO) test -run='^$$' -fuzz='^FuzzGitHub$$' -fuzztime=$(FUZZTIME) ./pkg/review
	$(GO) test -run='^$$' -fuzz='^FuzzMarkdown$$' -fuzztime=$(FUZZTIME) ./pkg/review
	$(GO) test -run='^$$' -fuzz='^FuzzJSON$$' -fuzztime=$(FUZZTIME) ./pkg/review

## oracles: exactly the tests that run upstream's own code beside a port of
## its behaviour and require the same answer (docs/upstream.md): Flux's
## substitution and generator (fluxcd/pkg/kustomize, behind the fluxequal tag:
## it links controller-runtime), kustomize's remote rule, SOPS's format and
## kustomize-controller's decryption, the YAML encoder against sigs.k8s.io/yaml
## and yaml.v3, helm-controller's values composition (fluxcd/pkg/chartutil),
## Helm's schema check and Sprig's bounded functions, and signatures of the
## real cosign and notation CLIs (FLEETGEN_COSIGN, FLEETGEN_NOTATION; skipped
## without them). Fleet's matcher and the real kustomize-controller are held
## by `make e2e`, the ApplicationSet preview by `make oracle-argocd` (a module
## of its own: Argo CD links its whole controller tree).
oracles:
	$(GO) test -count=1 -tags fluxequal -run '^(TestFluxSubstitutionEqual|TestFluxGeneratorEqual|TestRemoteCoversKustomize)$$' ./pkg/layers
	$(GO) test -count=1 -run '^(TestSOPSVersion|TestEncryptedBytesAsSOPS|TestTreeAsSOPS|TestEncryptCommentsDecryptWithSOPS|TestSealDecryptWithMAC|TestSealRoundTripFlux)$$' ./pkg/secrets
	$(GO) test -count=1 -run '^(TestEncodeMatchesSigsYAML|TestObjectsDecodeStrictly)$$' ./pkg/generate
	$(GO) test -count=1 -run '^(TestValuesMatchChartutil|TestSchema|TestReleaseDecodesUpstream)$$' ./pkg/charts
	$(GO) test -count=1 -run '^TestMatchesSprig$$' ./internal/sprigbound
	$(GO) test -count=1 -run '^(TestCosignInterop|TestNotationInterop)$$' ./pkg/verify

## bench: render generated fleets of 1,000, 10,000 and 100,000 clusters to disk
## (and render --check, diff of one changed cluster, targets, and the read of
## the rendered tree alone: the floor of check and diff); about 15 minutes
bench: build
	$(GO) run ./test/cmd/benchrender -bin $(BIN)

## bench-mirror: fleetgen mirror vs skopeo sync, regsync, a crane copy loop and
## the floor, and its warm re-run vs that run's requests replayed bare, local
## registries (regsync from test/e2e/tools/build.sh)
bench-mirror:
	FLEETGEN_REGSYNC="$${FLEETGEN_REGSYNC:-$$(test/e2e/tools/build.sh --path regsync)}" $(GO) run ./test/cmd/benchmirror

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
