package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/workload"
)

// nestedFiles are a layer (the quickstart's apps/prod) that applies a Flux
// Kustomization with its own spec.images and spec.patches, which applies
// another in turn: the chain whose images render pins through patches.
var nestedFiles = map[string]string{
	"apps/prod/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../base, ks.yaml]\n",
	"apps/prod/ks.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: extras, namespace: flux-system}
spec:
  interval: 10m
  prune: true
  path: ./apps/extras
  sourceRef: {kind: GitRepository, name: flux-system}
  images:
    - {name: busybox, newTag: "1.36"}
  patches:
    - target: {kind: Deployment, name: extras}
      patch: |
        - {op: add, path: /metadata/labels, value: {patched: "yes"}}
`,
	"apps/extras/kustomization.yaml": "resources: [deploy.yaml, ks.yaml]\n",
	"apps/extras/deploy.yaml":        deployment("extras", "busybox:1.35", "ghcr.io/kubereboot/kured:1.12.0"),
	"apps/extras/ks.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: deep, namespace: flux-system}
spec:
  interval: 10m
  prune: true
  path: ./apps/deep
  sourceRef: {kind: GitRepository, name: flux-system}
`,
	"apps/deep/deploy.yaml": deployment("deep", "ghcr.io/stefanprodan/podinfo:6.7.1"),
}

func deployment(name string, images ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + ", namespace: podinfo}\nspec:\n  selector: {matchLabels: {app: " + name + "}}\n  template:\n    metadata: {labels: {app: " + name + "}}\n    spec:\n      containers:\n")
	for i, img := range images {
		b.WriteString("        - {name: c" + string(rune('0'+i)) + ", image: " + img + "}\n")
	}
	return b.String()
}

// TestNestedKustomizationsPinned: what Flux builds from the rendered tree
// runs only mirror images by digest, all the way down a chain of followed
// Kustomizations. The rendered layer Kustomization is itself followed by a
// model of a cluster's Flux root (pkg/layers builds each Kustomization as
// kustomize-controller does: its patches and images through Flux's generator
// and krusty), so the child is built with the spec.images and spec.patches
// fleetgen's patches gave it, and the grandchild with those the child's
// patches gave it.
func TestNestedKustomizationsPinned(t *testing.T) {
	t.Parallel()
	fleet := copyTree(t, filepath.Join("..", "..", "examples", "quickstart"))
	pubWrite(t, fleet, nestedFiles)
	cfg := Config{File: filepath.Join(fleet, "fleet.yaml"), AgeKeyFile: filepath.Join(fleet, "age.agekey")}
	out := filepath.Join(t.TempDir(), "out")
	if err := Render(context.Background(), cfg, RenderOptions{OutDir: out}); err != nil {
		t.Fatal(err)
	}
	rendered, err := os.ReadFile(filepath.Join(out, "clusters", "prod-eu-1", "apps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pubWrite(t, fleet, map[string]string{"flux-root/apps.yaml": string(rendered)})
	m, err := layers.New(fleet, []layers.Unit{{Cluster: "prod-eu-1", Layer: "root", Path: "flux-root"}},
		layers.Options{Source: &layers.Source{Kind: "GitRepository", Namespace: "flux-system", Name: "flux-system"}})
	if err != nil {
		t.Fatal(err)
	}
	sets := m.Closure("prod-eu-1", "root")
	var chain []string
	containers := 0
	for _, s := range sets[1:] {
		chain = append(chain, s.Kustomization)
		if s.Objects == nil {
			t.Errorf("%s: does not build: missing %v, %v", s.Kustomization, s.Missing, s.Err)
		}
		for _, o := range s.Objects {
			if o.Kind == "Deployment" && o.Name == "extras" {
				if l, _ := o.Map()["metadata"].(map[string]any)["labels"].(map[string]any); l["patched"] != "yes" {
					t.Errorf("the child's own patch is lost: labels %v", l)
				}
			}
			for _, c := range workload.Containers(o.Map()) {
				containers++
				if !strings.HasPrefix(c.Image, "quickstart.azurecr.io/") || !strings.Contains(c.Image, "@sha256:") {
					t.Errorf("%s: %s %s runs %s, want the mirror by digest", s.Kustomization, o.Describe(), c.Name, c.Image)
				}
			}
		}
	}
	if got, want := strings.Join(chain, " "), "flux-system/apps flux-system/extras flux-system/deep"; got != want {
		t.Errorf("Flux applies %s, want %s", got, want)
	}
	if containers != 5 {
		t.Errorf("%d containers, want 5 (busybox and podinfo in the layer, busybox and kured in extras, podinfo in deep)", containers)
	}
}
