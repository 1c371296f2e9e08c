package layers_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/schema"
)

const secretValue = "hunter2-not-for-logs"

// configMap is the only file of every attack below: no file holds a Secret.
const configMap = `apiVersion: v1
kind: ConfigMap
metadata: {name: db, namespace: app}
data: {password: ` + secretValue + `}
`

// Issue 26, family 1: a layer whose files hold no Secret but whose build, or
// Flux's post-build substitution of it, makes one. Each must be refused by
// what the clusters receive, naming the layer, the file, the object and the
// clusters, never the value.
var throughBuild = map[string]struct {
	files map[string]string
	vars  map[string]string // the layer's substitute
	obj   string            // the offending object as named
}{
	"json6902 patch inline": {files: map[string]string{
		"apps/kustomization.yaml": `resources: [cm.yaml]
patches:
- target: {kind: ConfigMap, name: db}
  patch: |-
    - {op: replace, path: /kind, value: Secret}
    - {op: move, from: /data, path: /stringData}
`,
	}, obj: "Secret app/db"},
	"json6902 patch from a file": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [cm.yaml]\npatches:\n- target: {kind: ConfigMap, name: db}\n  path: p.yaml\n",
		"apps/p.yaml":             "- {op: replace, path: /kind, value: Secret}\n- {op: move, from: /data, path: /stringData}\n",
	}, obj: "Secret app/db"},
	"legacy patchesJson6902": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [cm.yaml]\npatchesJson6902:\n- target: {version: v1, kind: ConfigMap, name: db}\n  path: p.yaml\n",
		"apps/p.yaml":             "- {op: replace, path: /kind, value: Secret}\n",
	}, obj: "Secret app/db"},
	"strategic merge patch adds stringData": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [cm.yaml, s.yaml]\npatches:\n- path: p.yaml\n",
		"apps/s.yaml":             "apiVersion: v1\nkind: Secret\nmetadata: {name: empty, namespace: app}\n",
		"apps/p.yaml":             "apiVersion: v1\nkind: Secret\nmetadata: {name: empty, namespace: app}\nstringData: {token: " + secretValue + "}\n",
	}, obj: "Secret app/empty"},
	"replacement writes kind": {files: map[string]string{
		"apps/kustomization.yaml": `resources: [cm.yaml, src.yaml]
replacements:
- source: {kind: ConfigMap, name: src, fieldPath: data.kind}
  targets:
  - select: {kind: ConfigMap, name: db}
    fieldPaths: [kind]
`,
		"apps/src.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: src, namespace: app}\ndata: {kind: Secret}\n",
	}, obj: "Secret app/db"},
	"generator patched into a Secret": {files: map[string]string{
		"apps/kustomization.yaml": `configMapGenerator:
- name: gen
  namespace: app
  literals: [password=` + secretValue + `]
  options: {disableNameSuffixHash: true}
patches:
- target: {kind: ConfigMap, name: gen}
  patch: '[{"op": "replace", "path": "/kind", "value": "Secret"}]'
`,
	}, obj: "Secret app/gen"},
	"kind from a variable": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [cm.yaml]\n",
		"apps/cm.yaml":            strings.Replace(configMap, "kind: ConfigMap", "kind: ${k}", 1),
	}, vars: map[string]string{"k": "Secret"}, obj: "Secret app/db"},
	"kind from part of a word": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [cm.yaml]\n",
		"apps/cm.yaml":            strings.Replace(configMap, "kind: ConfigMap", "kind: Sec${x}", 1),
	}, vars: map[string]string{"x": "ret"}, obj: "Secret app/db"},
	"data key from a variable": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [s.yaml]\n",
		"apps/s.yaml":             "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: app}\n${field}: {token: " + secretValue + "}\n",
	}, vars: map[string]string{"field": "stringData"}, obj: "Secret app/s"},
	"encrypted Secret with last-applied-configuration": {files: map[string]string{
		"apps/kustomization.yaml": "resources: [s.yaml]\n",
		"apps/s.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: sealed
  namespace: app
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"apiVersion":"v1","kind":"Secret","stringData":{"token":"` + secretValue + `"}}'
stringData:
  token: ENC[AES256_GCM,data:AAAA,iv:BBBB,tag:CCCC,type:str]
sops:
  mac: ENC[AES256_GCM,data:DDDD,iv:EEEE,tag:FFFF,type:str]
  age: [{recipient: age1x, enc: x}]
`,
	}, obj: "Secret app/sealed"},
}

func TestPlaintextThroughBuild(t *testing.T) {
	t.Parallel()
	for name, tc := range throughBuild {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"apps/cm.yaml": configMap}
			for p, d := range tc.files {
				files[p] = d
			}
			dir := writeTree(t, files)
			f := fleet(dir, []schema.Layer{{Name: "apps", Path: "./apps", Selector: map[string]string{"env": "prod"}, Substitute: tc.vars}})
			m, err := layers.Load(f, layers.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			errs := m.Check(f)
			if len(errs) != 1 {
				t.Fatalf("Check found %d problems, want 1:\n%v", len(errs), errs)
			}
			msg := errs[0].Error()
			for _, want := range []string{"spec.layers[0]", "layer apps", tc.obj, "clusters prod-eu-1, prod-us-1"} {
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

// TestReceivedShares: clusters that agree on every variable a build uses
// share one set, and objects substitution leaves alone are the build's own.
func TestReceivedShares(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"apps/kustomization.yaml": "resources: [a.yaml, b.yaml]\n",
		"apps/a.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {env: '${env}'}\n",
		"apps/b.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {plain: x}\n",
	})
	f := fleet(dir, []schema.Layer{{Name: "apps", Path: "./apps"}})
	m, err := layers.Load(f, layers.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Sets) != 2 {
		t.Fatalf("%d sets, want 2 (prod, dev)", len(m.Sets))
	}
	eu, us, dev := m.Received("prod-eu-1", "apps"), m.Received("prod-us-1", "apps"), m.Received("dev-1", "apps")
	if eu != us || eu == dev {
		t.Errorf("prod clusters share a set: %v, dev has its own: %v", eu == us, eu != dev)
	}
	if eu.Objects[1] != dev.Objects[1] || eu.Objects[1] != m.Builds["apps"].Objects[1] {
		t.Error("an object without variables is not shared with the build")
	}
	got := []any{eu.Objects[0].Map()["data"], dev.Objects[0].Map()["data"]}
	want := []any{map[string]any{"env": "prod"}, map[string]any{"env": "dev"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("substituted data (-want +got):\n%s", d)
	}
	if m.Received("dev-1", "nope") != nil {
		t.Error("a layer the cluster does not select is received")
	}
}

// TestDecrypts: only what holds SOPS-encrypted content needs decryption,
// as the build holds it: kustomize-controller decrypts an object before it
// substitutes variables (layer "late": the mac is empty only after).
func TestDecrypts(t *testing.T) {
	t.Parallel()
	sealed := `apiVersion: v1
kind: Secret
metadata: {name: s, namespace: app}
stringData: {token: 'ENC[AES256_GCM,data:AAAA,iv:BBBB,tag:CCCC,type:str]'}
sops: {mac: 'ENC[AES256_GCM,data:DDDD,iv:EEEE,tag:FFFF,type:str]'}
`
	dir := writeTree(t, map[string]string{
		"plain/cm.yaml":                configMap,
		"sealed/prod/s.yaml":           sealed,
		"sealed/dev/cm.yaml":           configMap,
		"generated/s.env":              "token=ENC[AES256_GCM,data:AAAA,iv:BBBB,tag:CCCC,type:str]\nsops_mac=ENC[AES256_GCM,data:DDDD,iv:EEEE,tag:FFFF,type:str]\nsops_version=3.9.0\n",
		"generated/kustomization.yaml": "secretGenerator:\n- name: g\n  envs: [s.env]\n",
		"late/s.yaml":                  "apiVersion: v1\nkind: Secret\nmetadata: {name: late, namespace: app}\nsops: {mac: '${mac:=}'}\n",
	})
	f := fleet(dir, []schema.Layer{
		{Name: "plain", Path: "./plain"},
		{Name: "sealed", Path: "./sealed/${env}"},
		{Name: "generated", Path: "./generated"},
		{Name: "late", Path: "./late"},
	})
	m, err := layers.Load(f, layers.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, c := range []string{"prod-eu-1", "dev-1"} {
		for _, l := range []string{"plain", "sealed", "generated", "late"} {
			got[c+"/"+l] = m.Decrypts(c, l)
		}
	}
	want := map[string]bool{
		"prod-eu-1/plain": false, "prod-eu-1/sealed": true, "prod-eu-1/generated": true,
		"dev-1/plain": false, "dev-1/sealed": false, "dev-1/generated": true,
		"prod-eu-1/late": true, "dev-1/late": true,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Decrypts (-want +got):\n%s", d)
	}
	if errs := m.Check(f); len(errs) != 0 {
		t.Errorf("SOPS-encrypted content refused: %v", errs)
	}
}

// TestBounds: what the builds read and what substitution makes are bounded,
// and past a bound New stops with a *LimitError naming it (an input error:
// a pull request or the output folder decides both).
func TestBounds(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 1<<20)
	files := map[string]string{"apps/kustomization.yaml": "resources: [a.yaml, b.yaml, c.yaml]\n"}
	for _, n := range []string{"a", "b", "c"} {
		files["apps/"+n+".yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + n + "}\ndata: {v: '${cluster}" + big + "'}\n"
	}
	dir := writeTree(t, files)
	units := []layers.Unit{
		{Cluster: "a", Layer: "apps", Path: "apps", Vars: map[string]string{"cluster": "a"}},
		{Cluster: "b", Layer: "apps", Path: "apps", Vars: map[string]string{"cluster": "b"}},
	}
	for name, tc := range map[string]struct {
		opts layers.Options
		want string
	}{
		"read":        {layers.Options{MaxRead: 2 << 20}, "read more than 2 MiB"},
		"substituted": {layers.Options{MaxSubstituted: 4 << 20}, "more than 4 MiB of objects"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := layers.New(dir, units, tc.opts)
			var lim *layers.LimitError
			if !errors.As(err, &lim) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want a *LimitError saying %q", err, tc.want)
			}
		})
	}
	if _, err := layers.New(dir, units, layers.DefaultOptions()); err != nil {
		t.Fatalf("within the default bounds: %v", err)
	}
}

// TestRetypedBySubstitution: a value post-build substitution decodes as a
// number or boolean where Kubernetes takes only strings fails the apply (the
// e2e's kustomize-controller refused `length: ${#region}`); Check says so
// before, naming the field and the clusters.
func TestRetypedBySubstitution(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"apps/kustomization.yaml": "resources: [cm.yaml]\n",
		"apps/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {replicas: "${n}"}
data:
  port: "${port}"
  name: "${cluster}"
`,
	})
	f := fleet(dir, []schema.Layer{{Name: "apps", Path: "./apps", Substitute: map[string]string{"port": "8080", "n": "3"}}})
	m, err := layers.Load(f, layers.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range m.Check(f) {
		got = append(got, e.Error())
	}
	if len(got) != 2 || !strings.Contains(got[0], "data.port is not a string in what clusters dev-1, prod-eu-1, prod-us-1 receive") ||
		!strings.Contains(got[1], "metadata.labels.replicas is not a string") {
		t.Errorf("Check = %q", got)
	}
}

// TestCheckQuotesNames: the file and object names a layer writes reach
// Check's messages quoted when they are not plain tokens, so that a newline,
// an ESC or a workflow command in them can neither break the message's line
// nor make one name read as another (SPEC §7).
func TestCheckQuotesNames(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"apps/kustomization.yaml":   "resources: [\"s\\n::warning::x.yaml\"]\n",
		"apps/s\n::warning::x.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: \"x\\n::error::forged\\e[31m\", namespace: app}\nstringData: {a: b}\n",
	})
	f := fleet(dir, []schema.Layer{{Name: "apps", Path: "./apps"}})
	m, err := layers.Load(f, layers.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	errs := m.Check(f)
	if len(errs) != 1 {
		t.Fatalf("Check = %v", errs)
	}
	msg := errs[0].Error()
	for _, want := range []string{`"apps/s\n::warning::x.yaml"`, `Secret "app/x\n::error::forged\x1b[31m" holds unencrypted data`} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %s:\n%s", want, msg)
		}
	}
	if strings.ContainsAny(msg, "\n\x1b") {
		t.Errorf("message holds a raw newline or ESC: %q", msg)
	}
}
