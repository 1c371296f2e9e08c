#!/usr/bin/env bash
# Builds the end-to-end test's control plane and reconcilers from the Go module
# proxy into a cache folder keyed by their versions, and prints that folder:
#
#   test/e2e/tools/build.sh            # prints e.g. ~/.cache/fleetgen/e2e/<key>
#   test/e2e/tools/build.sh --dir      # prints that folder, builds nothing
#   test/e2e/tools/build.sh etcd helm  # builds only those (if missing)
#   test/e2e/tools/build.sh fleet      # Fleet's CLI (fleet apply) alone
#   test/e2e/tools/build.sh cosign     # only cosign (or cosign-v3.1.3: its file name)
#   test/e2e/tools/build.sh --path cosign  # prints .../bin/cosign-v3.1.3, builds nothing
#   FLEETGEN_E2E_BIN=$(test/e2e/tools/build.sh)/bin go test ./test/e2e/
#
# A binary already in the cache is never rebuilt: a cold build costs about
# 40 CPU-minutes, plus about 6 for helm-controller, notation, oras and regsync
# (docs/e2e.md), a warm run nothing. Every upstream module comes from the
# module proxy (`go mod download`), never from a Git checkout.
#
# kube-apiserver, the Flux controllers and Fleet are main modules upstream
# whose go.mod replaces sibling modules with folders the module zip does not
# hold (k8s.io/kubernetes' ./staging, Flux's ./api, Fleet's ./pkg/apis). Each
# is built inside a writable copy of its module with those replaces pointed at
# the published modules, GOWORK=off and -mod=mod.
set -euo pipefail

ETCD_VERSION=v3.6.8
# k8s.io/kubernetes v1.36.4 is not on the proxy; v1.36.3 is its neighbour and
# serves the API of our k8s.io v0.36.4 libraries.
KUBE_VERSION=v1.36.3
KUBE_STAGING_VERSION=v0.36.3
SOURCE_CONTROLLER_VERSION=v1.9.6
KUSTOMIZE_CONTROLLER_VERSION=v1.9.5
# The proxy refuses github.com/rancher/fleet v0.16.1 (HTTP 403); v0.16.0 is the
# neighbouring release of the same minor line.
FLEET_VERSION=v0.16.0
# The proxy refuses fluxcd/pkg/artifact v0.18.2 and v0.18.3.
FLUX_ARTIFACT_VERSION=v0.18.1
# helm renders the real fleet-agent chart.
HELM_VERSION=v3.19.0
# cosign signs test images for the signature interop test (pkg/verify). It is
# not part of the cache key: it is built as bin/cosign-<version>, on its own.
COSIGN_VERSION=v3.1.3
# The tools below are outside the cache key too, each bin/<name>-<version>:
# adding or bumping one builds that one and invalidates nothing else.
# helm-controller is Flux 2.9's (flux2 v2.9.5 requires its api v1.6.4; it
# renders with helm.sh/helm/v4 v4.2.4); it runs in the e2e beside source- and
# kustomize-controller, its CRDs in crds/helm-controller-<version>/.
HELM_CONTROLLER_VERSION=v1.6.4
# notation (Notary Project) signs for pkg/verify's Notation test. The proxy
# serves github.com/notaryproject/notation v1.3.2 and refuses the versions
# after it and the /v2 module (HTTP 403).
NOTATION_VERSION=v1.3.2
# oras backs up and restores OCI layouts for the air-gap round trip.
ORAS_VERSION=v1.3.6
# regsync (regclient) is one of the mirrors make bench-mirror measures.
REGSYNC_VERSION=v0.11.7
# OCM's hub registration controller, run on fleetgen's ManagedClusters
# (ocm_test.go), and the CRDs of its API that it watches. Not part of the
# cache key (bin/ocm-registration-<version>, crds/ocm-<version>/). v1.3 is not
# in the checksum database the proxy answers from; v1.2.1 is the newest that is.
OCM_VERSION=v1.2.1
OCM_API_VERSION=v1.2.0

here="$(cd "$(dirname "$0")" && pwd)"
key="etcd-${ETCD_VERSION}_kube-${KUBE_VERSION}_sc-${SOURCE_CONTROLLER_VERSION}_kc-${KUSTOMIZE_CONTROLLER_VERSION}_fleet-${FLEET_VERSION}_helm-${HELM_VERSION}"
out="${FLEETGEN_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fleetgen/e2e}/$key"
if [ "${1:-}" = "--dir" ]; then
	echo "$out"
	exit 0
fi
# --path NAME: the file NAME is built to, whether or not it is there yet.
if [ "${1:-}" = "--path" ]; then
	case "${2:-}" in
	cosign) echo "$out/bin/cosign-$COSIGN_VERSION" ;;
	helm-controller) echo "$out/bin/helm-controller-$HELM_CONTROLLER_VERSION" ;;
	notation) echo "$out/bin/notation-$NOTATION_VERSION" ;;
	oras) echo "$out/bin/oras-$ORAS_VERSION" ;;
	regsync) echo "$out/bin/regsync-$REGSYNC_VERSION" ;;
	etcd | kube-apiserver | kube-controller-manager | source-controller | kustomize-controller | \
		fleetcontroller | fleetagent | fleet | helm) echo "$out/bin/$2" ;;
	*)
		echo "build.sh --path: unknown tool ${2:-(none)}" >&2
		exit 2
		;;
	esac
	exit 0
fi
# Arguments name the binaries to build (default: all), e.g. to build two
# halves in parallel.
only=("$@")
mkdir -p "$out/bin" "$out/crds"
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

export GOWORK=off GOFLAGS="-mod=mod -buildvcs=false" GOTOOLCHAIN=local
nice=(nice -n 10)

log() { echo "e2e tools: $*" >&2; }

# modcopy MODULE VERSION: a writable copy of MODULE@VERSION, printed.
modcopy() {
	local dir
	dir="$(go mod download -json "$1@$2" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
	[ -n "$dir" ] || { log "cannot download $1@$2"; return 1; }
	local dst="$work/$(basename "$1")-$2"
	cp -r "$dir" "$dst"
	chmod -R u+w "$dst"
	rm -f "$dst/go.work" "$dst/go.work.sum"
	echo "$dst"
}

# timed NAME CMD...: runs CMD unless bin/NAME exists or NAME is not among the
# script's arguments (when it has any), recording the wall time. An argument
# may leave out a name's -<version> (cosign for cosign-v3.1.3).
timed() {
	local name="$1"
	shift
	if ((${#only[@]})) && [[ " ${only[*]} " != *" $name "* && " ${only[*]} " != *" ${name%-v[0-9]*} "* ]]; then
		return 0
	fi
	if [ -x "$out/bin/$name" ]; then
		log "$name: cached"
		return 0
	fi
	log "$name: building"
	local start=$SECONDS
	"$@"
	local took=$((SECONDS - start))
	echo "$name ${took}s $(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$out/build-times.txt"
	log "$name: built in ${took}s"
}

build_etcd() {
	(cd "$here" && "${nice[@]}" go build -trimpath -ldflags "-s -w" -o "$out/bin/etcd.tmp" ./etcd)
	mv "$out/bin/etcd.tmp" "$out/bin/etcd"
}

# build_kube NAME: a command of k8s.io/kubernetes (kube-apiserver, or
# kube-controller-manager for the service-account token and garbage
# collection controllers that Fleet's registration relies on).
build_kube() {
	local name="$1" src
	src="$(modcopy k8s.io/kubernetes "$KUBE_VERSION")"
	sed -i -E "s#^(\s*)(k8s\.io/[^ ]+) => \./staging/src/k8s\.io/[^ ]+\$#\1\2 => \2 $KUBE_STAGING_VERSION#" "$src/go.mod"
	local v=k8s.io/component-base/version
	local ldflags="-s -w -X $v.gitVersion=$KUBE_VERSION -X $v.gitMajor=1 -X $v.gitMinor=36 -X $v.gitTreeState=clean"
	(cd "$src" && "${nice[@]}" go build -trimpath -ldflags "$ldflags" -o "$out/bin/$name.tmp" "./cmd/$name")
	mv "$out/bin/$name.tmp" "$out/bin/$name"
}

# build_flux NAME VERSION: a Flux controller, its ./api replace dropped so the
# published api module of the required version is used.
build_flux() {
	local name="$1" version="$2" src
	src="$(modcopy "github.com/fluxcd/$name" "$version")"
	(
		cd "$src"
		go mod edit -dropreplace "github.com/fluxcd/$name/api" \
			-replace "github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@$FLUX_ARTIFACT_VERSION"
		"${nice[@]}" go build -trimpath -ldflags "-s -w" -o "$out/bin/$name.tmp" .
	)
	mkdir -p "$out/crds/$name"
	cp "$src"/config/crd/bases/*.yaml "$out/crds/$name/"
	mv "$out/bin/$name.tmp" "$out/bin/$name"
}

# build_fleet: fleet-controller and fleet-agent from one module copy, with the
# Fleet CRDs and the fleet-agent chart of the same release.
build_fleet() {
	local src
	src="$(modcopy github.com/rancher/fleet "$FLEET_VERSION")"
	(
		cd "$src"
		go mod edit -replace "github.com/rancher/fleet/pkg/apis=github.com/rancher/fleet/pkg/apis@$FLEET_VERSION"
		local ldflags="-s -w -X github.com/rancher/fleet/pkg/version.Version=$FLEET_VERSION"
		"${nice[@]}" go build -trimpath -ldflags "$ldflags" -o "$out/bin/fleetcontroller.tmp" ./cmd/fleetcontroller
		"${nice[@]}" go build -trimpath -ldflags "$ldflags" -o "$out/bin/fleetagent.tmp" ./cmd/fleetagent
	)
	mkdir -p "$out/crds/fleet"
	cp "$src/charts/fleet-crd/templates/crds.yaml" "$out/crds/fleet/crds.yaml"
	copy_fleet_chart "$src"
	mv "$out/bin/fleetagent.tmp" "$out/bin/fleetagent"
	mv "$out/bin/fleetcontroller.tmp" "$out/bin/fleetcontroller"
}

# copy_fleet_chart [SRC]: the fleet chart of the same release, from which the
# test takes fleet-controller's ConfigMap and its containers' arguments and
# environment. Cheap (a module copy): done whenever it is missing.
copy_fleet_chart() {
	[ -f "$out/charts/fleet/Chart.yaml" ] && return 0
	local src="${1:-}"
	[ -n "$src" ] || src="$(modcopy github.com/rancher/fleet "$FLEET_VERSION")"
	mkdir -p "$out/charts"
	rm -rf "$out/charts/fleet.tmp"
	cp -r "$src/charts/fleet" "$out/charts/fleet.tmp"
	mv "$out/charts/fleet.tmp" "$out/charts/fleet"
}

# build_fleetcli: Fleet's CLI, whose `fleet apply` is what gitjob runs to turn
# a GitRepo's checkout into Bundles, from the same module copy and replace as
# build_fleet (the test creates the Bundles of fleetgen's GitRepos with it).
# Its own binary name, so the cache key stays as it was.
build_fleetcli() {
	local src
	src="$(modcopy github.com/rancher/fleet "$FLEET_VERSION")"
	(
		cd "$src"
		go mod edit -replace "github.com/rancher/fleet/pkg/apis=github.com/rancher/fleet/pkg/apis@$FLEET_VERSION"
		local ldflags="-s -w -X github.com/rancher/fleet/pkg/version.Version=$FLEET_VERSION"
		"${nice[@]}" go build -trimpath -ldflags "$ldflags" -o "$out/bin/fleet.tmp" ./cmd/fleetcli
	)
	mv "$out/bin/fleet.tmp" "$out/bin/fleet"
}

# build_helm: helm's go.mod has no replace directives, so go install works.
build_helm() {
	GOBIN="$work/helm-bin" GOFLAGS=-buildvcs=false "${nice[@]}" go install -trimpath \
		-ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
	mv "$work/helm-bin/helm" "$out/bin/helm"
}

# build_helm_controller: Flux's helm-controller as build_flux builds the
# others (its ./api replace dropped), under its versioned name, with its CRDs.
build_helm_controller() {
	local src name="helm-controller-$HELM_CONTROLLER_VERSION"
	src="$(modcopy github.com/fluxcd/helm-controller "$HELM_CONTROLLER_VERSION")"
	(
		cd "$src"
		go mod edit -dropreplace github.com/fluxcd/helm-controller/api
		"${nice[@]}" go build -trimpath -ldflags "-s -w" -o "$out/bin/$name.tmp" .
	)
	rm -rf "$out/crds/$name"
	mkdir -p "$out/crds/$name"
	cp "$src"/config/crd/bases/*.yaml "$out/crds/$name/"
	mv "$out/bin/$name.tmp" "$out/bin/$name"
}

# goinstall NAME PACKAGE VERSION [LDFLAGS]: a command whose module has no
# replace directives (cosign, oras, regsync), so go install works,
# as bin/NAME-VERSION.
goinstall() {
	local name="$1" pkg="$2" version="$3" ldflags="-s -w ${4:-}"
	GOBIN="$work/$name-bin" GOFLAGS=-buildvcs=false "${nice[@]}" go install -trimpath \
		-ldflags "$ldflags" "$pkg@$version"
	mv "$work/$name-bin/$(basename "$pkg")" "$out/bin/$name-$version"
}

# build_notation: go install notation@version fails: it asks the proxy for
# the module's version list (for a deprecation notice), which the proxy
# refuses (HTTP 403). Built in a module copy instead, like the controllers.
build_notation() {
	local src name="notation-$NOTATION_VERSION"
	src="$(modcopy github.com/notaryproject/notation "$NOTATION_VERSION")"
	(
		cd "$src"
		"${nice[@]}" go build -trimpath -o "$out/bin/$name.tmp" \
			-ldflags "-s -w -X github.com/notaryproject/notation/internal/version.BuildMetadata=" ./cmd/notation
	)
	mv "$out/bin/$name.tmp" "$out/bin/$name"
}

# build_ocm_registration: OCM's cmd/registration (`registration controller`
# is the hub's), in a module copy (go install asks the proxy for the version
# list, which it refuses).
build_ocm_registration() {
	local src name="ocm-registration-$OCM_VERSION"
	src="$(modcopy open-cluster-management.io/ocm "$OCM_VERSION")"
	(cd "$src" && "${nice[@]}" go build -trimpath -ldflags "-s -w" -o "$out/bin/$name.tmp" ./cmd/registration)
	mv "$out/bin/$name.tmp" "$out/bin/$name"
}

# copy_ocm_crds: the CRDs of open-cluster-management.io/api the hub
# registration controller watches (clusters, cluster sets, work, add-ons).
copy_ocm_crds() {
	local dst="$out/crds/ocm-$OCM_API_VERSION" api
	[ -d "$dst" ] && return 0
	api="$(go mod download -json "open-cluster-management.io/api@$OCM_API_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
	[ -n "$api" ] || { log "cannot download open-cluster-management.io/api@$OCM_API_VERSION"; return 1; }
	mkdir -p "$dst.tmp"
	cp "$api"/cluster/v1/*.crd.yaml "$api"/cluster/v1beta2/*.crd.yaml "$api"/work/v1/*.crd.yaml "$api"/addon/v1alpha1/*.crd.yaml "$dst.tmp/"
	mv "$dst.tmp" "$dst"
}

timed etcd build_etcd
timed kube-apiserver build_kube kube-apiserver
timed source-controller build_flux source-controller "$SOURCE_CONTROLLER_VERSION"
timed kustomize-controller build_flux kustomize-controller "$KUSTOMIZE_CONTROLLER_VERSION"
timed fleetcontroller build_fleet
timed kube-controller-manager build_kube kube-controller-manager
timed helm build_helm
timed fleet build_fleetcli
timed "cosign-$COSIGN_VERSION" goinstall cosign github.com/sigstore/cosign/v3/cmd/cosign "$COSIGN_VERSION" \
	"-X sigs.k8s.io/release-utils/version.gitVersion=$COSIGN_VERSION"
timed "helm-controller-$HELM_CONTROLLER_VERSION" build_helm_controller
timed "notation-$NOTATION_VERSION" build_notation
timed "oras-$ORAS_VERSION" goinstall oras oras.land/oras/cmd/oras "$ORAS_VERSION"
timed "regsync-$REGSYNC_VERSION" goinstall regsync github.com/regclient/regclient/cmd/regsync "$REGSYNC_VERSION" \
	"-X github.com/regclient/regclient/internal/version.vcsTag=$REGSYNC_VERSION"
timed "ocm-registration-$OCM_VERSION" build_ocm_registration
if ! ((${#only[@]})) || [[ " ${only[*]} " == *" ocm-registration "* || " ${only[*]} " == *" ocm-registration-$OCM_VERSION "* ]]; then
	copy_ocm_crds
fi
if ! ((${#only[@]})) || [[ " ${only[*]} " == *" fleetcontroller "* ]]; then
	copy_fleet_chart
fi
echo "$out"
