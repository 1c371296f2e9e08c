package charts

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const webRelease = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: web
      version: 1.2.3
      sourceRef: {kind: HelmRepository, name: acme}
  valuesFrom:
    - {kind: ConfigMap, name: web-values}
    - {kind: Secret, name: web-secret, valuesKey: password, targetPath: password}
    - {kind: Secret, name: made-in-cluster}
    - {kind: Secret, name: optional-missing, optional: true}
  values:
    image: {tag: "2.0"}
`

// closure is what the cluster receives beside the HelmRelease: a ConfigMap
// of values and a SOPS-encrypted Secret.
var closure = []string{`apiVersion: v1
kind: ConfigMap
metadata: {name: web-values, namespace: apps}
data:
  values.yaml: |
    replicas: 3
    image: {tag: "1.5"}
`, `apiVersion: v1
kind: Secret
metadata: {name: web-secret, namespace: apps}
stringData:
  password: ENC[AES256_GCM,data:AAAA,iv:BBBB,tag:CCCC,type:str]
sops:
  mac: ENC[AES256_GCM,data:DDDD,iv:EEEE,tag:FFFF,type:str]
`}

func renderWeb(t *testing.T, rel *Release, objs map[string]map[string]any, kube string) *Result {
	t.Helper()
	vals, notes, err := rel.Values(lookupIn(objs))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Render(context.Background(), webChart(t), Input{Release: rel, Values: vals, KubeVersion: kube}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	res.Notes = append(notes, res.Notes...)
	return res
}

func TestRender(t *testing.T) {
	t.Parallel()
	res := renderWeb(t, release(t, webRelease), objectsFrom(t, closure...), "")
	golden(t, "web.yaml", dump(t, res))

	// What the golden file shows, asserted: the values' precedence
	// (spec.values over valuesFrom over the chart), the subchart archive
	// in, the disabled subchart folder out, NOTES.txt out, no Secret (its
	// only value is encrypted), the hook last.
	got := map[string]string{}
	for _, o := range res.Objects {
		got[o.Describe()] = o.Template
	}
	want := map[string]string{
		"CustomResourceDefinition widgets.acme.example": "web/crds/widgets.yaml",
		"ConfigMap web-web-config":                      "web/templates/config.yaml",
		"CronJob web-web-report":                        "web/templates/cronjob.yaml",
		"Deployment apps/web-web":                       "web/templates/deployment.yaml",
		"StatefulSet apps/web-cache":                    "web/charts/cache/templates/statefulset.yaml",
		"Job web-web-migrate":                           "web/templates/hook.yaml",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if last := res.Objects[len(res.Objects)-1]; !last.Hook || last.Template != "web/templates/hook.yaml" {
		t.Errorf("last object %s (hook %v): want the hook", last.Describe(), last.Hook)
	}
	wantImages := []ImageUse{
		{"docker.io/library/busybox@sha256:1111111111111111111111111111111111111111111111111111111111111111", "web/templates/deployment.yaml", "Deployment apps/web-web initContainers init", true},
		{"ghcr.io/acme/report:3", "web/templates/cronjob.yaml", "CronJob web-web-report containers report", true},
		{"ghcr.io/acme/web:2.0", "web/templates/deployment.yaml", "Deployment apps/web-web containers web", true},
		{"quay.io/acme/migrate:2", "web/templates/hook.yaml", "Job web-web-migrate containers migrate", true},
		{"redis:7.2", "web/charts/cache/templates/statefulset.yaml", "StatefulSet apps/web-cache containers cache", true},
	}
	if diff := cmp.Diff(wantImages, res.Images()); diff != "" {
		t.Errorf("Images (-want +got):\n%s", diff)
	}
	var reasons []string
	for _, n := range res.Notes {
		reasons = append(reasons, n.Reason)
	}
	if diff := cmp.Diff([]string{NoteEncrypted, NoteNotFound, NoteLookup, NoteGenerated}, reasons); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	for _, n := range res.Notes {
		if strings.Contains(n.Text, "AAAA") || strings.Contains(n.Text, "ENC[") {
			t.Errorf("note quotes a value: %s", n.Text)
		}
	}
	var d map[string]any
	for _, o := range res.Objects {
		if o.Describe() == "Deployment apps/web-web" {
			d = o.Map
		}
	}
	if d["spec"].(map[string]any)["replicas"] != float64(3) {
		t.Errorf("Deployment %v: want replicas 3 from valuesFrom", d)
	}
	labels := d["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["helm.toolkit.fluxcd.io/name"] != "web" || labels["helm.toolkit.fluxcd.io/namespace"] != "apps" {
		t.Errorf("labels %v: want helm-controller's origin labels", labels)
	}
}

// TestRenderSecretFromValues: a Secret the chart makes from a plaintext
// valuesFrom Secret renders (the guard reads it), and a subchart whose
// condition values turn on renders its image.
func TestRenderSecretFromValues(t *testing.T) {
	t.Parallel()
	rel := release(t, strings.Replace(webRelease, `image: {tag: "2.0"}`, `image: {tag: "2.0"}
    metrics: {enabled: true}
    cache: {enabled: false}`, 1))
	objs := objectsFrom(t, closure[0], `apiVersion: v1
kind: Secret
metadata: {name: web-secret, namespace: apps}
data:
  password: aHVudGVyMg==
`)
	res := renderWeb(t, rel, objs, "1.30")
	var secret, metrics, cache bool
	for _, o := range res.Objects {
		switch o.Describe() {
		case "Secret web-web":
			secret = o.Template == "web/templates/secret.yaml" && o.Map["stringData"].(map[string]any)["password"] == "hunter2"
		case "Deployment web-metrics":
			metrics = o.Template == "web/charts/metrics/templates/deployment.yaml"
		case "StatefulSet apps/web-cache":
			cache = true
		case "Deployment apps/web-web":
			if got := o.Map["metadata"].(map[string]any)["annotations"].(map[string]any)["kube"]; got != "v1.30" {
				t.Errorf("kube annotation %v: want v1.30 from KubeVersion", got)
			}
		}
	}
	if !secret || !metrics || cache {
		t.Errorf("secret from values %v, metrics subchart on %v, cache subchart on %v: want true, true, false", secret, metrics, cache)
	}
}

func TestRenderDeterministic(t *testing.T) {
	t.Parallel()
	rel := release(t, webRelease)
	objs := objectsFrom(t, closure...)
	a, b := dump(t, renderWeb(t, rel, objs, "")), dump(t, renderWeb(t, rel, objs, ""))
	if a != b {
		t.Errorf("two renders differ:\n%s", cmp.Diff(a, b))
	}
}

func TestRenderCapabilities(t *testing.T) {
	t.Parallel()
	c := webChart(t)
	rel := release(t, webRelease)
	res, err := Render(context.Background(), c, Input{Release: rel, KubeVersion: "v1.29.4-gke.1"}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Objects {
		if o.Describe() == "Deployment apps/web-web" {
			if got := o.Map["metadata"].(map[string]any)["annotations"].(map[string]any)["kube"]; got != "v1.29.4-gke.1" {
				t.Errorf("kube %v: want the version as given", got)
			}
		}
	}
	if _, err := Render(context.Background(), c, Input{Release: rel, KubeVersion: "one-thirty"}, DefaultLimits()); err == nil || !strings.Contains(err.Error(), "want e.g. 1.33") {
		t.Errorf("bad version: %v", err)
	}
	files := webFiles(t)
	files["Chart.yaml"] = strings.Replace(files["Chart.yaml"], "version: 1.2.3\n", "version: 1.2.3\nkubeVersion: \">=1.31.0-0\"\n", 1)
	newer, err := Load("", pack(t, "web", files), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Render(context.Background(), newer, Input{Release: rel, KubeVersion: "1.30"}, DefaultLimits())
	if err == nil || !strings.Contains(err.Error(), `chart web-1.2.3: the chart requires kubeVersion ">=1.31.0-0", which Kubernetes v1.30 is not`) {
		t.Errorf("kubeVersion: %v", err)
	}
	if _, err := Render(context.Background(), newer, Input{Release: rel}, DefaultLimits()); err != nil {
		t.Errorf("default version %s: %v", DefaultKubeVersion, err)
	}
}

// TestRenderFails: a chart that does not render is an *Error naming the
// chart and the template, never a value.
func TestRenderFails(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		template, want string
	}{
		"fail":        {`{{ fail "no database configured" }}`, `chart bad-0.1.0: render: execution error at (bad/templates/x.yaml:1:3): no database configured`},
		"required":    {`{{ required "image.tag is required" .Values.nothing }}`, "image.tag is required"},
		"parse":       {`{{ if }}`, "parse error at (bad/templates/x.yaml:1)"},
		"not yaml":    {"kind: [\n", `bad/templates/x.yaml`},
		"bad include": {`{{ include "missing" . }}`, `no template "missing"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := Load("", pack(t, "bad", map[string]string{
				"Chart.yaml":       "apiVersion: v2\nname: bad\nversion: 0.1.0\n",
				"values.yaml":      "secret: hunter2\n",
				"templates/x.yaml": tc.template,
			}), DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			_, err = Render(context.Background(), c, Input{Release: release(t, webRelease)}, DefaultLimits())
			var ce *Error
			if !errors.As(err, &ce) || ce.Chart != "bad-0.1.0" {
				t.Fatalf("err %v: want a chart error naming bad-0.1.0", err)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("err %q: want %q, and no value", err, tc.want)
			}
		})
	}
}

func TestRenderBounds(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		template string
		lim      func(*Limits)
	}{
		"time":      {`{{ range until 2000 }}{{ range until 2000 }}{{ end }}{{ end }}`, func(l *Limits) { l.RenderTime = 20 * time.Millisecond }},
		"output":    {`data: {{ repeat 4000 "x" }}`, func(l *Limits) { l.OutputBytes = 1000 }},
		"repeat":    {`{{ repeat 100000000 "x" }}`, nil},
		"until":     {`{{ until 100000000 }}`, nil},
		"untilStep": {`{{ untilStep 0 100000000 1 }}`, nil},
		"seq":       {`{{ seq 100000000 }}`, nil},
		"random":    {`{{ randAlphaNum 100000000 }}`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := Load("", pack(t, "big", map[string]string{
				"Chart.yaml":       "apiVersion: v2\nname: big\nversion: 0.1.0\n",
				"templates/x.yaml": tc.template,
			}), DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			lim := DefaultLimits()
			if tc.lim != nil {
				tc.lim(&lim)
			}
			_, err = Render(context.Background(), c, Input{Release: release(t, webRelease)}, lim)
			if err == nil {
				t.Fatal("rendered: want an error of a bound")
			}
			if tc.lim != nil && !errors.Is(err, ErrLimit) {
				t.Errorf("err %v: want ErrLimit", err)
			}
		})
	}
}
