package examples_test

import (
	"bytes"
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestAKSACRBuildPublish runs the aks-acr example's whole CI job, `fleetgen
// build --publish`, against real parts: one distribution registry on loopback
// stands in for ghcr.io and holds a two-platform kured index, a second one is
// the ACR mirror, and a bare Git repository receives the push. It checks that
// kured is mirrored with its digest intact, that the lock records that digest,
// that every cluster's Flux Kustomization rewrites kured to the mirror by
// digest, and that a second build copies and commits nothing.
func TestAKSACRBuildPublish(t *testing.T) {
	ghcr, acr := testenv.Registry(t), testenv.Registry(t)
	repo := testenv.BareRepo(t, "aks-baseline-gitops.git")

	idx, err := testenv.Index(rand.New(rand.NewSource(7)), nil, 2, 4096)
	if err != nil {
		t.Fatal(err)
	}
	kured := ghcr + "/kubereboot/kured:1.12.0"
	src, err := name.ParseReference(kured, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(src, idx); err != nil {
		t.Fatal(err)
	}
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	// fleet-agent, which the agent values pin, comes from the same stand-in.
	agentIdx, err := testenv.Index(rand.New(rand.NewSource(8)), nil, 1, 1024)
	if err != nil {
		t.Fatal(err)
	}
	agent := ghcr + "/rancher/fleet-agent:v0.16.1"
	agentRef, err := name.ParseReference(agent, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(agentRef, agentIdx); err != nil {
		t.Fatal(err)
	}
	agentDigest, err := agentIdx.Digest()
	if err != nil {
		t.Fatal(err)
	}

	// The example, with the local registries in place of ghcr.io and the ACR.
	dir := copyDir(t, "aks-acr")
	testenv.ReplaceIn(t, filepath.Join(dir, "fleet.yaml"),
		"ghcr.io", ghcr,
		"docker.io", ghcr,
		"host: acraksbaseline.azurecr.io", "host: \""+acr+"\"\n    insecure: true")
	testenv.ReplaceIn(t, filepath.Join(dir, "cluster-manifests/cluster-baseline-settings/kured.yaml"), "ghcr.io", ghcr)
	l, err := lock.Load(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	l.SetImages(nil) // the example's placeholder digests are not in these registries
	if err := lock.Write(filepath.Join(dir, lock.FileName), l); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(t.TempDir(), "out")
	cfg := pipeline.Config{
		File:      filepath.Join(dir, "fleet.yaml"),
		LookupEnv: func(string) (string, bool) { return "", false },
	}
	o := pipeline.BuildOptions{Publish: pipeline.PublishOptions{OutDir: out, PushURL: "file://" + repo}, Push: true}
	ctx := context.Background()
	if err := pipeline.Build(ctx, cfg, o); err != nil {
		t.Fatalf("build --publish: %v", err)
	}

	// The mirror has kured at the source's digest, index and all.
	target := acr + "/kubereboot/kured:1.12.0"
	dst, err := name.ParseReference(target, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(dst)
	if err != nil {
		t.Fatalf("mirror lacks kured: %v", err)
	}
	if desc.Digest != digest {
		t.Errorf("mirror has kured at %s, want %s", desc.Digest, digest)
	}

	// The lock records it.
	l, err = lock.Load(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	want := []lock.Image{
		{Source: kured, Target: target, Digest: digest.String()},
		{Source: agent, Target: acr + "/rancher/fleet-agent:v0.16.1", Digest: agentDigest.String()},
	}
	if d := cmp.Diff(want, l.Images); d != "" {
		t.Errorf("lock images (-want +got):\n%s", d)
	}

	// Every cluster's Kustomization rewrites kured to the mirror by digest.
	wantImages := []kustomize.Image{{Name: ghcr + "/kubereboot/kured", NewName: acr + "/kubereboot/kured", Digest: digest.String()}}
	for _, cluster := range []string{"aks-centralus", "aks-eastus2"} {
		var ks kustomizev1.Kustomization
		b, err := os.ReadFile(filepath.Join(out, "clusters", cluster, "cluster-baseline-settings.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(b, &ks); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(wantImages, ks.Spec.Images); d != "" {
			t.Errorf("%s: spec.images (-want +got):\n%s", cluster, d)
		}
	}

	// The branch holds the rendered tree and the layer folder the
	// Kustomizations point at, exactly as on disk.
	clone := filepath.Join(t.TempDir(), "clone")
	testenv.Git(t, "", "clone", "--quiet", "--branch", "main", repo, clone)
	for _, p := range []string{
		"clusters/aks-eastus2/cluster-baseline-settings.yaml",
		"manager/fleet/aks-eastus2/token.yaml",
		"agents/aks-eastus2/values.yaml",
	} {
		assertSameFile(t, filepath.Join(out, p), filepath.Join(clone, p))
	}
	assertSameFile(t, filepath.Join(dir, "cluster-manifests/cluster-baseline-settings/kured.yaml"),
		filepath.Join(clone, "cluster-manifests/cluster-baseline-settings/kured.yaml"))
	head := testenv.Git(t, repo, "rev-parse", "main")

	// A second build copies nothing, changes no lock byte and makes no commit.
	locked, err := os.ReadFile(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := pipeline.Build(ctx, cfg, o); err != nil {
		t.Fatalf("second build --publish: %v", err)
	}
	again, err := os.ReadFile(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(locked, again) {
		t.Error("second build changed fleet.lock.yaml")
	}
	if got := testenv.Git(t, repo, "rev-parse", "main"); got != head {
		t.Errorf("second build committed %s on top of %s", got, head)
	}
}

func assertSameFile(t testing.TB, want, got string) {
	t.Helper()
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	g, err := os.ReadFile(got)
	if err != nil {
		t.Fatalf("published tree lacks %s", filepath.Base(got))
	}
	if d := cmp.Diff(string(w), string(g)); d != "" {
		t.Errorf("%s differs from what was rendered (-want +got):\n%s", got, d)
	}
}
