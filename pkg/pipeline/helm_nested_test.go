package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestNestedHelmReleasesPinned: a HelmRelease that a followed Kustomization
// applies (the common Flux layout: a cluster's Kustomization for
// infrastructure, whose folder holds the HelmReleases) is pinned like one
// the layer applies itself. The layer's Kustomization patches the child's
// spec.patches with the HelmRelease's post-renderer, and a `helm template`
// of the chart as mirrored, post-rendered by it, runs only mirror
// references by digest; its source, which the layer applies, is pointed at
// the mirror by the layer's Kustomization.
func TestNestedHelmReleasesPinned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newHelmWorld(t)
	dir := filepath.Dir(w.file)
	testenv.WriteTree(t, dir, map[string]string{
		"apps/kustomization.yaml": "resources: [sources.yaml, releases.yaml, infra.yaml, infra-source.yaml]\n",
		// The source of the nested HelmRelease is the layer's, which no
		// HelmRelease of the layer itself uses: the layer's Kustomization
		// must point it at the mirror all the same.
		"apps/infra-source.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: infra-source, namespace: apps}
spec: {type: oci, url: "oci://` + w.src + `/charts", interval: 10m}
`,
		"apps/infra.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: infra, namespace: flux-system}
spec:
  interval: 10m
  prune: true
  path: ./infra
  sourceRef: {kind: GitRepository, name: flux-system}
`,
		"infra/release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo-infra, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: 6.7.1
      sourceRef: {kind: HelmRepository, name: infra-source}
  values:
    image: {repository: "` + w.src + `/stefanprodan/podinfo", tag: 6.7.1}
`,
	})
	if _, err := pipeline.Mirror(ctx, w.cfg(), pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := lock.Load(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := pipeline.Render(ctx, w.cfg(), pipeline.RenderOptions{OutDir: out}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, "clusters", "edge-1", "apps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Spec struct {
			Patches []patchEntry `json:"patches"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	var outer, source string
	for _, p := range k.Spec.Patches {
		if p.Target["kind"] == "Kustomization" && p.Target["name"] == "infra" {
			outer = p.Patch
		}
		if p.Target["kind"] == "HelmRepository" && p.Target["name"] == "infra-source" {
			source = p.Patch
		}
	}
	if !strings.Contains(source, `"oci://`+w.dst) {
		t.Errorf("apps.yaml does not point HelmRepository infra-source, which the layer applies for a nested HelmRelease, at the mirror: %q", source)
	}
	if outer == "" {
		t.Fatalf("apps.yaml patches no Kustomization infra:\n%s", data)
	}
	var ops []struct {
		Op    string       `json:"op"`
		Path  string       `json:"path"`
		Value []patchEntry `json:"value"`
	}
	if err := yaml.Unmarshal([]byte(outer), &ops); err != nil {
		t.Fatalf("patch of infra: %v\n%s", err, outer)
	}
	var inner string
	for _, op := range ops {
		if op.Path != "/spec/patches" {
			continue
		}
		for _, p := range op.Value {
			if p.Target["kind"] == "HelmRelease" && p.Target["name"] == "podinfo-infra" {
				inner = p.Patch
			}
		}
	}
	if inner == "" {
		t.Fatalf("the patch of Kustomization infra adds no patch for HelmRelease podinfo-infra:\n%s", outer)
	}
	helm := helmBinary(t)
	images := postRendered(t, helm, l, w, "podinfo", "image: {repository: \""+w.src+"/stefanprodan/podinfo\", tag: 6.7.1}\n", inner)
	if len(images) == 0 {
		t.Fatal("helm template rendered no image")
	}
	for _, img := range images {
		if !strings.HasPrefix(img, w.dst+"/") || !strings.Contains(img, "@sha256:") {
			t.Errorf("helm template plus the nested post-renderer runs %s: want a mirror reference by digest only", img)
		}
	}
}

// patchEntry is one entry of a Flux Kustomization's spec.patches.
type patchEntry struct {
	Patch  string            `json:"patch"`
	Target map[string]string `json:"target"`
}
