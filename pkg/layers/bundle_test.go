package layers_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// ownRepoFleet is a fleet in dir whose source is a Git repository, with
// one delivery from it (another spelling of the same repository) of paths
// or bundles, targeting env=prod.
func ownRepoFleet(dir string, d schema.Delivery) *schema.Fleet {
	f := fleet(dir, nil)
	f.Spec.Source.Kind, f.Spec.Source.URL = schema.SourceGit, "ssh://git@git.contoso.example/platform/fleet.git"
	d.Name = "apps"
	if d.Repo == "" {
		d.Repo = "https://git.contoso.example/platform/Fleet"
	}
	if d.Targets == nil {
		d.Targets = []schema.DeliveryTarget{{Name: "prod", ClusterSelector: map[string]string{"env": "prod"}}}
	}
	f.Spec.Deliveries = []schema.Delivery{d}
	f.Spec.Clusters[1].Labels["region"] = "us"
	return f
}

func names(sets []*layers.Set) []string {
	var out []string
	for _, s := range sets {
		for _, o := range s.Objects {
			out = append(out, s.Path+":"+o.Describe())
		}
	}
	return out
}

// TestBundlesReceived: the bundles of a delivery from the fleet's own
// source, as Fleet's agent renders them, reach exactly the clusters its
// targets select, each with its targetCustomization (issue 39, item 1).
func TestBundlesReceived(t *testing.T) {
	t.Parallel()
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n" }
	dir := writeTree(t, map[string]string{
		// A classic scan: bundles/ holds resources itself and a sub-folder
		// with its own fleet.yaml.
		"bundles/raw.yaml":                    cm("raw"),
		"bundles/.hidden.yaml":                cm("hidden"),
		"bundles/README.md":                   "x",
		"bundles/ignored.yaml":                cm("ignored"),
		"bundles/.fleetignore":                "ignored.yaml\n",
		"bundles/web/fleet.yaml":              "namespace: web\ntargetCustomizations:\n- {name: us, clusterSelector: {matchExpressions: [{key: region, operator: In, values: [us]}]}, kustomize: {dir: us}}\n- {name: skip, clusterName: dev-1, doNotDeploy: true}\n",
		"bundles/web/kustomization.yaml":      "resources: [base]\n",
		"bundles/web/base/kustomization.yaml": "resources: [cm.yaml]\n",
		"bundles/web/base/cm.yaml":            cm("web"),
		"bundles/web/us/kustomization.yaml":   "resources: [../base]\nnameSuffix: -us\n",
	})
	f := ownRepoFleet(dir, schema.Delivery{Paths: []string{"bundles"}})
	m, err := layers.Load(f, layers.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if errs, ws := m.Check(f), m.Warnings(f); len(errs)+len(ws) != 0 {
		t.Fatalf("Check %v, warnings %v", errs, ws)
	}
	got := map[string][]string{}
	for _, c := range []string{"prod-eu-1", "prod-us-1", "dev-1"} {
		got[c] = names(m.Delivered(c))
	}
	want := map[string][]string{
		"prod-eu-1": {"bundles:ConfigMap raw", "bundles/web:ConfigMap web/web"},
		"prod-us-1": {"bundles:ConfigMap raw", "bundles/web:ConfigMap web/web-us"},
		"dev-1":     nil,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("delivered (-want +got):\n%s", d)
	}
	files := strings.Join(m.Files(), " ")
	for _, want := range []string{"bundles/raw.yaml", "bundles/web/fleet.yaml", "bundles/web/us/kustomization.yaml", "bundles/README.md"} {
		if !strings.Contains(files, want) {
			t.Errorf("Files lacks %s: %s", want, files)
		}
	}
	if strings.Contains(files, "hidden") || strings.Contains(files, "bundles/ignored.yaml") {
		t.Errorf("Files holds what Fleet does not read: %s", files)
	}

	// Another repository's delivery is not the fleet's: nothing modelled.
	f.Spec.Deliveries[0].Repo = "https://git.contoso.example/platform/other.git"
	m, err = layers.Load(f, layers.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Delivered("prod-eu-1"); len(got) != 0 {
		t.Errorf("another repository's bundles are modelled: %v", names(got))
	}
}

// Issue 39, items 1 and 4 for deliveries: a bundle whose files hold no
// plaintext Secret, but what Fleet's agent makes of it for some cluster
// does.
func TestPlaintextThroughBundle(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		files    map[string]string
		delivery schema.Delivery
		clusters string
	}{
		"kustomize patch": {files: map[string]string{
			"b/kustomization.yaml": "resources: [cm.yaml]\npatches:\n- target: {kind: ConfigMap}\n  patch: '[{\"op\": \"replace\", \"path\": \"/kind\", \"value\": \"Secret\"}]'\n",
			"b/cm.yaml":            configMap,
		}, delivery: schema.Delivery{Bundles: []schema.DeliveryBundle{{Base: "b"}}}, clusters: "clusters prod-eu-1, prod-us-1"},
		"kustomize.dir of one cluster's customization": {files: map[string]string{
			"b/fleet.yaml":                 "targetCustomizations:\n- {name: us, clusterSelector: {matchLabels: {region: us}}, kustomize: {dir: overlay}}\n",
			"b/kustomization.yaml":         "resources: [base]\n",
			"b/base/kustomization.yaml":    "resources: [cm.yaml]\n",
			"b/base/cm.yaml":               configMap,
			"b/overlay/kustomization.yaml": "resources: [../base]\npatches:\n- target: {kind: ConfigMap}\n  patch: '[{\"op\": \"replace\", \"path\": \"/kind\", \"value\": \"Secret\"}]'\n",
		}, delivery: schema.Delivery{Paths: []string{"b"}}, clusters: "cluster prod-us-1"},
		"an overlay's patch file for one cluster": {files: map[string]string{
			"b/fleet.yaml":                "targetCustomizations:\n- {name: eu, clusterName: prod-eu-1, yaml: {overlays: [eu]}}\n",
			"b/cm.yaml":                   configMap,
			"b/overlays/eu/cm_patch.yaml": "kind: Secret\n",
		}, delivery: schema.Delivery{Paths: []string{"b"}}, clusters: "cluster prod-eu-1"},
		"a generator in a bundle options file customised kustomize folder": {files: map[string]string{
			"b/opts.yaml":              "kustomize: {dir: gen}\n",
			"b/gen/kustomization.yaml": "secretGenerator:\n- name: s\n  namespace: app\n  literals: [password=" + secretValue + "]\n",
		}, delivery: schema.Delivery{Bundles: []schema.DeliveryBundle{{Base: "b", Options: "opts.yaml"}}}, clusters: "clusters prod-eu-1, prod-us-1"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := writeTree(t, tc.files)
			f := ownRepoFleet(dir, tc.delivery)
			m, err := layers.Load(f, layers.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			errs := m.Check(f)
			if len(errs) != 1 {
				t.Fatalf("Check = %v, want one problem", errs)
			}
			msg := errs[0].Error()
			for _, want := range []string{"spec.deliveries[0]: delivery apps: bundle b", "holds unencrypted data in what " + tc.clusters + " receive"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q:\n%s", want, msg)
				}
			}
			if strings.Contains(msg, secretValue) {
				t.Errorf("message quotes the value: %s", msg)
			}
		})
	}
}

// TestBundlesNotModelled: what the model cannot render is a warning naming
// the bundle; a path that does not exist, or a bundle that does not build,
// is an error.
func TestBundlesNotModelled(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		files     map[string]string
		delivery  schema.Delivery
		warn, err string
	}{
		"a Helm chart, no chart renderer": {files: map[string]string{"b/Chart.yaml": "name: c\nversion: 1.0.0\n", "b/templates/x.yaml": ""},
			delivery: schema.Delivery{Paths: []string{"b"}}, warn: "delivery apps: bundle b is a Helm chart, which this model does not render without a chart renderer"},
		"a chart of helm.repo": {files: map[string]string{"b/fleet.yaml": "helm: {repo: https://charts.example, chart: web}\n"},
			delivery: schema.Delivery{Bundles: []schema.DeliveryBundle{{Base: "b"}}}, warn: "bundle b is a Helm chart, which this model does not render without a chart renderer"},
		"a chart at a URL": {files: map[string]string{"b/fleet.yaml": "helm: {chart: 'https://charts.example/web-1.0.0.tgz'}\n"},
			delivery: schema.Delivery{Bundles: []schema.DeliveryBundle{{Base: "b"}}}, warn: "deploys the Helm chart of its options' helm.chart https://charts.example/web-1.0.0.tgz (downloaded by `fleet apply` from that URL)"},
		"a repository neither OCI nor HTTP": {files: map[string]string{"b/fleet.yaml": "helm: {repo: 'git://charts.example', chart: web}\n"},
			delivery: schema.Delivery{Bundles: []schema.DeliveryBundle{{Base: "b"}}}, warn: "neither oci:// nor http(s)://"},
		"helm.chart not a chart folder": {files: map[string]string{"b/fleet.yaml": "helm: {chart: ./chart}\n", "b/chart/values.yaml": ""},
			delivery: schema.Delivery{Bundles: []schema.DeliveryBundle{{Base: "b"}}}, warn: "which is not a folder of the bundle holding a Chart.yaml"},
		"a path matching nothing": {delivery: schema.Delivery{Paths: []string{"bundles/missing"}},
			err: "delivery apps: path bundles/missing matches no folder in the fleet's source"},
		"a bundle base that does not exist": {delivery: schema.Delivery{Bundles: []schema.DeliveryBundle{{Base: "nope"}}},
			err: "delivery apps: bundle folder nope does not exist in the fleet's source"},
		"a remote base": {files: map[string]string{"b/kustomization.yaml": "resources: [github.com/evil/repo]\n"},
			delivery: schema.Delivery{Paths: []string{"b"}}, err: "kustomize would fetch this entry with git or HTTP"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"other/x.yaml": ""}
			for p, d := range tc.files {
				files[p] = d
			}
			f := ownRepoFleet(writeTree(t, files), tc.delivery)
			m, err := layers.Load(f, layers.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			ws, errs := m.Warnings(f), m.Check(f)
			if tc.warn != "" && (len(ws) != 1 || !strings.Contains(ws[0].Error(), tc.warn)) || tc.warn == "" && len(ws) != 0 {
				t.Errorf("warnings = %v, want %q", ws, tc.warn)
			}
			if tc.err != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err)) || tc.err == "" && len(errs) != 0 {
				t.Errorf("errors = %v, want %q", errs, tc.err)
			}
		})
	}
}

// TestHelmReleaseName: the names Fleet v0.16's names.HelmReleaseName gives
// (its internal/names/name.go run on these inputs): a bundle's name, and the
// release of a Helm bundle without helm.releaseName.
func TestHelmReleaseName(t *testing.T) {
	for in, want := range map[string]string{
		"apps/bundles/podinfo":  "apps-bundles-podinfo",
		"own/bundles/own-chart": "own-bundles-own-chart",
		"Apps/Bundles/Pod_Info": "apps-bundles-pod-info-6b5f8314",
		"a-very-long-delivery-name-for-testing/bundles/some/deeply/nested/chart-folder": "a-very-long-delivery-name-for-testing-bundles-s-4f6c4",
		"x/bundles/podinfo/fleet-eu": "x-bundles-podinfo-fleet-eu",
	} {
		if got := layers.HelmReleaseName(in); got != want {
			t.Errorf("HelmReleaseName(%q) = %q, want %q", in, got, want)
		}
	}
}
