package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// TestFleetHelmBundleRemoteChart: a bundle of an own-repo delivery whose
// options name an OCI chart (helm.repo oci://…, helm.version), which `fleet
// apply` downloads: validate says to mirror it; mirror copies the chart,
// renders it and mirrors the image its template names; the model then
// renders it per cluster from the chart cache, offline, and finds its image,
// named by the delivery, the bundle and the chart's template.
func TestFleetHelmBundleRemoteChart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := chartFleet(t, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: hello\nversion: 1.0.0\n",
		"values.yaml": "greeting: hello\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}, labels: {greeting: {{ .Values.greeting | quote }}}}
spec:
  selector: {matchLabels: {app: hello}}
  template:
    metadata: {labels: {app: hello}}
    spec:
      containers: [{name: hello, image: "{{ .Values.registry }}/acme/app:1.0.0"}]
`,
	}, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: apps}\n", "")
	dir := filepath.Dir(w.file)
	fleet := mustRead(t, w.file)
	fleet = strings.Replace(fleet, "  layers:\n", `  deliveries:
    - name: hello
      repo: https://git.example.com/fleet.git
      branch: main
      paths: [bundles/hello]
      targets:
        - {name: all, clusterSelector: {}}
  layers:
`, 1)
	writeFile(t, w.file, fleet)
	srcHost := w.src
	writeFile(t, filepath.Join(dir, "bundles", "hello", "fleet.yaml"), `defaultNamespace: hello
helm:
  repo: oci://`+srcHost+`/charts/hello
  version: 1.0.0
  values:
    greeting: hi
    registry: `+srcHost+`
`)

	// Before mirror: the chart is not in the lock.
	_, err := pipeline.Validate(ctx, w.cfg())
	if !problem.IsInvalid(err) || !strings.Contains(err.Error(), "bundle bundles/hello") || !strings.Contains(err.Error(), "run `fleetgen mirror`") {
		t.Fatalf("Validate before mirror = %v, want the bundle's chart not mirrored", err)
	}
	if _, err := pipeline.Mirror(ctx, w.cfg(), pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := lock.Load(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, img := range l.Images {
		sources = append(sources, strings.TrimPrefix(img.Source, srcHost+"/"))
	}
	if got := strings.Join(sources, " "); got != "acme/app:1.0.0 charts/hello:1.0.0" {
		t.Fatalf("locked images: %s, want the chart and its image", got)
	}
	ld, err := pipeline.Load(ctx, w.cfg())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"edge-1", "edge-2"} {
		var got []string
		for _, s := range ld.Model.Delivered(c) {
			for _, o := range s.Objects {
				lbl, _ := o.Map()["metadata"].(map[string]any)["labels"].(map[string]any)
				got = append(got, o.Kind+" "+o.Namespace+"/"+o.Name+" greeting="+lbl["greeting"].(string))
			}
		}
		if want := "Deployment hello/hello-bundles-hello greeting=hi"; strings.Join(got, ", ") != want {
			t.Errorf("%s receives %q, want %q", c, got, want)
		}
	}
	imgs, err := pipeline.Images(ctx, w.cfg(), pipeline.ImagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, img := range imgs {
		if strings.HasSuffix(img.Ref, "/acme/app:1.0.0") {
			found = strings.Contains(strings.Join(img.NeededBy, "; "), "delivery hello: bundle bundles/hello Helm release hello-bundles-hello chart hello template hello/templates/deployment.yaml")
		}
	}
	if !found {
		t.Errorf("images: acme/app:1.0.0 not named by the bundle's chart: %+v", imgs)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFleetHelmBundleHTTPChart: a bundle whose chart `fleet apply` takes
// from an HTTP chart repository's index (helm.repo https://…, helm.chart,
// helm.version): mirror pulls it once and locks it (lock.Chart) with the
// images it renders, and the model renders it from the chart cache.
func TestFleetHelmBundleHTTPChart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newHelmWorld(t)
	dir := filepath.Dir(w.file)
	fleet := strings.Replace(mustRead(t, w.file), "  layers:\n", `  deliveries:
    - name: web
      repo: https://git.example.com/fleet.git
      branch: main
      paths: [bundles/web]
      targets:
        - {name: all, clusterSelector: {}}
  layers:
`, 1)
	writeFile(t, w.file, fleet)
	writeFile(t, filepath.Join(dir, "bundles", "web", "fleet.yaml"), "defaultNamespace: web\nhelm:\n  repo: "+w.repo+"\n  chart: web\n  version: 1.0.0\n")
	if _, err := pipeline.Mirror(ctx, w.cfg(), pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := lock.Load(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Charts) != 1 || l.Charts[0].Chart != "web" {
		t.Fatalf("lock charts = %+v, want web", l.Charts)
	}
	ld, err := pipeline.Load(ctx, w.cfg())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range ld.Model.Delivered("edge-1") {
		for _, o := range s.Objects {
			got = append(got, o.Kind+" "+o.Namespace+"/"+o.Name)
		}
	}
	if want := "Deployment web/web, Job web/web-migrate"; strings.Join(got, ", ") != want {
		t.Errorf("edge-1 receives %q, want %q", got, want)
	}
}
