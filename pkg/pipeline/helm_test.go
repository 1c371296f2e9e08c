package pipeline_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/charts"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/review"
	"fleetgen.dev/fleetgen/test/charttest"
	"fleetgen.dev/fleetgen/test/crdcheck"
	"fleetgen.dev/fleetgen/test/testenv"
)

// helmWorld is a fleet whose layer apps installs three HelmReleases: an OCI
// chart (podinfo, its image set through values), a chart of an HTTP chart
// repository on loopback (web: an image by digest, a hook, a post-renderer
// of its own) and an OCI chart by chartRef with a subchart (app and redis),
// every image in a source registry src, mirrored to dst.
type helmWorld struct {
	src, dst, repo string
	file           string
	cache          string
	// webDigest is the digest web's image is written by.
	webDigest string
}

func newHelmWorld(t *testing.T) *helmWorld {
	t.Helper()
	w := &helmWorld{
		src:   quietRegistry(t),
		dst:   quietRegistry(t),
		cache: t.TempDir(),
	}
	for _, ref := range []string{"stefanprodan/podinfo:6.7.1", "acme/web:1.0.0", "library/busybox:1.36", "acme/app:2.0.0", "library/redis:7.2"} {
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		tag, err := name.NewTag(w.src+"/"+ref, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(tag, img); err != nil {
			t.Fatal(err)
		}
		if ref == "acme/web:1.0.0" {
			d, _ := img.Digest()
			w.webDigest = d.String()
		}
	}
	charttest.Push(t, w.src+"/charts/podinfo:6.7.1", charttest.Archive(t, "podinfo", podinfoChart))
	charttest.Push(t, w.src+"/charts/app:2.0.0", charttest.Archive(t, "app", appChart(w.src)))
	w.repo = charttest.Repo(t, charttest.Archive(t, "web", webChart(w.src, w.webDigest)))
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{
		"certs/manager-ca.pem": string(testCA(t)),
		"fleet.yaml": `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: helm}
spec:
  manager:
    apiServerURL: https://hub.example.com:443
    apiServerCA: {file: certs/manager-ca.pem}
  registry: {host: "` + w.dst + `", insecure: true}
  source: {kind: git, url: https://git.example.com/fleet.git}
  layers:
    - name: apps
      path: ./apps
  defaults: {registration: capi}
  clusters:
    - name: edge-1
      labels: {replicas: "2"}
    - name: edge-2
      labels: {replicas: "3"}
      kubernetesVersion: "1.33"
`,
		"apps/kustomization.yaml": "resources: [sources.yaml, releases.yaml]\n",
		"apps/sources.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: podinfo, namespace: apps}
spec: {type: oci, url: "oci://` + w.src + `/charts", interval: 10m}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: web, namespace: apps}
spec: {url: "` + w.repo + `", interval: 10m}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: app, namespace: apps}
spec:
  url: oci://` + w.src + `/charts/app
  ref: {tag: 2.0.0}
  interval: 10m
`,
		"apps/releases.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: 6.7.1
      sourceRef: {kind: HelmRepository, name: podinfo}
  values:
    replicaCount: ${replicas}
    image: {repository: "` + w.src + `/stefanprodan/podinfo", tag: 6.7.1}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: web
      version: 1.0.0
      sourceRef: {kind: HelmRepository, name: web}
  postRenderers:
    - kustomize:
        patches:
          - target: {kind: Deployment}
            patch: |
              - op: add
                path: /metadata/labels/team
                value: web
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: app, namespace: apps}
spec:
  interval: 10m
  chartRef: {kind: OCIRepository, name: app}
  values:
    redis: {enabled: true}
`,
	})
	w.file = filepath.Join(dir, "fleet.yaml")
	return w
}

// quietRegistry starts go-containerregistry's registry on loopback, its log
// discarded, and returns its host.
func quietRegistry(t *testing.T) string {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

var podinfoChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: podinfo\nversion: 6.7.1\n",
	"values.yaml": "replicaCount: 1\nimage: {repository: ghcr.io/stefanprodan/podinfo, tag: 6.7.0}\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicaCount }}
  selector: {matchLabels: {app: podinfo}}
  template:
    metadata: {labels: {app: podinfo}}
    spec:
      containers:
        - name: podinfo
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`,
}

func webChart(src, digest string) map[string]string {
	return map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"values.yaml": "image: " + src + "/acme/web@" + digest + "\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "{{ .Values.image }}"}]
`,
		"templates/hook.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: web-migrate
  annotations: {"helm.sh/hook": pre-install}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "` + src + `/library/busybox:1.36"}]
`,
	}
}

func appChart(src string) map[string]string {
	return map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: app\nversion: 2.0.0\ndependencies:\n  - {name: redis, version: 7.0.0, condition: redis.enabled}\n",
		"values.yaml": "redis: {enabled: false}\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers: [{name: app, image: "` + src + `/acme/app:2.0.0"}]
`,
		"charts/redis/Chart.yaml":  "apiVersion: v2\nname: redis\nversion: 7.0.0\n",
		"charts/redis/values.yaml": "image: " + src + "/library/redis:7.2\n",
		"charts/redis/templates/statefulset.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: redis}
spec:
  selector: {matchLabels: {app: redis}}
  template:
    metadata: {labels: {app: redis}}
    spec:
      containers: [{name: redis, image: "{{ .Values.image }}"}]
`,
	}
}

func (w *helmWorld) cfg() pipeline.Config {
	return pipeline.Config{File: w.file, ChartCache: w.cache}
}

// TestHelmReleases is issue 33's "done when": every image of the three
// charts is listed, mirrored and pinned by the post-renderer render writes,
// and a `helm template` of each chart as mirrored, post-rendered by it,
// names only mirror references by digest.
func TestHelmReleases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newHelmWorld(t)

	// Before mirror: every chart is "run fleetgen mirror", by name.
	_, err := pipeline.Validate(ctx, w.cfg())
	if !problem.IsInvalid(err) || !strings.Contains(err.Error(), "chart") || !strings.Contains(err.Error(), "run `fleetgen mirror`") {
		t.Fatalf("Validate before mirror = %v, want every chart not mirrored", err)
	}

	if _, err := pipeline.Mirror(ctx, w.cfg(), pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := lock.Load(filepath.Join(filepath.Dir(w.file), lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Charts) != 1 || l.Charts[0].Chart != "web" || l.Charts[0].Repository != w.repo {
		t.Fatalf("lock charts = %+v, want web of %s", l.Charts, w.repo)
	}
	var sources []string
	for _, img := range l.Images {
		sources = append(sources, strings.TrimPrefix(img.Source, w.src+"/"))
	}
	want := []string{"acme/app:2.0.0", "acme/web@" + w.webDigest, "charts/app:2.0.0", "charts/podinfo:6.7.1", "library/busybox:1.36", "library/redis:7.2", "stefanprodan/podinfo:6.7.1"}
	if strings.Join(sources, " ") != strings.Join(want, " ") {
		t.Fatalf("locked images:\n%s\nwant\n%s", strings.Join(sources, "\n"), strings.Join(want, "\n"))
	}

	imgs, err := pipeline.Images(ctx, w.cfg(), pipeline.ImagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	why := map[string]string{}
	for _, img := range imgs {
		why[strings.TrimPrefix(img.Ref, w.src+"/")] = strings.Join(img.NeededBy, "; ")
		if img.Locked == nil {
			t.Errorf("image %s not locked", img.Ref)
		}
	}
	for ref, w := range map[string]string{
		"stefanprodan/podinfo:6.7.1": "layer apps: HelmRelease apps/podinfo chart podinfo template podinfo/templates/deployment.yaml",
		"library/redis:7.2":          "layer apps: HelmRelease apps/app chart app template app/charts/redis/templates/statefulset.yaml",
		"library/busybox:1.36":       "layer apps: HelmRelease apps/web chart web template web/templates/hook.yaml",
	} {
		if !strings.Contains(why[ref], w) {
			t.Errorf("why %s = %q, want %q", ref, why[ref], w)
		}
	}

	out := t.TempDir()
	if err := pipeline.Render(ctx, w.cfg(), pipeline.RenderOptions{OutDir: out}); err != nil {
		t.Fatal(err)
	}
	helm := helmBinary(t)
	for _, cluster := range []string{"edge-1", "edge-2"} {
		data, err := os.ReadFile(filepath.Join(out, "clusters", cluster, "apps.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := crdcheck.Validate(data); err != nil {
			t.Errorf("%s: apps.yaml: %v", cluster, err)
		}
		var k struct {
			Spec struct {
				Images  []map[string]string `json:"images"`
				Patches []struct {
					Patch  string            `json:"patch"`
					Target map[string]string `json:"target"`
				} `json:"patches"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &k); err != nil {
			t.Fatal(err)
		}
		if len(k.Spec.Images) != 0 {
			t.Errorf("%s: spec.images = %v: chart images are pinned by the post-renderer, not Flux's spec.images", cluster, k.Spec.Images)
		}
		patches := map[string]string{}
		for _, p := range k.Spec.Patches {
			patches[p.Target["kind"]+"/"+p.Target["name"]] = p.Patch
		}
		if len(patches) != 6 {
			t.Fatalf("%s: patches for %v, want the 3 HelmReleases and their 3 sources", cluster, sortedKeys(patches))
		}
		if !strings.Contains(patches["HelmRepository/web"], `"oci://`+w.dst) || !strings.Contains(patches["OCIRepository/app"], `"digest": "sha256:`) {
			t.Errorf("%s: source patches do not point at the mirror:\n%s\n%s", cluster, patches["HelmRepository/web"], patches["OCIRepository/app"])
		}
		if !strings.Contains(patches["HelmRelease/web"], `"/spec/postRenderers/-"`) {
			t.Errorf("%s: web's post-renderer does not go beside its own:\n%s", cluster, patches["HelmRelease/web"])
		}
		for _, rel := range []struct{ name, chart, values string }{
			{"podinfo", "podinfo", "image: {repository: \"" + w.src + "/stefanprodan/podinfo\", tag: 6.7.1}\n"},
			{"web", "web", ""},
			{"app", "app", "redis: {enabled: true}\n"},
		} {
			images := postRendered(t, helm, l, w, rel.chart, rel.values, patches["HelmRelease/"+rel.name])
			if len(images) == 0 {
				t.Errorf("%s: %s: helm template rendered no image", cluster, rel.name)
			}
			for _, img := range images {
				if !strings.HasPrefix(img, w.dst+"/") || !strings.Contains(img, "@sha256:") || strings.Contains(img, ":2.0.0@") {
					t.Errorf("%s: %s: helm template plus fleetgen's post-renderer runs %s: want a mirror reference by digest only", cluster, rel.name, img)
				}
			}
		}
	}
}

// postRendered runs `helm template` of chart as the mirror holds it (pulled
// by its locked digest) with values, then the kustomize images of
// fleetgen's post-renderer in patch (the last of helm-controller's post-
// renderers), as helm-controller applies it with kustomize, and returns every
// container image of the result.
func postRendered(t *testing.T, helm string, l *lock.Lock, w *helmWorld, chart, values, patch string) []string {
	t.Helper()
	var digest, repo string
	for _, img := range l.Images {
		if strings.HasSuffix(img.Source, "/charts/"+chart+":"+map[string]string{"podinfo": "6.7.1", "app": "2.0.0"}[chart]) {
			digest, repo = img.Digest, img.Repository()
		}
	}
	for _, c := range l.Charts {
		if c.Chart == chart {
			digest, repo = c.Digest, strings.SplitN(c.Target, ":"+c.Version, 2)[0]
		}
	}
	ref, err := name.NewDigest(repo+"@"+digest, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	a, err := charts.PullOCI(ref, charts.DefaultLimits())
	if err != nil {
		t.Fatalf("pull %s from the mirror: %v", chart, err)
	}
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{"chart.tgz": string(a.Archive), "values.yaml": values})
	cmd := exec.Command(helm, "template", chart, filepath.Join(dir, "chart.tgz"), "--values", filepath.Join(dir, "values.yaml"), "--namespace", "apps")
	rendered, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %s: %v", chart, err)
	}
	var ops []struct {
		Value any `json:"value"`
	}
	if err := yaml.Unmarshal([]byte(patch), &ops); err != nil || len(ops) != 1 {
		t.Fatalf("post-renderer patch %q: %v", patch, err)
	}
	pr := ops[0].Value
	if list, ok := pr.([]any); ok {
		pr = list[len(list)-1]
	}
	imagesYAML, err := yaml.Marshal(pr.(map[string]any)["kustomize"].(map[string]any)["images"])
	if err != nil {
		t.Fatal(err)
	}
	fs := filesys.MakeFsInMemory()
	_ = fs.WriteFile("/k/rendered.yaml", rendered)
	_ = fs.WriteFile("/k/kustomization.yaml", []byte("resources: [rendered.yaml]\nimages:\n"+indent(string(imagesYAML))))
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/k")
	if err != nil {
		t.Fatalf("kustomize images of %s: %v", chart, err)
	}
	var out []string
	for _, r := range res.Resources() {
		m, _ := r.Map()
		for _, c := range containersOf(m) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

func containersOf(m map[string]any) []string {
	spec, _ := m["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	ps, _ := tmpl["spec"].(map[string]any)
	var out []string
	for _, f := range []string{"initContainers", "containers"} {
		list, _ := ps[f].([]any)
		for _, c := range list {
			cm, _ := c.(map[string]any)
			if img, _ := cm["image"].(string); img != "" {
				out = append(out, img)
			}
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// helmBinary returns the helm the chart tests run: $FLEETGEN_HELM, or helm
// on PATH; without either the test is skipped (failed under CI).
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FLEETGEN_HELM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no helm: set FLEETGEN_HELM or put helm on PATH (.ci/run builds it)")
	}
	t.Skip("no helm: set FLEETGEN_HELM or put helm on PATH (.ci/run builds it)")
	return ""
}

// chartFleet writes a fleet of two clusters whose layer apps installs
// release (HelmRelease YAML) from the OCI HelmRepository charts, in a source
// registry holding chart (pushed as charts/<name>:<version>) and the image
// acme/app:1.0.0. It returns the world; repo is extra layer YAML (another
// source).
func chartFleet(t *testing.T, chart map[string]string, release, extra string) *helmWorld {
	t.Helper()
	w := &helmWorld{src: quietRegistry(t), dst: quietRegistry(t), cache: t.TempDir()}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(w.src+"/acme/app:1.0.0", name.Insecure)
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	if chart != nil {
		var meta struct{ Name, Version string }
		if err := yaml.Unmarshal([]byte(chart["Chart.yaml"]), &meta); err != nil {
			t.Fatal(err)
		}
		charttest.Push(t, w.src+"/charts/"+meta.Name+":"+meta.Version, charttest.Archive(t, meta.Name, chart))
	}
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{
		"certs/manager-ca.pem": string(testCA(t)),
		"fleet.yaml": `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: helm}
spec:
  manager:
    apiServerURL: https://hub.example.com:443
    apiServerCA: {file: certs/manager-ca.pem}
  registry: {host: "` + w.dst + `", insecure: true}
  source: {kind: git, url: https://git.example.com/fleet.git}
  layers:
    - name: apps
      path: ./apps
  defaults: {registration: capi}
  clusters:
    - name: edge-1
    - name: edge-2
`,
		"apps/kustomization.yaml": "resources: [sources.yaml, release.yaml]\n",
		"apps/sources.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: apps}
spec: {type: oci, url: "oci://` + w.src + `/charts", interval: 10m}
` + extra,
		"apps/release.yaml": release,
	})
	w.file = filepath.Join(dir, "fleet.yaml")
	return w
}

func release(chart, version string, values string) string {
	return `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: db, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: ` + chart + `
      version: "` + version + `"
      sourceRef: {kind: HelmRepository, name: charts}
  values:
` + values
}

// TestHelmSecretGuard: a Secret a chart makes from a HelmRelease's plaintext
// values is refused by validate, render and diff (exit 2), naming the
// HelmRelease, the chart's template and the clusters, never the value; the
// output folder stays as it was.
func TestHelmSecretGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	chart := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: db\nversion: 1.0.0\n",
		"templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata: {name: db-auth}
stringData:
  password: {{ .Values.auth.password | quote }}
`,
	}
	w := chartFleet(t, chart, release("db", "1.0.0", "    auth: {}\n"), "")
	if _, err := pipeline.Mirror(ctx, w.cfg(), pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WriteTree(t, filepath.Dir(w.file), map[string]string{"apps/release.yaml": release("db", "1.0.0", "    auth: {password: hunter2-very-secret}\n")})
	out := t.TempDir()
	_, merr := pipeline.Mirror(ctx, w.cfg(), pipeline.MirrorOptions{})
	_, verr := pipeline.Validate(ctx, w.cfg())
	rerr := pipeline.Render(ctx, w.cfg(), pipeline.RenderOptions{OutDir: out})
	_, _, derr := pipeline.Diff(ctx, w.cfg(), pipeline.RenderOptions{OutDir: out})
	for cmd, err := range map[string]error{"mirror": merr, "validate": verr, "render": rerr, "diff": derr} {
		if !problem.IsInvalid(err) {
			t.Fatalf("%s = %v, want an input error", cmd, err)
		}
		msg := err.Error()
		for _, want := range []string{`db/templates/secret.yaml: Secret apps/db-auth`, `through HelmRelease apps/db, its chart rendered`, "clusters edge-1, edge-2"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q lacks %q", cmd, msg, want)
			}
		}
		if strings.Contains(msg, "hunter2") {
			t.Errorf("%s quotes the value: %q", cmd, msg)
		}
	}
	if got := testenv.ReadTree(t, out); len(got) != 0 {
		t.Errorf("render wrote %v", sortedKeys(got))
	}
}

// TestHelmBadInput: what keeps a chart from rendering or mirroring is an
// error naming the HelmRelease, the chart and the clusters, exit 2 for the
// input's and 1 for the network's, and mirror writes no lock.
func TestHelmBadInput(t *testing.T) {
	t.Parallel()
	app := func(tmpl string) map[string]string {
		return map[string]string{"Chart.yaml": "apiVersion: v2\nname: app\nversion: 1.0.0\n", "templates/t.yaml": tmpl}
	}
	deployment := func(image string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  template:
    spec:
      containers: [{name: app, image: "` + image + `"}]
`
	}
	closed := httptest.NewServer(nil)
	closed.Close()
	for name, tc := range map[string]struct {
		chart           map[string]string
		version, values string
		extra, release  string
		invalid         bool
		want            []string
	}{
		"does not render": {
			chart: app(`{{ fail "the chart refuses" }}`), version: "1.0.0", invalid: true,
			want: []string{"HelmRelease apps/db", "charts/app:1.0.0: render: execution error at (app/templates/t.yaml:1:3)", "clusters edge-1, edge-2"},
		},
		"unresolvable image": {
			chart: app(deployment(`{{ .Values.image.repository }}:{{ .Values.image.tag }}`)), version: "1.0.0", invalid: true, values: "    image: {repository: \"\"}\n",
			want: []string{"HelmRelease apps/db chart app template app/templates/t.yaml", "invalid image reference"},
		},
		"a range": {
			chart: app(deployment("x")), version: ">=1.0.0", invalid: true,
			want: []string{"HelmRelease apps/db", "not an exact version"},
		},
		"no version": {
			chart: app(deployment("x")), version: "", invalid: true,
			want: []string{"HelmRelease apps/db", `chart app has no spec.chart.spec.version`},
		},
		"version missing in the repository": {
			chart: app(deployment("x")), version: "1.0.1", invalid: false,
			want: []string{"chart", "charts/app:1.0.1", "1 of 1 images not mirrored"},
		},
		"unreachable http repository": {
			version: "1.0.0", invalid: false,
			extra: `---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: gone, namespace: apps}
spec: {url: "` + closed.URL + `", interval: 10m}
`,
			release: strings.Replace(release("app", "1.0.0", "    {}\n"), "name: charts}", "name: gone}", 1),
			want:    []string{"chart \"" + closed.URL + " app 1.0.0\"", "HelmRelease apps/db (clusters edge-1, edge-2)", "GET " + closed.URL + "/index.yaml"},
		},
		"over a bound": {
			chart: map[string]string{"Chart.yaml": "apiVersion: v2\nname: app\nversion: 1.0.0\n", "templates/big.yaml": strings.Repeat("#", 6<<20)},
			extra: "", version: "1.0.0", invalid: true,
			want: []string{"HelmRelease apps/db", "charts/app:1.0.0", "file templates/big.yaml of 6291456 bytes: over a bound", "clusters edge-1, edge-2"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rel := tc.release
			if rel == "" {
				rel = release("app", tc.version, orEmpty(tc.values))
			}
			w := chartFleet(t, tc.chart, rel, tc.extra)
			_, err := pipeline.Mirror(context.Background(), w.cfg(), pipeline.MirrorOptions{})
			if err == nil {
				t.Fatal("Mirror succeeded")
			}
			if problem.IsInvalid(err) != tc.invalid {
				t.Errorf("Mirror = %v: input error %v, want %v", err, problem.IsInvalid(err), tc.invalid)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Mirror = %q, want it to contain %q", err, want)
				}
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(w.file), lock.FileName)); !os.IsNotExist(err) {
				t.Errorf("mirror wrote the lock (%v)", err)
			}
		})
	}
}

func orEmpty(values string) string {
	if values == "" {
		return "    {}\n"
	}
	return values
}

// TestHelmDiff: diff shows a chart's rendered objects like any others: a
// change of a HelmRelease's values that moves the chart's Deployment shows
// that Deployment changed for each cluster.
func TestHelmDiff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newHelmWorld(t)
	if _, err := pipeline.Mirror(ctx, w.cfg(), pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := pipeline.Render(ctx, w.cfg(), pipeline.RenderOptions{OutDir: out}); err != nil {
		t.Fatal(err)
	}
	// DIR is a checkout of the published tree: it holds the layer folder.
	dir := filepath.Dir(w.file)
	testenv.WriteTree(t, filepath.Join(out, "apps"), testenv.ReadTree(t, filepath.Join(dir, "apps")))
	testenv.ReplaceIn(t, filepath.Join(dir, "apps", "releases.yaml"), "replicaCount: ${replicas}", "replicaCount: 7")
	rep, _, err := pipeline.Diff(ctx, w.cfg(), pipeline.RenderOptions{OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, c := range rep.Clusters {
		for _, o := range c.Objects {
			got[c.Name] = append(got[c.Name], o.Change+" "+o.Kind+" "+o.Namespace+"/"+o.Name)
		}
	}
	for _, c := range []string{"edge-1", "edge-2"} {
		if !slices.Contains(got[c], review.Update+" Deployment apps/podinfo") {
			t.Errorf("%s: diff objects %v, want the chart's Deployment apps/podinfo changed", c, got[c])
		}
		for _, o := range got[c] {
			if !strings.Contains(o, "podinfo") {
				t.Errorf("%s: %s changed too", c, o)
			}
		}
	}
}

// TestHelmChartCache: once mirror ran, a fresh runner (an empty chart cache)
// renders only with --fetch-charts naming the mirror fleet.yaml names,
// reading the charts from it by digest; without, each chart is "run
// fleetgen mirror"; a cache whose bytes are not the locked ones is refused.
func TestHelmChartCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newHelmWorld(t)
	if _, err := pipeline.Mirror(ctx, w.cfg(), pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh := w.cfg()
	fresh.ChartCache = t.TempDir()
	if _, err := pipeline.Validate(ctx, fresh); !problem.IsInvalid(err) || !strings.Contains(err.Error(), "is not in the chart cache: run `fleetgen mirror`") {
		t.Fatalf("Validate with an empty chart cache = %v", err)
	}
	other := fresh
	other.FetchCharts = "registry.example"
	if _, err := pipeline.Validate(ctx, other); !problem.IsInvalid(err) || !strings.Contains(err.Error(), "--fetch-charts registry.example: spec.registry.host is") {
		t.Fatalf("Validate --fetch-charts of another host = %v", err)
	}
	fresh.FetchCharts = w.dst
	if _, err := pipeline.Validate(ctx, fresh); err != nil {
		t.Fatalf("Validate --fetch-charts %s = %v", w.dst, err)
	}
	// The cache now holds them: offline again.
	fresh.FetchCharts = ""
	if _, err := pipeline.Validate(ctx, fresh); err != nil {
		t.Fatalf("Validate after the fetch = %v", err)
	}
	// Poison every archive in the cache: same name, other bytes.
	blobs, _ := filepath.Glob(filepath.Join(fresh.ChartCache, "blobs", "sha256", "*"))
	for _, b := range blobs {
		if data, _ := os.ReadFile(b); len(data) > 0 && data[0] == 0x1f { // gzip: an archive
			if err := os.WriteFile(b, append(data, 0), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err := pipeline.Validate(ctx, fresh)
	if err == nil || problem.IsInvalid(err) || !strings.Contains(err.Error(), "are not those fleet.lock.yaml locks") {
		t.Fatalf("Validate with a poisoned cache = %v, want a runtime error refusing the bytes", err)
	}
}
