package charts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite golden files")

// entry is one tar entry of a test archive: a regular file unless typ says
// otherwise.
type entry struct {
	name, body string
	typ        byte
	link       string
}

// packEntries writes entries as a gzipped tar, in order.
func packEntries(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	mtime := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hd := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, ModTime: mtime, Linkname: e.link}
		if typ == tar.TypeReg {
			hd.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hd); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pack writes a chart archive as `helm package` lays it out: every file
// under the folder name/, sorted.
func pack(t testing.TB, name string, files map[string]string) []byte {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var entries []entry
	for _, n := range names {
		entries = append(entries, entry{name: name + "/" + n, body: files[n]})
	}
	return packEntries(t, entries)
}

// cacheChart is a subchart packed as an archive inside web: a StatefulSet
// whose image is set through values.
func cacheChart(t testing.TB) []byte {
	return pack(t, "cache", map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
		"values.yaml": "image: redis:7.2\nglobal: {}\n",
		"templates/statefulset.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ .Release.Name }}-cache
  namespace: {{ .Release.Namespace }}
spec:
  template:
    spec:
      containers:
        - name: cache
          image: {{ .Values.image }}
`,
	})
}

// webFiles is the test chart: templates and a helper, an image set through
// values, a sidecar by digest, a Secret from values, a hook, CRDs, NOTES, a
// subchart archive (cache, condition cache.enabled) and a subchart folder
// (metrics, condition metrics.enabled, off by default), Capabilities, lookup
// and the random and clock functions.
func webFiles(t testing.TB) map[string]string {
	return map[string]string{
		"Chart.yaml": `apiVersion: v2
name: web
version: 1.2.3
appVersion: "1.0"
description: a test chart
dependencies:
  - name: cache
    version: 0.1.0
    condition: cache.enabled
  - name: metrics
    version: 0.1.0
    condition: metrics.enabled
`,
		"values.yaml": `replicas: 1
image:
  repository: ghcr.io/acme/web
  tag: "1.0"
sidecar: docker.io/library/busybox@sha256:1111111111111111111111111111111111111111111111111111111111111111
password: ""
cache:
  enabled: true
metrics:
  enabled: false
`,
		"templates/_helpers.tpl": `{{- define "web.fullname" -}}{{ .Release.Name }}-web{{- end -}}`,
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "web.fullname" . }}
  namespace: {{ .Release.Namespace }}
  annotations:
    kube: {{ .Capabilities.KubeVersion.Version | quote }}
spec:
  replicas: {{ .Values.replicas }}
  template:
    spec:
      initContainers:
        - name: init
          image: {{ .Values.sidecar }}
      containers:
        - name: web
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`,
		"templates/secret.yaml": `{{- if .Values.password }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ include "web.fullname" . }}
stringData:
  password: {{ .Values.password | quote }}
{{- end }}
`,
		"templates/cronjob.yaml": `{{- if .Capabilities.APIVersions.Has "batch/v1/CronJob" }}
apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ include "web.fullname" . }}-report
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: report
              image: ghcr.io/acme/report:3
{{- end }}
`,
		"templates/hook.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "web.fullname" . }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
spec:
  template:
    spec:
      containers:
        - name: migrate
          image: quay.io/acme/migrate:2
`,
		"templates/config.yaml": `{{- $existing := lookup "v1" "ConfigMap" .Release.Namespace "web-config" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "web.fullname" . }}-config
data:
  token: {{ randAlphaNum 8 | quote }}
  year: {{ now | date "2006" | quote }}
  found: {{ if $existing }}"yes"{{ else }}"no"{{ end }}
`,
		"templates/NOTES.txt":       "Thanks for installing {{ .Release.Name }}.\n",
		"crds/widgets.yaml":         "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.acme.example\n",
		"charts/cache-0.1.0.tgz":    string(cacheChart(t)),
		"charts/metrics/Chart.yaml": "apiVersion: v2\nname: metrics\nversion: 0.1.0\n",
		"charts/metrics/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-metrics
spec:
  template:
    spec:
      containers:
        - name: exporter
          image: prom/exporter:1
`,
	}
}

func webChart(t testing.TB) *Chart {
	t.Helper()
	c, err := Load("oci://ghcr.io/acme/charts/web:1.2.3", pack(t, "web", webFiles(t)), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// release parses a HelmRelease written as YAML.
func release(t testing.TB, doc string) *Release {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	r, err := ParseRelease(m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// objectsFrom parses a YAML stream of objects.
func objectsFrom(t testing.TB, docs ...string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, d := range docs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatal(err)
		}
		meta := m["metadata"].(map[string]any)
		ns, _ := meta["namespace"].(string)
		out[m["kind"].(string)+"/"+ns+"/"+meta["name"].(string)] = m
	}
	return out
}

func lookupIn(objs map[string]map[string]any) Lookup {
	return func(kind, ns, name string) map[string]any { return objs[kind+"/"+ns+"/"+name] }
}

// dump writes a result as golden text: each object's template and flags,
// then the object.
func dump(t testing.TB, res *Result) string {
	t.Helper()
	var b bytes.Buffer
	for _, o := range res.Objects {
		b.WriteString("# Source: " + o.Template)
		if o.Hook {
			b.WriteString(" (hook)")
		}
		if o.CRD {
			b.WriteString(" (crd)")
		}
		if !o.PostRendered {
			b.WriteString(" (not post-rendered)")
		}
		b.WriteString("\n")
		y, err := yaml.Marshal(o.Map)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(y)
		b.WriteString("---\n")
	}
	for _, n := range res.Notes {
		b.WriteString("# note " + n.Reason + ": " + n.Text + "\n")
	}
	return b.String()
}

// golden compares got with testdata/golden/<name>, rewriting it with
// -update.
func golden(t testing.TB, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/charts -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", p, diff)
	}
}

func commonRelease() common.ReleaseOptions {
	return common.ReleaseOptions{Name: "web", Namespace: "apps", Revision: 1, IsInstall: true}
}
