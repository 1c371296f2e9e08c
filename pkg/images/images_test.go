package images_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

func writeTree(t testing.TB, files map[string]string) string { return testenv.TempTree(t, files) }

func fleet(dir string, ls []schema.Layer, imgs ...string) *schema.Fleet {
	return testenv.Fleet(dir, ls, imgs...)
}

var workloads = map[string]string{
	"infrastructure/base/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [workloads.yaml, helm.yaml]
`,
	"infrastructure/base/workloads.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      initContainers: [{name: init, image: busybox:1.36}]
      containers: [{name: web, image: nginx}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kured, namespace: kube-system}
spec:
  template:
    spec:
      containers: [{name: kured, image: ghcr.io/kubereboot/kured:1.12.0}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    spec:
      containers: [{name: db, image: "index.docker.io/library/postgres:16"}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      containers: [{name: m, image: "quay.io/acme/migrate@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}]
---
apiVersion: v1
kind: Pod
metadata: {name: debug}
spec:
  containers: [{name: c, image: "registry.k8s.io/pause:3.9"}]
  ephemeralContainers: [{name: e, image: "busybox:1.36"}]
---
apiVersion: example.com/v1
kind: Rollout
metadata: {name: custom}
spec:
  template:
    spec:
      containers: [{name: c, image: "ghcr.io/acme/rollout:2"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-workload}
data: {image: "ghcr.io/acme/ignored:1"}
`,
	"infrastructure/base/helm.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: podinfo, namespace: flux-system}
spec: {type: oci, url: "oci://ghcr.io/stefanprodan/charts", interval: 10m}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: bitnami, namespace: flux-system}
spec: {url: "https://charts.bitnami.com/bitnami", interval: 10m}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: flux-system}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: 6.7.1
      sourceRef: {kind: HelmRepository, name: podinfo}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: redis, namespace: flux-system}
spec:
  interval: 10m
  chart:
    spec:
      chart: redis
      version: "18.19.4"
      sourceRef: {kind: HelmRepository, name: bitnami}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: cert-manager, namespace: flux-system}
spec:
  url: oci://quay.io/jetstack/charts/cert-manager
  ref: {tag: v1.15.0}
  interval: 10m
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: cert-manager, namespace: flux-system}
spec:
  interval: 10m
  chartRef: {kind: OCIRepository, name: cert-manager}
`,
	"infrastructure/prod/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../base]
images:
  - name: nginx
    newTag: "1.27"
`,
	"infrastructure/dev/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../base]
`,
	// A plain folder: Flux generates the kustomization.
	"apps/cron.yaml": `apiVersion: batch/v1
kind: CronJob
metadata: {name: report}
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: r, image: "ghcr.io/acme/report:3.1"}]
`,
	"apps/nested/rc.yaml": `apiVersion: v1
kind: ReplicationController
metadata: {name: legacy}
spec:
  template:
    spec:
      containers: [{name: l, image: "ghcr.io/acme/legacy:0.9"}]
`,
	"apps/README.md": "not: a manifest\n",
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, workloads)
	f := fleet(dir, []schema.Layer{
		{Name: "infrastructure", Path: "./infrastructure/${env}"},
		{Name: "apps", Path: "apps", Selector: map[string]string{"env": "prod"}},
		{Name: "apps-again", Path: "./apps/", Selector: map[string]string{"env": "prod"}},
	}, "ghcr.io/kubereboot/kured:1.12.0", "docker.io/rancher/fleet-agent:v0.13.0")

	got, err := discover(f)
	if err != nil {
		t.Fatal(err)
	}
	infra := func(env string) string { return "layer infrastructure (infrastructure/" + env + ")" }
	apps := []string{"layer apps (apps)", "layer apps-again (apps)"}
	want := &images.Result{
		Images: []images.Use{
			{Ref: "docker.io/library/busybox:1.36", Why: []string{infra("dev"), infra("prod")}},
			{Ref: "docker.io/library/nginx:1.27", Why: []string{infra("prod")}},
			{Ref: "docker.io/library/nginx:latest", Why: []string{infra("dev")}},
			{Ref: "docker.io/library/postgres:16", Why: []string{infra("dev"), infra("prod")}},
			{Ref: "docker.io/rancher/fleet-agent:v0.13.0", Why: []string{"spec.images[1]"}},
			{Ref: "ghcr.io/acme/legacy:0.9", Why: apps},
			{Ref: "ghcr.io/acme/report:3.1", Why: apps},
			{Ref: "ghcr.io/acme/rollout:2", Why: []string{infra("dev"), infra("prod")}},
			{Ref: "ghcr.io/kubereboot/kured:1.12.0", Why: []string{infra("dev"), infra("prod"), "spec.images[0]"}},
			{Ref: "ghcr.io/stefanprodan/charts/podinfo:6.7.1", Why: []string{infra("dev"), infra("prod")}},
			{Ref: "quay.io/acme/migrate@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Why: []string{infra("dev"), infra("prod")}},
			{Ref: "quay.io/jetstack/charts/cert-manager:v1.15.0", Why: []string{infra("dev"), infra("prod")}},
			{Ref: "registry.k8s.io/pause:3.9", Why: []string{infra("dev"), infra("prod")}},
		},
		LayerImages: map[string][]string{
			"apps": {"ghcr.io/acme/legacy:0.9", "ghcr.io/acme/report:3.1"},
			"infrastructure/dev": {
				"busybox:1.36", "ghcr.io/acme/rollout:2", "ghcr.io/kubereboot/kured:1.12.0",
				"index.docker.io/library/postgres:16", "nginx",
				"quay.io/acme/migrate@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				"registry.k8s.io/pause:3.9",
			},
			"infrastructure/prod": {
				"busybox:1.36", "ghcr.io/acme/rollout:2", "ghcr.io/kubereboot/kured:1.12.0",
				"index.docker.io/library/postgres:16", "nginx:1.27",
				"quay.io/acme/migrate@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				"registry.k8s.io/pause:3.9",
			},
		},
	}
	if d := cmp.Diff(want, got, cmpopts.IgnoreUnexported(images.Result{}), cmpopts.IgnoreFields(images.Result{}, "Written"), cmpopts.IgnoreFields(images.Use{}, "Fields", "Sources")); d != "" {
		t.Errorf("Discover (-want +got):\n%s", d)
	}
	for _, u := range got.Images {
		if u.Ref == "ghcr.io/kubereboot/kured:1.12.0" {
			if d := cmp.Diff([]string{"spec.images[0]", "spec.layers[0].path"}, u.Fields); d != "" {
				t.Errorf("Fields of %s (-want +got):\n%s", u.Ref, d)
			}
		}
		// Where a layer's object asks for it: file, field, object (issue
		// 39: lock problems point there).
		if u.Ref == "docker.io/library/busybox:1.36" {
			want := []images.Source{
				{File: "infrastructure/base/workloads.yaml", Field: "spec.ephemeralContainers[name=e].image", Object: "Pod debug ephemeralContainers e", Written: "busybox:1.36"},
				{File: "infrastructure/base/workloads.yaml", Field: "spec.template.spec.initContainers[name=init].image", Object: "Deployment web initContainers init", Written: "busybox:1.36"},
			}
			if d := cmp.Diff(want, u.Sources); d != "" {
				t.Errorf("Sources of %s (-want +got):\n%s", u.Ref, d)
			}
		}
	}
}

func TestDiscoverErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		files  map[string]string
		layers []schema.Layer
		images []string
		want   []string
	}{
		"layer does not build": {
			files: map[string]string{
				"broken/kustomization.yaml": "resources: [missing.yaml]\n",
			},
			layers: []schema.Layer{{Name: "broken", Path: "./broken"}},
			want:   []string{"spec.layers[0].path: layer broken: folder broken does not build with kustomize:", `"missing.yaml" is neither a file nor a folder`},
		},
		"layer path missing": {
			layers: []schema.Layer{{Name: "gone", Path: "./nowhere"}},
			want:   []string{"spec.layers[0].path: layer gone: folder nowhere does not exist"},
		},
		"invalid spec.images entry": {
			images: []string{"UPPER/Case:1"},
			want:   []string{`spec.images[0]: invalid image reference`},
		},
		"chart version range": {
			files: map[string]string{
				"helm/kustomization.yaml": "resources: [hr.yaml]\n",
				"helm/hr.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts}
spec: {type: oci, url: "oci://ghcr.io/acme/charts"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: app}
spec:
  chart:
    spec: {chart: app, version: ">=1.0.0", sourceRef: {kind: HelmRepository, name: charts}}
`,
			},
			layers: []schema.Layer{{Name: "helm", Path: "helm"}},
			want:   []string{`spec.layers[0].path: layer helm: folder helm: HelmRelease app: chart app: chart version ">=1.0.0" is not an exact version`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := writeTree(t, tc.files)
			_, err := discover(fleet(dir, tc.layers, tc.images...))
			if err == nil {
				t.Fatal("Discover succeeded")
			}
			if !problem.IsInvalid(err) {
				t.Errorf("error %v is not an input error", err)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

// discover builds f's model and discovers its images, as the pipeline does.
func discover(f *schema.Fleet) (*images.Result, error) {
	m, err := layers.Load(f, layers.DefaultOptions())
	if err != nil {
		return nil, err
	}
	return images.Discover(f, m)
}

// TestDiscoverWritten: the result holds, for every set a followed
// Kustomization applies, what Written of its objects says (the render pins
// those images without making the objects again), one slice per list.
func TestDiscoverWritten(t *testing.T) {
	t.Parallel()
	ks := func(name, path string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: " + name + ", namespace: flux-system}\n" +
			"spec: {interval: 10m, prune: true, path: " + path + ", sourceRef: {kind: GitRepository, name: flux-system}}\n"
	}
	dir := writeTree(t, map[string]string{
		"apps/kustomization.yaml": "resources: [a.yaml, b.yaml, c.yaml]\n",
		"apps/a.yaml":             ks("a", "./sub/a"),
		"apps/b.yaml":             ks("b", "./sub/b"),
		"apps/c.yaml":             ks("c", "./sub/none"),
		"sub/a/deploy.yaml":       "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec: {template: {spec: {containers: [{name: x, image: 'nginx:1.27'}, {name: y, image: busybox}]}}}\n",
		"sub/b/deploy.yaml":       "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: b}\nspec: {template: {spec: {containers: [{name: y, image: busybox}, {name: x, image: 'nginx:1.27'}]}}}\n",
		"sub/none/cm.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
	})
	f := fleet(dir, []schema.Layer{{Name: "apps", Path: "apps"}})
	opts := layers.DefaultOptions()
	opts.Source = &layers.Source{Kind: "GitRepository", Namespace: "flux-system", Name: "flux-system"}
	m, err := layers.Load(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := images.Discover(f, m)
	if err != nil {
		t.Fatal(err)
	}
	var followed []*layers.Set
	for _, s := range m.Sets {
		if s.Followed() && s.Objects != nil {
			followed = append(followed, s)
		}
	}
	if len(followed) != 3 || len(got.Written) != 3 {
		t.Fatalf("%d followed sets, %d in Written: want 3 and 3", len(followed), len(got.Written))
	}
	var lists [][]string
	for _, s := range followed {
		w, ok := got.Written[s]
		if d := cmp.Diff(images.Written(s.Objects), w); !ok || d != "" {
			t.Errorf("Written of %s: in the result %v (-Written +result):\n%s", s.Kustomization, ok, d)
		}
		if len(w) > 0 {
			lists = append(lists, w)
		}
	}
	if len(lists) != 2 || &lists[0][0] != &lists[1][0] {
		t.Errorf("the two equal lists are not one slice: %v", lists)
	}
}
