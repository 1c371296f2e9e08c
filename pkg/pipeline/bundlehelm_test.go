package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/test/testenv"
)

// helmBundleFiles make examples/multi-manager's bundles/podinfo (delivery
// apps: region eu, targetNamespace podinfo) a Helm chart of its own folder,
// with values, a values file of a targetCustomization and a cluster label
// value.
var helmBundleFiles = map[string]string{
	"bundles/podinfo/configmap.yaml": "",
	"bundles/podinfo/Chart.yaml":     "apiVersion: v2\nname: podinfo\nversion: 1.2.3\nkubeVersion: '>=1.30.0-0'\n",
	"bundles/podinfo/values.yaml":    "replicas: 1\nimage: ghcr.io/stefanprodan/podinfo:6.7.1\nregion: none\ntier: none\n",
	"bundles/podinfo/edge.yaml":      "tier: edge\nimage: ghcr.io/stefanprodan/podinfo:6.7.2\n",
	"bundles/podinfo/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
  labels: {region: {{ .Values.region | quote }}, tier: {{ .Values.tier | quote }}, kube: {{ .Capabilities.KubeVersion.Minor | quote }}, who: {{ .Values.who | quote }}, zone: {{ .Values.zone | quote }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: web, image: {{ .Values.image | quote }}}
`,
	// A template that is not YAML until Helm renders it, and renders nothing.
	"bundles/podinfo/templates/secret.yaml":  "{{- if .Values.token }}\napiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {token: {{ .Values.token | quote }}}\n{{- end }}\n",
	"bundles/podinfo/templates/service.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: {{ .Release.Name }}, namespace: {{ .Release.Namespace }}}\nspec: {ports: [{port: 80}]}\n",
	"bundles/podinfo/fleet.yaml": `defaultNamespace: podinfo
helm:
  values:
    replicas: 2
    region: global.fleet.clusterLabels.region
    who: ${ .ClusterName }.${ .ClusterNamespace }.${ get .ClusterLabels "env" | upper }
  templateValues:
    zone: ${ .ClusterLabels.region }-1
targetCustomizations:
  - name: edge
    clusterSelector: {matchLabels: {tier: edge}}
    helm:
      values: {replicas: 5}
      valuesFiles: [edge.yaml]
`,
}

// TestFleetHelmBundle: a bundle of an own-repo delivery that is a Helm chart
// is rendered per cluster as Fleet's agent installs it: the release named
// as `fleet apply` names the bundle, the delivery's targetNamespace, the
// values merged as fleet-controller merges them (a targetCustomization's
// values and values file, a cluster label), and the cluster's Kubernetes
// version. Each cluster's objects are what `helm template` (the real Helm)
// renders from the same chart and values; its images are found, and an
// image not written as the mirror's warns.
func TestFleetHelmBundle(t *testing.T) {
	t.Parallel()
	fleet := copyTree(t, filepath.Join("..", "..", "examples", "multi-manager"))
	pubWrite(t, fleet, helmBundleFiles)
	if err := os.Remove(filepath.Join(fleet, "bundles", "podinfo", "configmap.yaml")); err != nil {
		t.Fatal(err)
	}
	ld, err := Load(context.Background(), Config{File: filepath.Join(fleet, "fleet.yaml"), AgeKeyFile: filepath.Join(fleet, "age.agekey")})
	if err != nil {
		t.Fatal(err)
	}
	// The values helm template gets, as fleet-controller merges them.
	cases := map[string]string{
		"prod-eu-1": "replicas: 2\nregion: eu\nwho: prod-eu-1.fleet-default.PROD\nzone: eu-1\n",
		"edge-7":    "replicas: 5\nregion: eu\ntier: edge\nimage: ghcr.io/stefanprodan/podinfo:6.7.2\nwho: edge-7.fleet-default.PROD\nzone: eu-1\n",
	}
	helm := testenv.Tool(t, "helm")
	for cluster, w := range cases {
		var got []map[string]any
		for _, s := range ld.Model.Delivered(cluster) {
			if s.Delivery != "apps" {
				continue
			}
			if s.Release != "apps-bundles-podinfo" {
				t.Errorf("%s: release %q, want apps-bundles-podinfo (Fleet's name of the bundle)", cluster, s.Release)
			}
			for _, o := range s.Objects {
				got = append(got, o.Map())
			}
		}
		vals := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(vals, []byte(w), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(helm, "template", "apps-bundles-podinfo", filepath.Join(fleet, "bundles", "podinfo"),
			"--namespace", "podinfo", "--kube-version", "v1.36.0", "-f", vals).CombinedOutput()
		if err != nil {
			t.Fatalf("helm template: %v\n%s", err, out)
		}
		var wantObjs []map[string]any
		for _, doc := range strings.Split(string(out), "\n---\n") {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatal(err)
			}
			if len(m) == 0 {
				continue
			}
			// Applied in the release's namespace: the model says where.
			m["metadata"].(map[string]any)["namespace"] = "podinfo"
			wantObjs = append(wantObjs, m)
		}
		byName := func(a, b map[string]any) int {
			return strings.Compare(a["kind"].(string), b["kind"].(string))
		}
		slices.SortFunc(got, byName)
		slices.SortFunc(wantObjs, byName)
		if d := cmp.Diff(wantObjs, got); d != "" {
			t.Errorf("%s: the model's objects against helm template's (-helm +model):\n%s", cluster, d)
		}
	}
	// Both clusters' images are the fleet's, found in the bundle.
	var imgs []string
	for _, u := range ld.Images.Images {
		if strings.Contains(u.Ref, "podinfo") {
			imgs = append(imgs, u.Ref+" "+strings.Join(u.Why, ","))
		}
	}
	if d := cmp.Diff([]string{"ghcr.io/stefanprodan/podinfo:6.7.1 delivery apps: bundle bundles/podinfo Helm release apps-bundles-podinfo chart podinfo template podinfo/templates/deployment.yaml",
		"ghcr.io/stefanprodan/podinfo:6.7.2 delivery apps: bundle bundles/podinfo Helm release apps-bundles-podinfo chart podinfo template podinfo/templates/deployment.yaml"}, imgs); d != "" {
		t.Errorf("images found (-want +got):\n%s", d)
	}
	// The chart's templates are Go templates, checked through their renders:
	// never read as YAML (templates/secret.yaml is not YAML), by validate or
	// by publish (publish.WithTemplates).
	ws, err := Validate(context.Background(), Config{File: filepath.Join(fleet, "fleet.yaml"), AgeKeyFile: filepath.Join(fleet, "age.agekey")})
	var es problem.Errors
	if err != nil && !errors.As(err, &es) {
		t.Fatalf("validate: %v", err)
	}
	unpinned := 0
	for _, e := range append(es, ws...) {
		if strings.Contains(e.Msg, "templates/") && !strings.Contains(e.Msg, "is not in fleet.lock.yaml") && !strings.Contains(e.Msg, "is not the mirror's reference") {
			t.Errorf("validate: %s", e.Msg)
		}
		if strings.Contains(e.Msg, "delivery apps: bundle bundles/podinfo: chart template podinfo/templates/deployment.yaml: image ghcr.io/stefanprodan/podinfo:6.7.") &&
			strings.Contains(e.Msg, "set the chart's image values in the bundle's helm.values to multi.azurecr.io/…@sha256:…") {
			unpinned++
		}
	}
	if unpinned != 2 {
		t.Errorf("%d warnings that a chart's image is not the mirror's by digest, want 2 (6.7.1 and 6.7.2), saying to set the chart's values", unpinned)
	}
	if !ld.Model.ChartTemplate("bundles/podinfo/templates/secret.yaml") || ld.Model.ChartTemplate("bundles/podinfo/values.yaml") {
		t.Error("ChartTemplate: want the rendered chart's templates, and only them")
	}
	// Not in region eu: the delivery does not reach it.
	if s := ld.Model.Delivered("prod-us-1"); len(s) != 0 {
		t.Errorf("prod-us-1 receives %d sets of bundles", len(s))
	}
}

// TestFleetHelmBundleNotModelled: what the model cannot render as Fleet
// does is a warning naming the bundle and why, never silence, and never
// a guess.
func TestFleetHelmBundleNotModelled(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		files map[string]string
		want  string
	}{
		"values from the cluster": {map[string]string{"bundles/podinfo/fleet.yaml": "helm:\n  valuesFrom:\n    - configMapKeyRef: {name: vals, key: values.yaml}\n"},
			"takes Helm values from helm.valuesFrom"},
		"a remote chart at no version": {map[string]string{"bundles/podinfo/fleet.yaml": "helm:\n  repo: https://charts.example\n  chart: podinfo\n"},
			"deploys a Helm chart at version \"\", which `fleet apply` resolves when it runs"},
		"a remote chart at a range": {map[string]string{"bundles/podinfo/fleet.yaml": "helm:\n  repo: oci://charts.example/podinfo\n  version: ^6.0.0\n"},
			"deploys a Helm chart at version \"^6.0.0\", which `fleet apply` resolves when it runs"},
		"a random value": {map[string]string{"bundles/podinfo/fleet.yaml": "helm:\n  values:\n    name: ${ randAlpha 5 }\n"},
			"has Helm values whose `${ }` templates call randAlpha, whose result fleetgen cannot know"},
		"a label a cluster lacks": {map[string]string{"bundles/podinfo/fleet.yaml": "helm:\n  templateValues:\n    name: ${ .ClusterLabels.tier }\n"},
			"fleet-controller cannot make its Helm values for the cluster, and deploys it nowhere there: helm.templateValues name: the values template fails"},
		"dependencies not vendored": {map[string]string{"bundles/podinfo/Chart.yaml": "apiVersion: v2\nname: podinfo\nversion: 1.2.3\ndependencies:\n  - {name: redis, version: 1.0.0, repository: https://charts.example}\n"},
			"whose dependencies redis `fleet apply` fetches with `helm dependency update`"},
		"a plaintext Secret": {map[string]string{"bundles/podinfo/templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: {{ .Values.region | quote }}}\n"},
			"Secret podinfo/db holds unencrypted data in what clusters dev-1, edge-7, gitops-1 and 2 more receive (as Fleet's agent renders it)"},
		"dependencies not vendored, no update": {map[string]string{
			"bundles/podinfo/Chart.yaml": "apiVersion: v2\nname: podinfo\nversion: 1.2.3\ndependencies:\n  - {name: redis, version: 1.0.0, repository: https://charts.example}\n",
			"bundles/podinfo/fleet.yaml": "helm: {disableDependencyUpdate: true}\n"},
			"its dependencies redis are not in its charts/ folder and helm.disableDependencyUpdate is set"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fleet := copyTree(t, filepath.Join("..", "..", "examples", "multi-manager"))
			files := map[string]string{}
			for p, d := range helmBundleFiles {
				files[p] = d
			}
			for p, d := range c.files {
				files[p] = d
			}
			pubWrite(t, fleet, files)
			ws, err := Validate(context.Background(), Config{File: filepath.Join(fleet, "fleet.yaml"), AgeKeyFile: filepath.Join(fleet, "age.agekey")})
			var msgs []string
			for _, w := range ws {
				msgs = append(msgs, w.Msg)
			}
			var es problem.Errors
			if err != nil && !errors.As(err, &es) {
				t.Fatalf("validate: %v", err)
			}
			for _, e := range es {
				msgs = append(msgs, e.Msg)
			}
			found := false
			for _, m := range msgs {
				if strings.Contains(m, "bundles/podinfo") && strings.Contains(m, c.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no problem says %q; got:\n%s", c.want, strings.Join(msgs, "\n"))
			}
			if testing.Verbose() {
				t.Logf("%s", strings.Join(msgs, "\n"))
			}
		})
	}
}

// TestDiffHelmBundle: `diff` against a checkout of the published tree shows,
// per cluster, the fields a change of a Helm bundle's values moves in what
// Fleet's agent installs there, rendered from the old chart and values in
// DIR and the new ones.
func TestDiffHelmBundle(t *testing.T) {
	t.Parallel()
	fleet := copyTree(t, filepath.Join("..", "..", "examples", "multi-manager"))
	pubWrite(t, fleet, helmBundleFiles)
	if err := os.Remove(filepath.Join(fleet, "bundles", "podinfo", "configmap.yaml")); err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(fleet, lock.FileName)
	l, err := lock.Load(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	l.SetImages(append(l.Images,
		lock.Image{Source: "ghcr.io/stefanprodan/podinfo:6.7.1", Target: "multi.azurecr.io/stefanprodan/podinfo:6.7.1", Digest: "sha256:" + strings.Repeat("b", 64)},
		lock.Image{Source: "ghcr.io/stefanprodan/podinfo:6.7.2", Target: "multi.azurecr.io/stefanprodan/podinfo:6.7.2", Digest: "sha256:" + strings.Repeat("c", 64)}))
	if err := lock.Write(lockPath, l); err != nil {
		t.Fatal(err)
	}
	cfg := Config{File: filepath.Join(fleet, "fleet.yaml")}
	published := filepath.Join(t.TempDir(), "published")
	if err := Render(context.Background(), cfg, RenderOptions{OutDir: published}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bundles", "platform", "argocd-apps"} {
		if err := os.CopyFS(filepath.Join(published, d), os.DirFS(filepath.Join(fleet, d))); err != nil {
			t.Fatal(err)
		}
	}
	testenv.ReplaceIn(t, filepath.Join(fleet, "bundles", "podinfo", "fleet.yaml"), "    replicas: 2\n", "    replicas: 3\n")
	rep, fileDiff, err := Diff(context.Background(), cfg, RenderOptions{OutDir: published})
	if err != nil {
		t.Fatal(err)
	}
	if fileDiff != "" {
		t.Errorf("the rendered tree changed: %s", fileDiff)
	}
	got := map[string][]string{}
	for _, c := range rep.Clusters {
		for _, o := range c.Objects {
			var moved []string
			for _, ch := range o.Changes {
				moved = append(moved, fmt.Sprintf("%s: %v → %v", ch.Field, ch.From, ch.To))
			}
			got[c.Name] = append(got[c.Name], fmt.Sprintf("%s %s %s/%s %s %s", o.Layer, o.Change, o.Kind, o.Namespace, o.Name, strings.Join(moved, "; ")))
		}
	}
	// dev-1, edge-7, gitops-1, lab-1 and prod-eu-1 are in region eu; edge-7
	// takes its replicas from its targetCustomization.
	want := []string{" changed Deployment/podinfo apps-bundles-podinfo-web spec.replicas: 2 → 3"}
	if d := cmp.Diff(map[string][]string{"dev-1": want, "gitops-1": want, "lab-1": want, "prod-eu-1": want}, got); d != "" {
		t.Errorf("received objects per cluster (-want +got):\n%s", d)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "delivery apps: ~ apps/v1 Deployment podinfo/apps-bundles-podinfo-web") {
		t.Errorf("the text report does not name the delivery:\n%s", text.String())
	}
}

// TestFleetHelmBundleUntrusted: a bundle chart and its values come from a
// pull request. Values templates that ask for unbounded output, a template
// that reaches for the environment (env, expandenv: not there, as in
// fleet-controller) or another template, and a chart that renders past its
// bounds stop with an error naming the bundle, quickly.
func TestFleetHelmBundleUntrusted(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		files map[string]string
		want  string
	}{
		"a huge repeat": {map[string]string{"bundles/podinfo/fleet.yaml": "helm:\n  values:\n    x: ${ repeat 100000000 \"x\" }\n"},
			"more than the bound allows"},
		"a huge range": {map[string]string{"bundles/podinfo/fleet.yaml": "helm:\n  values:\n    x: ${ range until 50000000 }x${ end }\n"},
			"more than the bound allows"},
		"output past the bound": {map[string]string{"bundles/podinfo/fleet.yaml": "helm:\n  values:\n    x: ${ range until 500000 }xxxxxxxxxx${ end }\n"},
			"larger than 1048576 bytes"},
		"the environment": {map[string]string{"bundles/podinfo/fleet.yaml": "helm:\n  values:\n    x: ${ env \"FLEETGEN_TEST_SECRET\" }\n"},
			"the values template does not parse"},
		"another template": {map[string]string{"bundles/podinfo/fleet.yaml": "helm:\n  values:\n    x: ${ tpl \"x\" . }\n"},
			"the values template does not parse"},
		"a chart template past the output bound": {map[string]string{"bundles/podinfo/templates/big.yaml": "{{ range until 100000 }}{{ repeat 1000 \"x\" }}{{ end }}\n"},
			"does not install as Fleet's agent installs it"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fleet := copyTree(t, filepath.Join("..", "..", "examples", "multi-manager"))
			files := map[string]string{}
			for p, d := range helmBundleFiles {
				files[p] = d
			}
			for p, d := range c.files {
				files[p] = d
			}
			pubWrite(t, fleet, files)
			ws, err := Validate(context.Background(), Config{File: filepath.Join(fleet, "fleet.yaml"), AgeKeyFile: filepath.Join(fleet, "age.agekey")})
			var es problem.Errors
			if err != nil && !errors.As(err, &es) {
				t.Fatalf("validate: %v", err)
			}
			found := false
			for _, e := range append(es, ws...) {
				if strings.Contains(e.Msg, "bundle bundles/podinfo") && strings.Contains(e.Msg, c.want) {
					found = true
				}
			}
			if !found {
				var msgs []string
				for _, e := range append(es, ws...) {
					msgs = append(msgs, e.Msg)
				}
				t.Errorf("no problem says %q; got:\n%s", c.want, strings.Join(msgs, "\n"))
			}
		})
	}
}

// TestFleetHelmBundleKustomize: a Helm bundle with a kustomization.yaml is
// built as Fleet's post-renderer builds it: Helm's output written to
// fleet-manifests.yaml, put first in the kustomization's resources, the
// kustomization's patches and labels over it, then the release's namespace
// for what has none.
func TestFleetHelmBundleKustomize(t *testing.T) {
	t.Parallel()
	fleet := copyTree(t, filepath.Join("..", "..", "examples", "multi-manager"))
	files := map[string]string{
		"bundles/podinfo/kustomization.yaml": `labels:
  - pairs: {team: web}
patches:
  - target: {kind: Deployment}
    patch: |-
      - op: replace
        path: /spec/replicas
        value: 7
`,
	}
	for p, d := range helmBundleFiles {
		files[p] = d
	}
	pubWrite(t, fleet, files)
	ld, err := Load(context.Background(), Config{File: filepath.Join(fleet, "fleet.yaml"), AgeKeyFile: filepath.Join(fleet, "age.agekey")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range ld.Model.Delivered("prod-eu-1") {
		for _, o := range s.Objects {
			m := o.Map()
			lbl, _ := m["metadata"].(map[string]any)["labels"].(map[string]any)
			line := fmt.Sprintf("%s %s/%s team=%v", o.Kind, o.Namespace, o.Name, lbl["team"])
			if spec, ok := m["spec"].(map[string]any); ok && spec["replicas"] != nil {
				line += fmt.Sprintf(" replicas=%v", spec["replicas"])
			}
			got = append(got, line)
		}
	}
	slices.Sort(got)
	want := []string{"Deployment podinfo/apps-bundles-podinfo-web team=web replicas=7", "Service podinfo/apps-bundles-podinfo team=web"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("prod-eu-1 receives (-want +got):\n%s", d)
	}
}

// TestFleetHelmBundleLiveLabels: Fleet's values templating, and the
// bundle's own targetCustomizations, read the labels the Cluster object has
// live, not only fleet.yaml's: the shard render writes on it and the owner
// labels of the manager's Flux Kustomization that applies it (e2e assertion
// 6 checks the templating against the real fleet-controller).
func TestFleetHelmBundleLiveLabels(t *testing.T) {
	t.Parallel()
	fleet := copyTree(t, filepath.Join("..", "..", "examples", "multi-manager"))
	files := maps.Clone(helmBundleFiles)
	files["bundles/podinfo/fleet.yaml"] = strings.Replace(files["bundles/podinfo/fleet.yaml"], "  templateValues:\n",
		"    live: ${ toJson .ClusterLabels }\n    shard: global.fleet.clusterLabels.fleet.cattle.io/shard-ref\n  templateValues:\n", 1)
	files["bundles/podinfo/fleet.yaml"] += "  - name: flux\n    clusterSelector: {matchLabels: {kustomize.toolkit.fluxcd.io/name: manager}}\n    helm: {values: {selected: flux}}\n"
	files["bundles/podinfo/templates/configmap.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: live}\ndata: {live: {{ toJson .Values.live | quote }}, shard: {{ .Values.shard | quote }}, selected: {{ .Values.selected | default \"none\" | quote }}}\n"
	pubWrite(t, fleet, files)
	// No image: the render below needs none mirrored.
	for _, f := range []string{"configmap.yaml", "templates/deployment.yaml"} {
		if err := os.Remove(filepath.Join(fleet, "bundles", "podinfo", f)); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(fleet, "fleet.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "  defaults:\n", "  shards:\n    fleet: [shard-a, shard-b]\n  defaults:\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ld, err := Load(context.Background(), Config{File: p, AgeKeyFile: filepath.Join(fleet, "age.agekey")})
	if err != nil {
		t.Fatal(err)
	}
	shardID := ld.shardPlan().FleetShard("prod-eu-1")
	if shardID == "" {
		t.Fatal("prod-eu-1 has no Fleet shard")
	}
	want := map[string]any{
		"live":     fmt.Sprintf(`{"argocd":"enabled","cloud":"azure","env":"prod","fleet.cattle.io/shard-ref":%q,"kustomize.toolkit.fluxcd.io/name":"manager","kustomize.toolkit.fluxcd.io/namespace":"flux-system","region":"eu"}`, shardID),
		"shard":    shardID,
		"selected": "flux", // a targetCustomization selecting by a label Flux sets
	}
	var got any
	for _, s := range ld.Model.Delivered("prod-eu-1") {
		for _, o := range s.Objects {
			if o.Kind == "ConfigMap" && o.Name == "live" {
				got = o.Map()["data"]
			}
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("prod-eu-1's ConfigMap live (-want +got):\n%s", d)
	}
	// The Cluster render writes carries the same shard.
	dir := t.TempDir()
	if err := Render(context.Background(), Config{File: p}, RenderOptions{OutDir: dir}); err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile(filepath.Join(dir, "manager", "fleet", "prod-eu-1", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c), "fleet.cattle.io/shard-ref: "+shardID+"\n") {
		t.Errorf("prod-eu-1's Cluster does not carry shard %s:\n%s", shardID, c)
	}
}
