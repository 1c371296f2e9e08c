package generate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

func nestedFleet(t *testing.T) *schema.Fleet {
	t.Helper()
	f, err := schema.Parse("fleet.yaml", []byte(`apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: demo}
spec:
  registry: {host: registry.example}
  source: {kind: git, url: "https://git.example/fleet.git"}
  layers:
    - name: apps
      path: ./apps
  clusters:
    - name: c1
      registration: {mode: capi}
    - name: c2
      registration: {mode: capi}
`))
	if err != nil {
		t.Fatal(err)
	}
	schema.Default(f)
	if err := schema.Validate(f); err != nil {
		t.Fatal(err)
	}
	return f
}

func nestedLock() *lock.Lock {
	l := lock.New()
	l.SetImages([]lock.Image{
		{Source: "docker.io/library/nginx:1.27", Target: "registry.example/library/nginx:1.27", Digest: "sha256:" + strings.Repeat("1", 64)},
		{Source: "ghcr.io/a/b:2", Target: "registry.example/a/b:2", Digest: "sha256:" + strings.Repeat("2", 64)},
		{Source: "ghcr.io/a/b:3", Target: "registry.example/a/b:3", Digest: "sha256:" + strings.Repeat("3", 64)},
		{Source: "quay.io/c/d:4", Target: "registry.example/c/d:4", Digest: "sha256:" + strings.Repeat("4", 64)},
	})
	return l
}

// TestNestedPatches: a layer's Kustomization patches each Kustomization its
// build applies with that child's images (appended when the child has
// spec.images, the list otherwise), and through the child's spec.patches the
// grandchild's, nested; sorted by target; one list of patches for the
// clusters that share one tree (SPEC §3). The whole Kustomization is
// compared with testdata/nested/apps.yaml (-update rewrites it).
func TestNestedPatches(t *testing.T) {
	t.Parallel()
	tree := []generate.Nested{
		{Namespace: "apps", Name: "a-child", Images: true, Refs: []string{"nginx:1.27", "registry.example/x/y@sha256:" + strings.Repeat("9", 64)}},
		{Namespace: "apps", Name: "b-child", Patches: true, Refs: []string{"ghcr.io/a/b:2"}, Nested: []generate.Nested{
			{Namespace: "apps", Name: "grandchild", Refs: []string{"quay.io/c/d:4"}, Nested: []generate.Nested{
				{Name: "no-namespace", Refs: []string{"nginx:1.27"}},
			}},
			{Namespace: "apps", Name: "only-public-charts", Refs: []string{"oci://ghcr.io/charts/x:1"}},
		}},
	}
	var asked []string
	files, err := generate.Render(nestedFleet(t), nestedLock(), generate.Options{Nested: func(cluster, layer string) []generate.Nested {
		asked = append(asked, cluster+"/"+layer)
		return tree
	}, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"c1/apps", "c2/apps"}, asked); d != "" {
		t.Errorf("Nested asked for (-want +got):\n%s", d)
	}
	got := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f.Path, "/apps.yaml") {
			got[f.Path] = string(f.Data)
		}
	}
	c1, c2 := got["clusters/c1/apps.yaml"], got["clusters/c2/apps.yaml"]
	if c1 == "" || strings.ReplaceAll(c2, "c2", "c1") != c1 {
		t.Fatalf("c1 and c2 differ beyond their names:\n%s\n%s", c1, c2)
	}
	golden := filepath.Join("testdata", "nested", "apps.yaml")
	if *update {
		if err := os.WriteFile(golden, []byte(c1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), c1); d != "" {
		t.Errorf("clusters/c1/apps.yaml (-want +got):\n%s", d)
	}
}

// TestNestedImageProblems: an image of a nested Kustomization the lock lacks,
// or one name with two locked images, fails Render at the layer, naming the
// chain, never the image.
func TestNestedImageProblems(t *testing.T) {
	t.Parallel()
	tree := []generate.Nested{{Namespace: "apps", Name: "child", Nested: []generate.Nested{
		{Namespace: "apps", Name: "deep", Refs: []string{"ghcr.io/a/b:2", "ghcr.io/a/b:3", "planted.example/evil:1"}},
	}}}
	_, err := generate.Render(nestedFleet(t), nestedLock(), generate.Options{Nested: func(string, string) []generate.Nested { return tree }})
	if err == nil {
		t.Fatal("Render passed")
	}
	for _, want := range []string{
		"spec.layers[0]: layer apps: Kustomization apps/child → Kustomization apps/deep uses an image fleet.lock.yaml lacks",
		"spec.layers[0]: layer apps: Kustomization apps/child → Kustomization apps/deep uses one image name with different tags or digests",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "planted") || strings.Contains(err.Error(), "ghcr") {
		t.Errorf("error %q quotes an image", err)
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 2 {
		t.Errorf("%d errors, want 2 (one per problem, not per cluster):\n%v", n, err)
	}
}
