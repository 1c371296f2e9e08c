#!/usr/bin/env bash
# Runs the Argo CD oracle: fleetgen's cluster Secrets and ApplicationSet
# preview against Argo CD v3.2.12's own util/db and ApplicationSet
# generators (oracle_test.go says what it compares).
#
#   test/argocdoracle/run.sh [go test flags]
#
# Everything comes from the Go module proxy. The oracle is a module of its
# own: Argo CD pins its Kubernetes libraries (v0.34) and links its whole
# controller tree, which must not enter fleetgen's build. It runs the
# fleetgen binary built here from this checkout.
#
# Why v3.2.12: Argo CD v3.3 to v3.5 build github.com/argoproj/argo-cd/gitops-engine
# from a folder of their repository that no module publishes (their go.mod
# replaces it with ./gitops-engine, which the module zip leaves out), and
# v3.6 needs Go 1.27. docs/argocd.md lists what v3.5 changed in the code the
# preview ports, and why the cases do not depend on it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export GOWORK=off GOTOOLCHAIN=local
mkdir -p "$here/.bin"
(cd "$here/../.." && GOFLAGS=-buildvcs=false nice go build -o "$here/.bin/fleetgen" ./cmd/fleetgen)
export FLEETGEN_BIN="$here/.bin/fleetgen"
cd "$here"
GOFLAGS="-mod=mod -buildvcs=false" exec nice go test -count=1 "$@" .
