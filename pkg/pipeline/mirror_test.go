package pipeline_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	mrand "math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/test/testenv"
)

// testCA returns a throwaway self-signed CA certificate (PEM) for
// spec.manager.apiServerCA.
func testCA(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "fleetgen test CA"},
		NotBefore:             time.Unix(0, 0),
		NotAfter:              time.Unix(0, 0).Add(100 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// aksFleet writes a fleet like examples/aks-acr to a temporary folder: kured in
// spec.images and in a layer's DaemonSet, both written as kured (a local
// registry at src standing in for ghcr.io), mirrored to dst. extraImages are
// added to spec.images. It returns fleet.yaml's path.
func aksFleet(t testing.TB, src, dst string, extraImages ...string) string {
	t.Helper()
	dir := t.TempDir()
	kured := src + "/kubereboot/kured:1.12.0"
	var extra strings.Builder
	for _, img := range extraImages {
		extra.WriteString("    - " + img + "\n")
	}
	files := map[string]string{
		"certs/manager-ca.pem": string(testCA(t)),
		"fleet.yaml": `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata:
  name: aks-baseline
spec:
  manager:
    name: hub
    apiServerURL: https://hub.example.com:443
    apiServerCA: {file: certs/manager-ca.pem}
  registry:
    host: "` + dst + `"
    layout: strip-host
    insecure: true
  source:
    kind: git
    url: https://github.com/contoso/aks-baseline-gitops.git
    ref: main
  images:
    - ` + kured + `
` + extra.String() + `  layers:
    - name: cluster-baseline-settings
      path: ./cluster-manifests/cluster-baseline-settings
  defaults:
    labels: {baseline: "true"}
    registration: capi   # agent clusters would need a fleet-agent image in spec.images
  clusters:
    - name: aks-eastus2
      labels: {region: eastus2}
    - name: aks-centralus
      labels: {region: centralus}
`,
		"cluster-manifests/cluster-baseline-settings/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [namespace.yaml, kured.yaml]
`,
		"cluster-manifests/cluster-baseline-settings/namespace.yaml": `apiVersion: v1
kind: Namespace
metadata: {name: cluster-baseline-settings}
`,
		"cluster-manifests/cluster-baseline-settings/kured.yaml": `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kured, namespace: cluster-baseline-settings}
spec:
  selector:
    matchLabels: {app.kubernetes.io/name: kured}
  template:
    metadata:
      labels: {app.kubernetes.io/name: kured}
    spec:
      containers:
        - name: kured
          image: ` + kured + `
`,
		// The lock already holds the agents' client IDs (a render made them).
		"fleet.lock.yaml": string(func() []byte {
			l := lock.New()
			l.Clients = []lock.Client{{Cluster: "aks-centralus", ClientID: "c1"}, {Cluster: "aks-eastus2", ClientID: "e2"}}
			return l.Marshal()
		}()),
	}
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "fleet.yaml")
}

// pushKured pushes a two-platform kured index to src and returns its digest.
func pushKured(t testing.TB, src string) string {
	t.Helper()
	idx, err := testenv.Index(mrand.New(mrand.NewSource(3)), nil, 2, 4096)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(src + "/kubereboot/kured:1.12.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMirrorAKSACR(t *testing.T) {
	src, dst := testenv.Registry(t), testenv.Registry(t)
	digest := pushKured(t, src)
	file := aksFleet(t, src, dst)
	lockPath := filepath.Join(filepath.Dir(file), lock.FileName)
	ctx := context.Background()
	cfg := pipeline.Config{File: file, LookupEnv: func(string) (string, bool) { return "", false }}

	// images: who needs each; not locked yet, no policy.
	imgs, err := pipeline.Images(ctx, cfg, pipeline.ImagesOptions{Policies: true})
	if err != nil {
		t.Fatal(err)
	}
	kured := src + "/kubereboot/kured:1.12.0"
	wantImgs := []pipeline.Image{{Ref: kured, NeededBy: []string{"layer cluster-baseline-settings (cluster-manifests/cluster-baseline-settings)", "spec.images[0]"}}}
	if d := cmp.Diff(wantImgs, imgs); d != "" {
		t.Errorf("images (-want +got):\n%s", d)
	}

	// --dry-run returns the plan and writes nothing.
	before := readFile(t, lockPath)
	res, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	target := dst + "/kubereboot/kured:1.12.0"
	if d := cmp.Diff([]mirror.Pair{{Source: kured, Target: target}}, res.Plan); d != "" {
		t.Errorf("mirror --dry-run (-want +got):\n%s", d)
	}
	if readFile(t, lockPath) != before {
		t.Error("mirror --dry-run changed the lock")
	}

	// mirror copies, then records the digest and keeps the client IDs.
	var (
		logs    bytes.Buffer
		updates []pipeline.MirrorUpdate
		mu      sync.Mutex
	)
	// Debug: with a display (OnProgress) the summary is logged at Debug.
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o := pipeline.MirrorOptions{OnProgress: func(u pipeline.MirrorUpdate) { mu.Lock(); updates = append(updates, u); mu.Unlock() }}
	if res, err = pipeline.Mirror(ctx, cfg, o); err != nil {
		t.Fatal(err)
	}
	if res.Stats.Copied != 1 || len(res.Plan) != 1 {
		t.Errorf("mirror result: %+v", res)
	}
	l, err := lock.Load(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	want := []lock.Image{{Source: kured, Target: target, Digest: digest}}
	if d := cmp.Diff(want, l.Images); d != "" {
		t.Errorf("lock images (-want +got):\n%s", d)
	}
	if id, _ := l.ClientID("aks-eastus2"); id != "e2" {
		t.Errorf("client ID of aks-eastus2 = %q, want e2 (kept)", id)
	}
	if !strings.Contains(logs.String(), "1 copied, 0 already present") {
		t.Errorf("no summary line in the logs:\n%s", logs.String())
	}
	if n := len(updates); n < 3 || !updates[0].Start || updates[0].Total != 1 || !updates[n-1].Finish || updates[n-1].Stats.Copied != 1 ||
		!updates[n-2].Event.Done || updates[n-2].Event.Pair.Source != kured {
		t.Errorf("progress updates: %+v", updates)
	}
	got, err := remote.Head(mustRef(t, target))
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest.String() != digest {
		t.Errorf("mirror has %s, want %s", got.Digest, digest)
	}

	// A second mirror copies nothing and leaves the lock byte for byte.
	locked := readFile(t, lockPath)
	logs.Reset()
	if _, err := pipeline.Mirror(ctx, cfg, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "0 copied, 1 already present") {
		t.Errorf("second run summary:\n%s", logs.String())
	}
	if readFile(t, lockPath) != locked {
		t.Error("second mirror changed the lock")
	}
}

func TestMirrorFailingTargetKeepsLock(t *testing.T) {
	src, dst := testenv.Registry(t), testenv.Registry(t)
	pushKured(t, src)
	proxy := testenv.StartProxy(t, dst, testenv.ProxyOptions{})
	proxy.SetDown(true)
	file := aksFleet(t, src, proxy.Host)
	lockPath := filepath.Join(filepath.Dir(file), lock.FileName)
	before := readFile(t, lockPath)
	_, err := pipeline.Mirror(context.Background(), pipeline.Config{File: file}, pipeline.MirrorOptions{})
	if err == nil {
		t.Fatal("mirror to a failing registry succeeded")
	}
	if problem.IsInvalid(err) {
		t.Errorf("a failing registry is an input error (exit 2), want a runtime error (exit 1): %v", err)
	}
	if readFile(t, lockPath) != before {
		t.Error("a failed mirror changed the lock")
	}
}

func TestMirrorCollisionRefused(t *testing.T) {
	src, dst := testenv.Registry(t), testenv.Registry(t)
	pushKured(t, src)
	// ghcr.io/kubereboot/kured would land where the local kured does.
	file := aksFleet(t, src, dst, "ghcr.io/kubereboot/kured:1.12.0")
	lockPath := filepath.Join(filepath.Dir(file), lock.FileName)
	before := readFile(t, lockPath)
	_, err := pipeline.Mirror(context.Background(), pipeline.Config{File: file}, pipeline.MirrorOptions{})
	if err == nil {
		t.Fatal("mirror with colliding sources succeeded")
	}
	if !problem.IsInvalid(err) {
		t.Errorf("a collision is not an input error: %v", err)
	}
	for _, s := range []string{src + "/kubereboot/kured", "ghcr.io/kubereboot/kured", dst + "/kubereboot/kured"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	if readFile(t, lockPath) != before {
		t.Error("a refused mirror changed the lock")
	}
	// Nothing was copied.
	if _, err := remote.Head(mustRef(t, dst+"/kubereboot/kured:1.12.0")); err == nil {
		t.Error("a refused mirror copied kured")
	}
}

func mustRef(t testing.TB, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMirrorBrokenLockIsInputError(t *testing.T) {
	src, dst := testenv.Registry(t), testenv.Registry(t)
	pushKured(t, src)
	file := aksFleet(t, src, dst)
	lockPath := filepath.Join(filepath.Dir(file), lock.FileName)
	if err := os.WriteFile(lockPath, []byte("apiVersion: fleetgen.dev/v1alpha1\nkind: Lock\nimages: {oops: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := pipeline.Mirror(context.Background(), pipeline.Config{File: file}, pipeline.MirrorOptions{})
	if err == nil || !problem.IsInvalid(err) {
		t.Fatalf("mirror with a broken lock: %v, want an input error", err)
	}
	if !strings.Contains(err.Error(), lockPath) {
		t.Errorf("error %q does not name %s", err, lockPath)
	}
	if _, err := remote.Head(mustRef(t, dst+"/kubereboot/kured:1.12.0")); err == nil {
		t.Error("mirror copied before reading the lock")
	}
}

// TestMirrorSourceMirrors: a fleet naming docker.io images mirrors with
// Docker Hub unreachable, reading through spec.sourceMirrors; the lock and
// the targets name docker.io as before, and the lock is byte for byte what
// mirroring from Docker Hub itself would write.
func TestMirrorSourceMirrors(t *testing.T) {
	t.Parallel()
	hub, dst := testenv.Registry(t), testenv.Registry(t)
	digest := pushKured(t, hub+"/dockerhub")
	file := aksFleet(t, "docker.io", dst)
	data := readFile(t, file)
	data = strings.Replace(data, "  images:\n", "  sourceMirrors:\n    - {host: docker.io, mirror: \""+hub+"/dockerhub\", insecure: true}\n  images:\n", 1)
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := pipeline.Config{File: file}
	if _, err := pipeline.Mirror(context.Background(), cfg, pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(filepath.Dir(file), lock.FileName)
	l, err := lock.Load(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	kured := "docker.io/kubereboot/kured:1.12.0"
	want := []lock.Image{{Source: kured, Target: dst + "/kubereboot/kured:1.12.0", Digest: digest}}
	if d := cmp.Diff(want, l.Images); d != "" {
		t.Errorf("lock images (-want +got):\n%s", d)
	}
}
