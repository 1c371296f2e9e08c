package review_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/review"
	"fleetgen.dev/fleetgen/test/testenv"
)

var update = flag.Bool("update", false, "rewrite golden files")

// marker is planted in a kubeconfig; no output may show it.
const marker = "PLANTED-MARKER-kubeconfig-value"

// outputs are the four formats, by golden file name.
var outputs = map[string]func(review.Report, *bytes.Buffer) error{
	"text.txt":    func(r review.Report, b *bytes.Buffer) error { return r.WriteText(b) },
	"markdown.md": func(r review.Report, b *bytes.Buffer) error { return r.WriteMarkdown(b) },
	"json.json":   func(r review.Report, b *bytes.Buffer) error { return r.WriteJSON(b) },
	"github.txt":  func(r review.Report, b *bytes.Buffer) error { return r.WriteGitHub(b) },
}

// TestGolden renders each example, changes it and compares the report of
// pipeline.Diff in every output with testdata/golden/<case>/want/.
func TestGolden(t *testing.T) {
	t.Parallel()
	type goldenCase struct {
		example string
		// prepare edits the example before the first render; then the
		// output folder gets the layer folders, as a checkout of the
		// published tree holds them.
		prepare func(t *testing.T, dir string)
		change  func(t *testing.T, dir string)
	}
	cases := map[string]goldenCase{
		// The change the issue names: adds, removes and relabels clusters,
		// changes a clientID, rotates a kubeconfig, bumps an image digest.
		"quickstart-change": {example: "quickstart", change: changeQuickstart},
		// A Verrazzano cluster relabelled and its CA rotated; the admin
		// ConfigMap moves with the manager's API URL.
		"verrazzano-change": {example: "verrazzano", change: changeVerrazzano},
		// A pull request that edits layers only (issue 39): the prod
		// clusters' podinfo scaled 3 → 5, a SOPS-encrypted Secret's
		// password changed and a key added (names only), a label added.
		"layer-change": {example: "quickstart", prepare: prepareLayerSecret, change: changeLayers},
	}
	for _, ex := range []string{"quickstart", "verrazzano", "capi", "fleet-standalone", "aks-acr"} {
		cases[ex+"-unchanged"] = goldenCase{example: ex}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := testenv.CopyTree(t, filepath.Join("..", "..", "examples", tc.example), ".fleetgen")
			out := filepath.Join(t.TempDir(), "out")
			env := func(string) (string, bool) { return "", false }
			cfg := pipeline.Config{File: filepath.Join(dir, "fleet.yaml"), LookupEnv: env, AllowPlaintextSecrets: true}
			if tc.prepare != nil {
				tc.prepare(t, dir)
			}
			if err := pipeline.Render(context.Background(), cfg, pipeline.RenderOptions{OutDir: out}); err != nil {
				t.Fatal(err)
			}
			if tc.prepare != nil {
				for _, l := range []string{"apps", "infrastructure"} {
					if err := os.CopyFS(filepath.Join(out, l), os.DirFS(filepath.Join(dir, l))); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tc.change != nil {
				tc.change(t, dir)
			}
			rep, diff, err := pipeline.Diff(context.Background(), cfg, pipeline.RenderOptions{OutDir: out})
			if err != nil {
				t.Fatal(err)
			}
			if tc.change == nil && (!rep.Empty() || diff != "") {
				t.Errorf("an unchanged example differs:\n%s", diff)
			}
			if strings.Contains(diff, marker) {
				t.Errorf("the file diff shows the kubeconfig's value")
			}
			compareOutputs(t, filepath.Join("testdata", "golden", name, "want"), rep)
		})
	}
}

func compareOutputs(t *testing.T, want string, rep review.Report) {
	t.Helper()
	for file, write := range outputs {
		var b bytes.Buffer
		if err := write(rep, &b); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), marker) {
			t.Errorf("%s shows the kubeconfig's value", file)
		}
		path := filepath.Join(want, file)
		if *update {
			if err := os.MkdirAll(want, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		w, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./pkg/review -update)", err)
		}
		if d := cmp.Diff(string(w), b.String()); d != "" {
			t.Errorf("%s (-want +got):\n%s", file, d)
		}
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var shape map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &shape); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"clusters", "manager", "files"} {
		if _, ok := shape[k]; !ok {
			t.Errorf("json output lacks %q (SPEC §7)", k)
		}
	}
}

func changeQuickstart(t *testing.T, dir string) {
	testenv.ReplaceIn(t, filepath.Join(dir, "fleet.yaml"),
		// capi-1 removed, edge-9 (agent) added
		"    - name: capi-1\n      labels: {env: dev, region: eu}\n      registration: {mode: capi}\n",
		"    - name: edge-9\n      labels: {env: dev, region: eu}\n",
		// dev-us-1 relabelled
		"    - name: dev-us-1\n      labels: {env: dev, region: us}",
		"    - name: dev-us-1\n      labels: {env: dev, region: ca}",
	)
	testenv.ReplaceIn(t, filepath.Join(dir, "kubeconfigs", "prod-eu-1.yaml"),
		"FAKE-TOKEN-prod-eu-1-not-a-real-credential", marker)
	testenv.ReplaceIn(t, filepath.Join(dir, "fleet.lock.yaml"),
		// edge-1's clientID changed
		"05b16fbbba4e8a231e050495adb3330a", "deadbeefdeadbeefdeadbeefdeadbeef",
		// podinfo's digest bumped
		"sha256:2c689903c5f16bc2ee048f34bb0d7f2839652f5183101ba158345ce2bb67a6c1",
		"sha256:"+strings.Repeat("ab", 32),
	)
}

// sealedSecret is a SOPS-encrypted Secret of a layer: every value an
// envelope; password's is pw, token's tk ("" for none).
func sealedSecret(pw, tk string) string {
	env := func(d string) string { return "ENC[AES256_GCM,data:" + d + ",iv:AAAA,tag:BBBB,type:str]" }
	s := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: podinfo-token\ndata:\n  password: " + env(pw) + "\n"
	if tk != "" {
		s += "  token: " + env(tk) + "\n"
	}
	return s + "sops:\n  mac: " + env("MAC"+pw+tk) + "\n  version: 3.9.0\n"
}

func prepareLayerSecret(t *testing.T, dir string) {
	if err := os.WriteFile(filepath.Join(dir, "apps", "base", "secret.yaml"), []byte(sealedSecret(marker+"old", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.ReplaceIn(t, filepath.Join(dir, "apps", "base", "kustomization.yaml"), "  - podinfo.yaml\n", "  - podinfo.yaml\n  - secret.yaml\n")
}

func changeLayers(t *testing.T, dir string) {
	testenv.ReplaceIn(t, filepath.Join(dir, "apps", "prod", "kustomization.yaml"), "count: 3", "count: 5")
	if err := os.WriteFile(filepath.Join(dir, "apps", "base", "secret.yaml"), []byte(sealedSecret(marker+"new", marker+"token")), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.ReplaceIn(t, filepath.Join(dir, "apps", "base", "podinfo.yaml"), "      labels: {app: podinfo}\n    spec:", "      labels: {app: podinfo, app.kubernetes.io/part-of: shop}\n    spec:")
}

func changeVerrazzano(t *testing.T, dir string) {
	testenv.ReplaceIn(t, filepath.Join(dir, "fleet.yaml"),
		// the admin ConfigMap's server
		"apiServerURL: https://admin.verrazzano.example:6443", "apiServerURL: https://admin2.verrazzano.example:6443",
		// a group's selector
		"selector: {role: managed}", "selector: {role: managed, tier: gold}",
		// managed2 relabelled, and its CA set
		"    - name: managed2\n", "    - name: managed2\n      labels: {tier: gold}\n      registration: {mode: verrazzano, caCert: {file: certs/managed1-ca.pem}}\n",
	)
}

// TestNoSecretValue compares plaintext trees whose kubeconfig Secret and CA
// hold the marker: no output shows it, and the change still shows.
func TestNoSecretValue(t *testing.T) {
	t.Parallel()
	secret := func(v string) []byte {
		return []byte("# Generated by fleetgen. DO NOT EDIT.\napiVersion: v1\nkind: Secret\nmetadata:\n  name: c-kubeconfig\nstringData:\n  value: " + v + "\n")
	}
	cluster := []byte("# Generated by fleetgen. DO NOT EDIT.\napiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: c\nspec:\n  kubeConfigSecret: c-kubeconfig\n")
	ca := func(v string) []byte {
		return []byte("# Generated by fleetgen. DO NOT EDIT.\napiVersion: v1\nkind: Secret\nmetadata:\n  name: ca-secret-v\ndata:\n  cacrt: " + v + "\n")
	}
	vmc := []byte("# Generated by fleetgen. DO NOT EDIT.\napiVersion: clusters.verrazzano.io/v1alpha1\nkind: VerrazzanoManagedCluster\nmetadata:\n  name: v\n")
	old := map[string][]byte{
		"manager/fleet/c/cluster.yaml":        cluster,
		"manager/fleet/c/kubeconfig.yaml":     secret(marker + "-old"),
		"manager/verrazzano/v/vmc.yaml":       vmc,
		"manager/verrazzano/v/ca-secret.yaml": ca(marker + "-old"),
	}
	next := map[string][]byte{
		"manager/fleet/c/cluster.yaml":        cluster,
		"manager/fleet/c/kubeconfig.yaml":     secret(marker + "-new"),
		"manager/verrazzano/v/vmc.yaml":       vmc,
		"manager/verrazzano/v/ca-secret.yaml": ca(marker + "-new"),
	}
	rep := review.Compare(old, next, review.Options{})
	for file, write := range outputs {
		var b bytes.Buffer
		if err := write(rep, &b); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), marker) {
			t.Errorf("%s shows a secret value:\n%s", file, b.String())
		}
	}
	want := []review.Cluster{
		{Name: "c", Change: review.Update, Changes: []review.Change{{Field: "registration.kubeconfig", From: review.Set, To: review.Changed, FromMarker: true, ToMarker: true}},
			Warnings: []string{"c: kubeconfig changed (new credentials, or sealed for other age recipients): Fleet connects with the new Secret; check that it reaches the cluster before merging"}},
		{Name: "v", Change: review.Update, Changes: []review.Change{{Field: "registration.caCert", From: review.Set, To: review.Changed, FromMarker: true, ToMarker: true}}, Warnings: []string{}},
	}
	if d := cmp.Diff(want, rep.Clusters); d != "" {
		t.Errorf("clusters (-want +got):\n%s", d)
	}
}
