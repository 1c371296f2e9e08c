#!/usr/bin/env bash
# try-locally.sh: fleetgen's whole loop on this machine, without the internet.
#
# It starts a registry on loopback (Debian's docker-registry), seeds it with a
# small image under hub/library/busybox:1.36 and a cosign-style signature (as
# `crane copy` from Docker Hub would), writes a fleet whose layer uses
# busybox:1.36 and whose spec.sourceMirrors reads docker.io from that
# registry, then runs validate, mirror, render and publish to a bare Git
# repository. See docs/try-locally.md.
#
#   examples/try-locally.sh            # everything in a new temporary folder
#   WORK=/tmp/try examples/try-locally.sh
#
# Needs: go (or FLEETGEN=/path/to/fleetgen), git, curl, sha256sum, tar, gzip
# and docker-registry (apt-get install docker-registry; REGISTRY_BIN=… for
# another path).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d)}
REGISTRY_BIN=${REGISTRY_BIN:-/usr/bin/docker-registry}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)

REG_PID=
cleanup() {
	if [ -n "$REG_PID" ]; then
		kill "$REG_PID" 2>/dev/null || true
		wait "$REG_PID" 2>/dev/null || true
	fi
}
trap cleanup EXIT

step() { printf '\n==> %s\n' "$*"; }

# 1. fleetgen itself.
if [ -z "${FLEETGEN:-}" ]; then
	step "building fleetgen"
	(cd "$REPO" && go build -o "$WORK/fleetgen" ./cmd/fleetgen)
	FLEETGEN=$WORK/fleetgen
fi

# 2. A registry on loopback, storage and config in $WORK/registry.
step "starting a registry on 127.0.0.1"
mkdir -p "$WORK/registry"
for attempt in 1 2 3 4 5; do
	PORT=$((20000 + RANDOM % 20000))
	REG=127.0.0.1:$PORT
	cat >"$WORK/registry/config.yml" <<EOF
version: 0.1
log:
  level: error
  accesslog: {disabled: true}
storage:
  filesystem: {rootdirectory: $WORK/registry/storage}
  delete: {enabled: true}
http:
  addr: $REG
EOF
	"$REGISTRY_BIN" serve "$WORK/registry/config.yml" >"$WORK/registry/log" 2>&1 &
	REG_PID=$!
	for _ in $(seq 50); do
		if curl -fsS "http://$REG/v2/" >/dev/null 2>&1; then break 2; fi
		if ! kill -0 "$REG_PID" 2>/dev/null; then break; fi
		sleep 0.1
	done
	kill "$REG_PID" 2>/dev/null || true
	wait "$REG_PID" 2>/dev/null || true
	REG_PID=
done
[ -n "$REG_PID" ] || { echo "the registry did not start: $WORK/registry/log" >&2; exit 1; }
echo "registry at http://$REG"

# 3. Seed it: what `crane copy busybox:1.36 $REG/hub/library/busybox:1.36`
# would do with Docker Hub in reach, by the registry API with curl.
step "seeding $REG/hub/library/busybox:1.36"
SEED=$WORK/seed
mkdir -p "$SEED/rootfs"
echo "hello from a local registry" >"$SEED/rootfs/hello.txt"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$SEED/rootfs" -cf "$SEED/layer.tar" .
gzip -n -f "$SEED/layer.tar"

sha() { echo "sha256:$(sha256sum "$1" | cut -d' ' -f1)"; }
size() { wc -c <"$1" | tr -d ' '; }

# push_blob REPO FILE uploads FILE as a blob of REPO (monolithic upload).
push_blob() {
	local repo=$1 file=$2 loc sep
	loc=$(curl -fsS -X POST -D - -o /dev/null "http://$REG/v2/$repo/blobs/uploads/" | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
	case $loc in http*) ;; *) loc=http://$REG$loc ;; esac
	case $loc in *\?*) sep='&' ;; *) sep='?' ;; esac
	curl -fsS -X PUT -H 'Content-Type: application/octet-stream' --data-binary "@$file" "$loc${sep}digest=$(sha "$file")" >/dev/null
}

# put_manifest REPO REF FILE puts the OCI manifest FILE as REPO:REF.
put_manifest() {
	curl -fsS -X PUT -H 'Content-Type: application/vnd.oci.image.manifest.v1+json' \
		--data-binary "@$3" "http://$REG/v2/$1/manifests/$2" >/dev/null
}

gunzip -c "$SEED/layer.tar.gz" >"$SEED/layer.tar"
printf '{"architecture":"amd64","os":"linux","config":{"Cmd":["/hello.txt"]},"rootfs":{"type":"layers","diff_ids":["%s"]}}' \
	"$(sha "$SEED/layer.tar")" >"$SEED/config.json"
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%s}]}' \
	"$(sha "$SEED/config.json")" "$(size "$SEED/config.json")" "$(sha "$SEED/layer.tar.gz")" "$(size "$SEED/layer.tar.gz")" >"$SEED/manifest.json"
push_blob hub/library/busybox "$SEED/config.json"
push_blob hub/library/busybox "$SEED/layer.tar.gz"
put_manifest hub/library/busybox 1.36 "$SEED/manifest.json"
DIGEST=$(sha "$SEED/manifest.json")

# A signature in cosign's legacy scheme: tag sha256-<hex>.sig beside it.
printf '{"critical":{"identity":{"docker-reference":"docker.io/library/busybox"},"image":{"docker-manifest-digest":"%s"},"type":"cosign container image signature"}}' \
	"$DIGEST" >"$SEED/payload.json"
printf '{"architecture":"","os":"","rootfs":{"type":"layers","diff_ids":["%s"]}}' "$(sha "$SEED/payload.json")" >"$SEED/sigconfig.json"
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.dev.cosign.simplesigning.v1+json","digest":"%s","size":%s,"annotations":{"dev.cosignproject.cosign/signature":"MEUCIQDlocal"}}]}' \
	"$(sha "$SEED/sigconfig.json")" "$(size "$SEED/sigconfig.json")" "$(sha "$SEED/payload.json")" "$(size "$SEED/payload.json")" >"$SEED/sig.json"
push_blob hub/library/busybox "$SEED/sigconfig.json"
push_blob hub/library/busybox "$SEED/payload.json"
put_manifest hub/library/busybox "sha256-${DIGEST#sha256:}.sig" "$SEED/sig.json"
echo "busybox:1.36 is $DIGEST, signed"

# 4. A fleet that names docker.io images and reads them from the registry.
step "writing a fleet in $WORK/fleet"
mkdir -p "$WORK/fleet/apps"
cat >"$WORK/fleet/fleet.yaml" <<EOF
apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata:
  name: local
spec:
  manager:
    name: hub
  registry:                      # where images are mirrored to
    host: "$REG"
    prefix: mirror
    insecure: true
  source:                        # where clusters' Flux would read the tree
    kind: git
    url: https://git.example.invalid/fleet.git
    ref: main
  sourceMirrors:                 # where docker.io images are read from
    - host: docker.io
      mirror: "$REG/hub"
      insecure: true
  layers:
    - name: apps
      path: ./apps
  defaults:
    registration: capi
  clusters:
    - name: dev-1
EOF
cat >"$WORK/fleet/apps/kustomization.yaml" <<'EOF'
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [hello.yaml]
EOF
cat >"$WORK/fleet/apps/hello.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: hello, namespace: default}
spec:
  selector:
    matchLabels: {app: hello}
  template:
    metadata:
      labels: {app: hello}
    spec:
      containers:
        - name: hello
          image: busybox:1.36
EOF

# 5. The loop.
cd "$WORK/fleet"
step "fleetgen mirror (every input check but the lock's, then the copy)"
"$FLEETGEN" mirror
cat fleet.lock.yaml
step "fleetgen validate (now with the lock)"
"$FLEETGEN" validate
step "fleetgen render -o $WORK/out"
"$FLEETGEN" render -o "$WORK/out"
step "fleetgen publish to the bare repository $WORK/remote.git"
git init -q --bare "$WORK/remote.git"
GIT_AUTHOR_NAME=${GIT_AUTHOR_NAME:-try-locally} GIT_AUTHOR_EMAIL=${GIT_AUTHOR_EMAIL:-try@localhost} \
	GIT_COMMITTER_NAME=${GIT_COMMITTER_NAME:-try-locally} GIT_COMMITTER_EMAIL=${GIT_COMMITTER_EMAIL:-try@localhost} \
	"$FLEETGEN" publish -o "$WORK/out" --push-url "file://$WORK/remote.git"
git --git-dir="$WORK/remote.git" log --oneline main
git --git-dir="$WORK/remote.git" ls-tree -r --name-only main | head -20

step "done: everything is in $WORK"
