package review

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/layout"
)

// TestReadLayer: the one reader of a layer file, for diff and for what DIR's
// clusters received (pkg/pipeline), takes only what fleetgen writes there.
func TestReadLayer(t *testing.T) {
	t.Parallel()
	const doc = layout.Header + `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  dependsOn:
    - name: infra
  images:
    - digest: sha256:0123
      name: nginx
      newName: acr.example.io/library/nginx
  path: ./apps/prod
  postBuild:
    substitute:
      cluster: prod
`
	p := layout.Parse(layout.Layer.Path("prod", "apps"))
	got, ok := ReadLayer(p, []byte(doc))
	want := Kustomization{Path: "./apps/prod", DependsOn: []string{"infra"}, Substitute: map[string]string{"cluster": "prod"},
		Images: []Image{{Name: "nginx", NewName: "acr.example.io/library/nginx", Digest: "sha256:0123"}}}
	if !ok {
		t.Fatal("ReadLayer: not a layer")
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ReadLayer (-want +got):\n%s", d)
	}
	for name, c := range map[string]struct {
		path, doc string
	}{
		"named unlike its file":    {layout.Layer.Path("prod", "web"), doc},
		"not a layer path":         {layout.ManagerEntry.Path("prod"), doc},
		"kustomize's, not Flux's":  {layout.Layer.Path("prod", "apps"), strings.Replace(doc, "kustomize.toolkit.fluxcd.io/v1", "kustomize.config.k8s.io/v1beta1", 1)},
		"another kind":             {layout.Layer.Path("prod", "apps"), strings.Replace(doc, "kind: Kustomization", "kind: HelmRelease", 1)},
		"not YAML of these fields": {layout.Layer.Path("prod", "apps"), doc + "  path: [x]\n"},
	} {
		if _, ok := ReadLayer(layout.Parse(c.path), []byte(c.doc)); ok {
			t.Errorf("%s: ReadLayer read %s", name, c.path)
		}
	}
}
