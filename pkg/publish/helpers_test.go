package publish

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// fixture is a source root with fleet.yaml, its lock, layer folders, and a
// hand-made render.
type fixture struct {
	f     *schema.Fleet
	l     *lock.Lock
	files []layout.File
	// want is the published tree relative to the target root.
	want map[string]string
}

const fleetYAML = `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata:
  name: contoso
spec:
  registry:
    host: contoso.azurecr.io
  source:
    kind: %KIND%
    url: %URL%
    ref: %REF%
    path: "%PATH%"
  layers:
    - name: infrastructure
      path: ./infrastructure/${env}
    - name: apps
      path: ./apps/prod
      selector: {env: prod}
  clusters:
    - name: prod-1
      labels: {env: prod}
      registration: {mode: capi}
    - name: dev-1
      labels: {env: dev}
      registration: {mode: capi}
`

// sourceFiles are the source root's files besides fleet.yaml. Only the layer
// folders (infrastructure/, apps/) are published.
var sourceFiles = map[string]string{
	"infrastructure/base/namespace.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: infra\n",
	"infrastructure/base/kustomization.yaml": "resources: [namespace.yaml]\n",
	"infrastructure/prod/kustomization.yaml": "resources: [../base]\n",
	"infrastructure/dev/kustomization.yaml":  "resources: [../base]\n",
	"apps/base/kustomization.yaml":           "resources: []\n",
	"apps/prod/kustomization.yaml":           "resources: [../base]\n",
	"kubeconfigs/prod-1.yaml":                "not published\n",
	"README.md":                              "not published\n",
}

// rendered is a hand-made output tree (pkg/generate is another engineer's).
func rendered(variant string) map[string]string {
	h := layout.Header
	return map[string]string{
		"manager/kustomization.yaml":             h + "resources: [fleet]\n",
		"manager/fleet/prod-1/cluster.yaml":      h + "kind: Cluster\n" + variant,
		"clusters/prod-1/kustomization.yaml":     h + "resources: [source.yaml, infrastructure.yaml, apps.yaml]\n",
		"clusters/prod-1/infrastructure.yaml":    h + "path: ./infrastructure/prod\n",
		"clusters/manager/manager.yaml":          h + "path: ./manager\n",
		"agents/edge-1/values.yaml":              h + "clientID: x\n",
		"clusters/dev-1/infrastructure.yaml":     h + "path: ./infrastructure/dev\n",
		"clusters/dev-1/kustomization.yaml":      h + "resources: [infrastructure.yaml]\n",
		"clusters/prod-1/source.yaml":            h + "kind: GitRepository\n",
		"manager/fleet/dev-1/cluster.yaml":       h + "kind: Cluster\n",
		"manager/namespace.yaml":                 h + "kind: Namespace\n",
		"clusters/manager/kustomization.yaml":    h + "resources: [manager.yaml]\n",
		"manager/fleet/groups/production.yaml":   h + "kind: ClusterGroup\n",
		"clusters/prod-1/apps.yaml":              h + "path: ./apps/prod\n",
		"manager/fleet/prod-1/kubeconfig.yaml":   h + "kind: Secret\n",
		"clusters/manager/source.yaml":           h + "kind: GitRepository\n",
		"manager/verrazzano/admin-cluster.yaml":  h + "kind: ConfigMap\n",
		"clusters/dev-1/source.yaml":             h + "kind: GitRepository\n",
		"manager/fleet/dev-1/registration.yaml":  h + "kind: ClusterRegistrationToken\n",
		"manager/fleet/prod-1/registration.yaml": h + "kind: ClusterRegistrationToken\n",
	}
}

// newFixture writes a source root for kind (git or oci) with spec.source.url
// url and path, and a rendered tree (variant changes one file).
func newFixture(t testing.TB, kind, url, srcPath, variant string) *fixture {
	t.Helper()
	root := t.TempDir()
	ref := "main"
	if kind == schema.SourceOCI {
		ref = "v1"
	}
	y := strings.NewReplacer("%KIND%", kind, "%URL%", url, "%REF%", ref, "%PATH%", srcPath).Replace(fleetYAML)
	testenv.WriteTree(t, root, map[string]string{"fleet.yaml": y})
	testenv.WriteTree(t, root, sourceFiles)
	f, err := schema.Load(filepath.Join(root, "fleet.yaml"), schema.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Load(filepath.Join(root, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	r := rendered(variant)
	want := map[string]string{}
	for p, d := range r {
		want[filepath.ToSlash(filepath.Join(srcPath, p))] = d
	}
	for p, d := range sourceFiles {
		if strings.HasPrefix(p, "infrastructure/") || strings.HasPrefix(p, "apps/") {
			want[p] = d
		}
	}
	return &fixture{f: f, l: l, files: genFiles(r), want: want}
}

// genFiles turns a path -> content map into a render, sorted by path.
func genFiles(m map[string]string) []layout.File {
	out := make([]layout.File, 0, len(m))
	for p, d := range m {
		out = append(out, layout.File{Path: p, Data: []byte(d)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// quiet is collect's options with logs discarded.
func quiet(t testing.TB) *options {
	t.Helper()
	o, err := newOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// env is a LookupEnv over a fixed map.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
