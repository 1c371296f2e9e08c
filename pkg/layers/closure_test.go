package layers_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// kust is a Flux Kustomization named name in flux-system reading the
// bootstrap source, for folder path, with spec fields extra (YAML, indented
// for spec).
func kust(name, path, extra string) string {
	return fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: flux-system}
spec:
  interval: 10m
  prune: true
  path: %s
  sourceRef: {kind: GitRepository, name: flux-system}
%s`, name, path, extra)
}

// Issue 39, item 1: a layer whose own build holds no Secret, but a Flux
// Kustomization in it (or in one it leads to) makes one, with its own spec
// or post-build substitution. Each must be refused naming the layer, the
// chain of Kustomizations, the file, the object and the clusters, never the
// value.
var throughKustomization = map[string]struct {
	files map[string]string
	vars  map[string]string // the layer's substitute
	obj   string            // the offending object as named
	via   string            // in the message: the Kustomization followed
}{
	"postBuild.substitute kind": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [ks.yaml]\n",
		"apps/ks.yaml":            kust("sub", "./apps/sub", "  postBuild:\n    substitute: {k: Secret}\n"),
		"apps/sub/cm.yaml":        strings.Replace(configMap, "kind: ConfigMap", "kind: ${k}", 1),
	}, obj: "Secret app/db", via: "Kustomization flux-system/sub (apps/ks.yaml)"},
	"spec.patches into a Secret": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [ks.yaml]\n",
		"apps/ks.yaml": kust("sub", "./apps/sub", `  patches:
  - target: {kind: ConfigMap, name: db}
    patch: |-
      - {op: replace, path: /kind, value: Secret}
`),
		"apps/sub/cm.yaml": configMap,
	}, obj: "Secret app/db", via: "Kustomization flux-system/sub"},
	"nested twice with kind from the parent variable": {files: map[string]string{
		"apps/kustomization.yaml":     "resources: [ks.yaml]\n",
		"apps/ks.yaml":                kust("one", "./apps/one", "  postBuild:\n    substitute: {kind: '${kind}'}\n"),
		"apps/one/kustomization.yaml": "resources: [ks.yaml, marker.yaml]\n",
		"apps/one/ks.yaml":            kust("two", "./apps/two", "  postBuild:\n    substitute: {k: '${kind}'}\n"),
		"apps/two/cm.yaml":            strings.Replace(configMap, "kind: ConfigMap", "kind: ${k}", 1),
		"apps/two/other.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: app}\n",
		"apps/one/marker.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: marker, namespace: app}\n",
	}, vars: map[string]string{"kind": "Secret"}, obj: "Secret app/db", via: "Kustomization flux-system/one (apps/ks.yaml) → Kustomization flux-system/two (apps/one/ks.yaml)"},
	"spec.components add a Secret": {files: map[string]string{
		"apps/kustomization.yaml":        "resources: [ks.yaml]\n",
		"apps/ks.yaml":                   kust("sub", "./apps/sub", "  components: [../comp]\n"),
		"apps/sub/kustomization.yaml":    "resources: [cm.yaml]\n",
		"apps/sub/cm.yaml":               configMap,
		"apps/comp/kustomization.yaml":   componentK + "patches:\n- target: {kind: ConfigMap}\n  patch: '[{\"op\": \"replace\", \"path\": \"/kind\", \"value\": \"Secret\"}]'\n",
		"apps/comp/unused-by-layer.yaml": "",
	}, obj: "Secret app/db", via: "Kustomization flux-system/sub"},
	"namePrefix and targetNamespace name it": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [ks.yaml]\n",
		"apps/ks.yaml":            kust("sub", "./apps/sub", "  namePrefix: p-\n  targetNamespace: other\n  postBuild:\n    substitute: {k: Secret}\n"),
		"apps/sub/cm.yaml":        strings.Replace(configMap, "kind: ConfigMap", "kind: ${k}", 1),
	}, obj: "Secret other/p-db", via: "Kustomization flux-system/sub"},
	"commonMetadata copies it into an annotation": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [ks.yaml]\n",
		"apps/ks.yaml": kust("sub", "./apps/sub", `  commonMetadata:
    annotations:
      kubectl.kubernetes.io/last-applied-configuration: '{"kind": "Secret"}'
`),
		"apps/sub/s.yaml": `apiVersion: v1
kind: Secret
metadata: {name: sealed, namespace: app}
stringData: {token: 'ENC[AES256_GCM,data:AAAA,iv:BBBB,tag:CCCC,type:str]'}
sops: {mac: 'ENC[AES256_GCM,data:DDDD,iv:EEEE,tag:FFFF,type:str]'}
`,
	}, obj: "Secret app/sealed", via: "Kustomization flux-system/sub"},
	"substituteFrom a ConfigMap of the layer build": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [ks.yaml, vars.yaml]\n",
		"apps/ks.yaml":            kust("sub", "./apps/sub", "  postBuild:\n    substituteFrom: [{kind: ConfigMap, name: vars}]\n"),
		"apps/sub/cm.yaml":        strings.Replace(configMap, "kind: ConfigMap", "kind: ${k}", 1),
		"apps/vars.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars, namespace: flux-system}\ndata: {k: Secret}\n",
	}, obj: "Secret app/db", via: "Kustomization flux-system/sub"},
	"a GitRepository of the fleet repository spelled otherwise": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [ks.yaml, src.yaml]\n",
		"apps/ks.yaml":            strings.Replace(kust("sub", "./apps/sub", "  postBuild:\n    substitute: {k: Secret}\n"), "name: flux-system}", "name: mine}", 1),
		"apps/src.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: mine, namespace: flux-system}
spec: {url: 'https://Git.Contoso.example:443//platform/Fleet.git/', ref: {branch: main}, interval: 1m}
`,
		"apps/sub/cm.yaml": strings.Replace(configMap, "kind: ConfigMap", "kind: ${k}", 1),
	}, obj: "Secret app/db", via: "Kustomization flux-system/sub"},
	"v1beta2 Kustomization with dot segments in its path": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [ks.yaml]\n",
		"apps/ks.yaml":            strings.Replace(kust("sub", "./apps/x/../../../apps/sub", "  postBuild:\n    substitute: {k: Secret}\n"), "/v1\n", "/v1beta2\n", 1),
		"apps/sub/cm.yaml":        strings.Replace(configMap, "kind: ConfigMap", "kind: ${k}", 1),
	}, obj: "Secret app/db", via: "Kustomization flux-system/sub"},
	"Fleet Bundle embeds a plaintext Secret": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [ks.yaml]\n",
		"apps/ks.yaml":            kust("sub", "./apps/sub", ""),
		"apps/sub/bundle.yaml": `apiVersion: fleet.cattle.io/v1alpha1
kind: Bundle
metadata: {name: b, namespace: fleet-default}
spec:
  resources:
  - name: s.yaml
    content: |
      apiVersion: v1
      kind: Secret
      metadata: {name: db, namespace: app}
      stringData: {password: ` + secretValue + `}
`,
	}, obj: "Bundle fleet-default/b", via: "Kustomization flux-system/sub"},
}

func TestPlaintextThroughKustomization(t *testing.T) {
	t.Parallel()
	for name, tc := range throughKustomization {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := writeTree(t, tc.files)
			f := fleet(dir, []schema.Layer{{Name: "apps", Path: "./apps", Selector: map[string]string{"env": "prod"}, Substitute: tc.vars}})
			f.Spec.Source.URL = "ssh://git@git.contoso.example/platform/fleet.git"
			f.Spec.Source.Ref = "main"
			m, err := layers.Load(f, layers.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			if ws := m.Warnings(f); len(ws) != 0 {
				t.Errorf("warnings: %v", ws)
			}
			errs := m.Check(f)
			if len(errs) != 1 {
				t.Fatalf("Check found %d problems, want 1:\n%v", len(errs), errs)
			}
			msg := errs[0].Error()
			for _, want := range []string{"spec.layers[0]", "layer apps", tc.obj, tc.via, "clusters prod-eu-1, prod-us-1"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q:\n%s", want, msg)
				}
			}
			if strings.Contains(msg, secretValue) || strings.Contains(msg, "dev-1") {
				t.Errorf("message quotes the value or names a cluster that does not receive it:\n%s", msg)
			}
		})
	}
}

// TestClosureObjects: a followed Kustomization's objects are what
// kustomize-controller applies: its own images, prefix, suffix, namespace
// and common labels, its variables (the parent's substituted into its spec),
// the layer's own set first.
func TestClosureObjects(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"apps/kustomization.yaml": "resources: [ks.yaml]\n",
		"apps/ks.yaml": kust("'sub-${env}'", "./apps/${env}", `  namePrefix: p-
  nameSuffix: -s
  targetNamespace: ns-${env}
  images: [{name: nginx, newName: mirror.example/nginx, newTag: "2"}]
  commonMetadata: {labels: {team: web}}
  postBuild:
    substitute: {tier: '${env}-tier'}
`),
		"apps/prod/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {tier: '${tier}'}}
spec:
  template:
    spec:
      containers: [{name: c, image: nginx:1}]
`,
		"apps/dev/deploy.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dev}\n",
	})
	f := fleet(dir, []schema.Layer{{Name: "apps", Path: "./apps"}})
	m, err := layers.Load(f, layers.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if errs := m.Check(f); len(errs) != 0 {
		t.Fatal(errs)
	}
	sets := m.Closure("prod-eu-1", "apps")
	if len(sets) != 2 || sets[0] != m.Received("prod-eu-1", "apps") || sets[1].Kustomization != "flux-system/sub-prod" || sets[1].Path != "apps/prod" {
		t.Fatalf("closure: %d sets %+v", len(sets), sets)
	}
	if m.Closure("prod-us-1", "apps")[1] != sets[1] {
		t.Error("clusters with the same variables do not share the followed set")
	}
	o := sets[1].Objects[0]
	got := map[string]any{"name": o.Name, "namespace": o.Namespace, "metadata": o.Map()["metadata"],
		"image": o.Map()["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]}
	want := map[string]any{"name": "p-web-s", "namespace": "ns-prod", "image": "mirror.example/nginx:2",
		"metadata": map[string]any{"name": "p-web-s", "namespace": "ns-prod", "labels": map[string]any{"tier": "prod-tier", "team": "web"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("followed object (-want +got):\n%s", d)
	}
	if dev := m.Closure("dev-1", "apps"); len(dev) != 2 || dev[1].Objects[0].Name != "p-dev-s" {
		t.Errorf("dev's closure: %+v", dev)
	}
}

// TestClosureNotFollowed: what the model cannot follow is a warning naming
// the Kustomization and the clusters, never silence; what it follows into a
// problem is an error (a path that does not exist, chains past the depth).
func TestClosureNotFollowed(t *testing.T) {
	t.Parallel()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
	for name, tc := range map[string]struct {
		files        map[string]string
		warn, err    string
		sourceBranch string
	}{
		"another source": {files: map[string]string{
			"apps/ks.yaml": strings.Replace(kust("podinfo", "./kustomize", ""), "name: flux-system}", "name: podinfo}", 1),
		}, warn: "Kustomization flux-system/podinfo reads GitRepository flux-system/podinfo, which is neither the source fleetgen publishes"},
		"a source of another kind": {files: map[string]string{
			"apps/ks.yaml": strings.Replace(kust("b", "./x", ""), "kind: GitRepository", "kind: Bucket", 1),
		}, warn: "reads Bucket flux-system/flux-system, which is not the source fleetgen publishes"},
		"the fleet repository at another branch": {files: map[string]string{
			"apps/kustomization.yaml": "resources: [ks.yaml, src.yaml]\n",
			"apps/ks.yaml":            strings.Replace(kust("sub", "./apps/sub", ""), "name: flux-system}", "name: mine}", 1),
			"apps/src.yaml":           "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: mine, namespace: flux-system}\nspec: {url: 'https://git.contoso.example/platform/fleet', ref: {branch: dev}}\n",
			"apps/sub/a.yaml":         cm,
		}, warn: "does not read the fleet's own repository (spec.source.url) at spec.source.ref"},
		"substituteFrom made in the cluster": {files: map[string]string{
			"apps/kustomization.yaml": "resources: [ks.yaml]\n",
			"apps/ks.yaml":            kust("sub", "./apps/sub", "  postBuild:\n    substituteFrom: [{kind: ConfigMap, name: cluster-vars}]\n"),
			"apps/sub/a.yaml":         cm,
		}, warn: "takes its variables from ConfigMap flux-system/cluster-vars, which is not in what the cluster receives"},
		"substituteFrom a SOPS-encrypted Secret": {files: map[string]string{
			"apps/kustomization.yaml": "resources: [ks.yaml, v.yaml]\n",
			"apps/ks.yaml":            kust("sub", "./apps/sub", "  postBuild:\n    substituteFrom: [{kind: Secret, name: v, optional: true}]\n"),
			"apps/sub/a.yaml":         cm,
			"apps/v.yaml":             "apiVersion: v1\nkind: Secret\nmetadata: {name: v, namespace: flux-system}\nstringData: {k: 'ENC[AES256_GCM,data:AAAA,iv:BBBB,tag:CCCC,type:str]'}\nsops: {mac: 'ENC[AES256_GCM,data:DDDD,iv:EEEE,tag:FFFF,type:str]'}\n",
		}, warn: "takes its variables from Secret flux-system/v, which is SOPS-encrypted"},
		"a HelmRelease without a renderer": {files: map[string]string{
			"apps/hr.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: apps}\nspec: {chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: r}}}}\n",
		}, warn: "HelmRelease apps/web: its chart is not rendered"},
		"path that does not exist": {files: map[string]string{
			"apps/kustomization.yaml": "resources: [ks.yaml]\n",
			"apps/ks.yaml":            kust("sub", "./apps/missing", ""),
		}, err: "Flux Kustomization flux-system/sub: folder apps/missing does not exist in the fleet's source"},
		"path in the rendered tree": {files: map[string]string{
			"apps/kustomization.yaml":  "resources: [ks.yaml]\n",
			"apps/ks.yaml":             kust("sub", "./clusters/manager", ""),
			"clusters/manager/x.yaml":  cm,
			"clusters/manager/y.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\n",
			"clusters/manager/z.yamlx": "",
		}, err: "reads clusters/manager/x.yaml and 1 more files, which are in fleetgen's rendered tree (manager/, clusters/, agents/)"},
		"a layer kustomization takes in the rendered tree": {files: map[string]string{
			"apps/kustomization.yaml":   "resources: [../agents/a.yaml]\n",
			"agents/a.yaml":             cm,
			"apps/unused-by-build.yaml": "",
		}, err: "the build of folder apps reads agents/a.yaml, which is in fleetgen's rendered tree"},
		"a substitution that fails": {files: map[string]string{
			"apps/kustomization.yaml": "resources: [ks.yaml]\n",
			"apps/ks.yaml":            kust("sub", "./apps/sub", "  postBuild:\n    substitute: {a: b}\n"),
			"apps/sub/a.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {v: '${undefined}'}\n",
		}, err: "through Kustomization flux-system/sub (apps/ks.yaml): ${undefined} in apps/sub/a.yaml (ConfigMap x) is not defined"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := writeTree(t, tc.files)
			f := fleet(dir, []schema.Layer{{Name: "apps", Path: "./apps", Selector: map[string]string{"env": "prod"}}})
			f.Spec.Source.URL, f.Spec.Source.Ref = "https://git.contoso.example/platform/fleet.git", "main"
			m, err := layers.Load(f, layers.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			ws, errs := m.Warnings(f), m.Check(f)
			check := func(kind string, got []error, want string) {
				t.Helper()
				if want == "" {
					if len(got) != 0 {
						t.Errorf("%s: %v", kind, got)
					}
					return
				}
				if len(got) != 1 || !strings.Contains(got[0].Error(), want) || !strings.Contains(got[0].Error(), "clusters prod-eu-1, prod-us-1") ||
					!strings.HasPrefix(got[0].Error(), "spec.layers[0]: layer apps: ") {
					t.Errorf("%s = %v, want one at spec.layers[0] with %q and the clusters", kind, got, want)
				}
			}
			check("warnings", asErrors(ws), tc.warn)
			check("errors", asErrors(errs), tc.err)
		})
	}
}

func asErrors[E error](l []E) []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// TestClosureDepth: Kustomizations nest to layers.MaxDepth below the layer;
// one more is an error naming the chain. A Kustomization that applies itself
// (as flux-system applies its own sync) is followed once.
func TestClosureDepth(t *testing.T) {
	t.Parallel()
	chain := func(n int) map[string]string {
		files := map[string]string{}
		for i := 0; i < n; i++ {
			files[fmt.Sprintf("k/%d/ks.yaml", i)] = kust(fmt.Sprintf("k%d", i+1), fmt.Sprintf("./k/%d", i+1), "")
		}
		files[fmt.Sprintf("k/%d/cm.yaml", n)] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: end}\n"
		return files
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{layers.MaxDepth, ""},
		{layers.MaxDepth + 1, "Flux Kustomizations nest deeper than 8 below the layer (Kustomization flux-system/k1 (k/0/ks.yaml) → Kustomization flux-system/k2 (k/1/ks.yaml) →"},
	} {
		dir := writeTree(t, chain(tc.n))
		f := fleet(dir, []schema.Layer{{Name: "k", Path: "./k/0"}})
		m, err := layers.Load(f, layers.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		errs := m.Check(f)
		switch {
		case tc.want == "" && len(errs) != 0:
			t.Errorf("depth %d: %v", tc.n, errs)
		case tc.want == "" && len(m.Closure("dev-1", "k")) != tc.n+1:
			t.Errorf("depth %d: closure of %d sets", tc.n, len(m.Closure("dev-1", "k")))
		case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
			t.Errorf("depth %d: %v, want %q", tc.n, errs, tc.want)
		}
	}

	dir := writeTree(t, map[string]string{"self/ks.yaml": kust("self", "./self", "  postBuild:\n    substitute: {a: b}\n")})
	f := fleet(dir, []schema.Layer{{Name: "self", Path: "./self"}})
	m, err := layers.Load(f, layers.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if errs := m.Check(f); len(errs) != 0 || len(m.Closure("dev-1", "self")) != 2 {
		t.Errorf("a self-applying Kustomization: %v, closure %d", errs, len(m.Closure("dev-1", "self")))
	}
}

// TestChartRenderer: the hook h-helm plugs into: the model calls it for each
// HelmRelease a cluster receives, with what else the cluster receives, and
// what it returns is received (and guarded) like any object.
func TestChartRenderer(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"apps/hr.yaml":     "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: apps}\nspec: {valuesFrom: [{kind: ConfigMap, name: v}]}\n",
		"apps/values.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: v, namespace: apps}\ndata: {values.yaml: 'x: 1'}\n",
	})
	f := fleet(dir, []schema.Layer{{Name: "apps", Path: "./apps"}})
	calls := 0
	var secret []*layers.Object
	opts := layers.DefaultOptions()
	opts.Charts = func(cluster string, rel *layers.Object, received []*layers.Object) ([]*layers.Object, error) {
		calls++
		if rel.Name != "web" || len(received) != 1 || received[0].Name != "v" {
			return nil, fmt.Errorf("unexpected call for %s with %d objects", rel.Name, len(received))
		}
		if secret == nil {
			o, err := layers.NewObject(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "made", "namespace": "apps"},
				"stringData": map[string]any{"p": secretValue}}, "web/templates/secret.yaml")
			if err != nil {
				return nil, err
			}
			secret = []*layers.Object{o}
		}
		return secret, nil
	}
	m, err := layers.Load(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	errs := m.Check(f)
	if calls != 3 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "web/templates/secret.yaml: Secret apps/made holds unencrypted data in what clusters dev-1, prod-eu-1, prod-us-1 receive") {
		t.Errorf("%d calls, Check = %v", calls, errs)
	}
	if c := m.Closure("dev-1", "apps"); len(c) != 2 || c[1].Release != "apps/web" || c[1] != m.Closure("prod-eu-1", "apps")[1] {
		t.Errorf("the chart's set is not in the closure, or not shared: %+v", c)
	}
}
