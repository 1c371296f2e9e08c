// Package synthetic makes large, deterministic fleets for benchmarks: n
// clusters in every registration mode, labels, groups and two layers (one
// selected by label, with a dependency and image rewrites), plus the lock and
// layer images that go with them. Nothing here is random.
package synthetic

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/charts"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/shard"
)

// Fake credentials and certificates: never real.
const (
	kubeconfig = `apiVersion: v1
kind: Config
clusters:
- cluster:
    server: https://cluster.example.test:6443
  name: c
contexts:
- context:
    cluster: c
    user: u
  name: c
current-context: c
users:
- name: u
  user:
    token: fake-token-for-benchmarks-only
`
	caPEM = `-----BEGIN CERTIFICATE-----
MIIBrDCCAVOgAwIBAgIUKL35/lL00KEicagU2dgZDYbKlkkwCgYIKoZIzj0EAwIw
KzEpMCcGA1UEAwwgZmxlZXRnZW4gdGVzdCBDQSAtIG5vdCBhIHJlYWwgQ0EwIBcN
MjYxMTIyMDcwNDI1WhgPMjEyNjEwMjkwNzA0MjVaMCsxKTAnBgNVBAMMIGZsZWV0
Z2VuIHRlc3QgQ0EgLSBub3QgYSByZWFsIENBMFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAEBOX2m2YpDkm3x+vFPIQLmw4PfeaIAjLNveFyX/sHXS5LhcNUU8i6j9wu
TGpxGfQQLSwdtXupRWEhI5yTB+RP4aNTMFEwHQYDVR0OBBYEFA+H/3HIuv3fYsqP
LBA0g1M51YxYMB8GA1UdIwQYMBaAFA+H/3HIuv3fYsqPLBA0g1M51YxYMA8GA1Ud
EwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDRwAwRAIga0e7K+linmqXtlWsB7Tc8/rv
3xuefYkAqEH6so7I3H8CIFeHenm0l7nw/CEtYRwZPvZjWLSxAM1Ce9jqBkYpm1LT
-----END CERTIFICATE-----
`
	kubeconfigFile = "kubeconfigs/shared.yaml"
	caFile         = "certs/ca.pem"
)

var (
	envs    = []string{"prod", "staging", "dev"}
	regions = []string{"eu", "us", "ap"}
	modes   = []string{
		schema.ModeAgent, schema.ModeAgent, schema.ModeAgent, schema.ModeAgent,
		schema.ModeManager, schema.ModeManager,
		schema.ModeCAPI, schema.ModeCAPI,
		schema.ModeVerrazzano, schema.ModeVerrazzano,
	}
)

// images each layer path uses (as written) and their lock entries.
var images = map[string]lock.Image{
	"ghcr.io/kubereboot/kured:1.12.0": {Source: "ghcr.io/kubereboot/kured:1.12.0", Target: "bench.azurecr.io/kubereboot/kured:1.12.0", Digest: "sha256:" + repeat("1")},
	"nginx:1.25":                      {Source: "docker.io/library/nginx:1.25", Target: "bench.azurecr.io/library/nginx:1.25", Digest: "sha256:" + repeat("2")},
	"rancher/fleet-agent:v0.13.0":     {Source: "docker.io/rancher/fleet-agent:v0.13.0", Target: "bench.azurecr.io/rancher/fleet-agent:v0.13.0", Digest: "sha256:" + repeat("3")},
}

func repeat(s string) string {
	out := ""
	for len(out) < 64 {
		out += s
	}
	return out
}

// Fleet returns a loaded, defaulted fleet of n clusters named c00000…:
// 40% agent, 20% each manager, capi and verrazzano; labels env, region and
// shard; three groups; layer infrastructure (./infrastructure/${env}, every
// cluster), apps (./apps/${region}, env=prod only, depends on
// infrastructure) and platform (./platform, every cluster: an app of apps,
// whose Flux Kustomizations nest two deep, see Write); one delivery of two
// bundles to production and eu; four Fleet controller shards (spec.shards).
// Referenced files are filled in as Load would, from kubeconfigs/shared.yaml
// and certs/ca.pem.
func Fleet(n int) *schema.Fleet {
	t := true
	f := &schema.Fleet{
		APIVersion: schema.APIVersion,
		Kind:       schema.Kind,
		Metadata:   schema.Metadata{Name: "bench"},
		Spec: schema.Spec{
			Manager: schema.Manager{
				Name:         "hub",
				Namespace:    "clusters",
				APIServerURL: "https://fleet.bench.example:6443",
				APIServerCA:  &schema.FileRef{File: caFile, Data: []byte(caPEM)},
			},
			Registry: schema.Registry{Host: "bench.azurecr.io"},
			Source: schema.Source{
				Kind:      schema.SourceGit,
				URL:       "ssh://git@github.com/bench/fleet-gitops.git",
				Ref:       "main",
				SecretRef: "flux-system",
			},
			Images: []string{"rancher/fleet-agent:v0.13.0"},
			Layers: []schema.Layer{
				{Name: "infrastructure", Path: "./infrastructure/${env}", Wait: true, Timeout: "5m", Prune: &t},
				{Name: "apps", Path: "./apps/${region}", DependsOn: []string{"infrastructure"}, Selector: map[string]string{"env": "prod"}, Substitute: map[string]string{"domain": "bench.example"}},
				{Name: "platform", Path: "./platform"},
			},
			Groups: []schema.Group{
				{Name: "production", Selector: map[string]string{"env": "prod"}},
				{Name: "eu", Selector: map[string]string{"region": "eu"}},
				{Name: "all"},
			},
			Deliveries: []schema.Delivery{{
				Name: "platform", Repo: "https://github.com/bench/platform.git", Branch: "main",
				Bundles: []schema.DeliveryBundle{{Base: "monitoring"}, {Base: "logging"}},
				Targets: []schema.DeliveryTarget{{Name: "prod", ClusterGroup: "production"}, {Name: "eu", ClusterSelector: map[string]string{"region": "eu"}}},
			}},
			Shards:   &schema.Shards{Fleet: []string{"shard-a", "shard-b", "shard-c", "shard-d"}},
			Defaults: schema.Defaults{Labels: map[string]string{"org": "bench"}, TokenTTL: "240h"},
		},
		File: "fleet.yaml",
		Dir:  ".",
	}
	f.Spec.Clusters = make([]schema.Cluster, n)
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		c.Name = fmt.Sprintf("c%05d", i)
		c.Labels = map[string]string{
			"env":    envs[i%len(envs)],
			"region": regions[(i/3)%len(regions)],
			"shard":  fmt.Sprintf("s%d", i%16),
		}
		c.Registration.Mode = modes[i%len(modes)]
		switch c.Registration.Mode {
		case schema.ModeManager:
			c.Registration.Kubeconfig = &schema.FileRef{File: kubeconfigFile, Data: []byte(kubeconfig)}
		case schema.ModeVerrazzano:
			if i%2 == 0 {
				c.Registration.CACert = &schema.FileRef{File: caFile, Data: []byte(caPEM)}
			}
		}
	}
	schema.Default(f)
	return f
}

// Lock returns the lock for f: a client ID for every agent cluster, an
// entry for every image LayerImages and spec.images use, and the shards a
// render assigns (package shard), so that a render changes nothing in it.
func Lock(f *schema.Fleet) *lock.Lock {
	l := lock.New()
	var imgs []lock.Image
	for _, img := range images {
		imgs = append(imgs, img)
	}
	l.SetImages(imgs)
	for i, c := range f.Spec.Clusters {
		if c.Registration.Mode == schema.ModeAgent {
			l.Clients = append(l.Clients, lock.Client{Cluster: c.Name, ClientID: fmt.Sprintf("%032x", i+1)})
		}
	}
	// Clients are already sorted: names are zero-padded indexes.
	shard.Compute(f, l, shard.Options{}).Apply(l)
	return l
}

// LayerImages returns generate.Options.LayerImages for f: every expanded
// infrastructure path uses kured and nginx, every apps path nginx.
func LayerImages(f *schema.Fleet) map[string][]string {
	out := map[string][]string{}
	for _, env := range envs {
		out["infrastructure/"+env] = []string{"ghcr.io/kubereboot/kured:1.12.0", "nginx:1.25"}
	}
	for _, region := range regions {
		out["apps/"+region] = []string{"nginx:1.25"}
	}
	out["platform"] = nil // its images are in the Kustomizations it leads to
	return out
}

// platform is the app-of-apps layer (every cluster): its build is a Flux
// Kustomization that the cluster's variables substitute, which leads to one
// whose objects use the cluster's name (a set per cluster) and region, which
// leads to one per region.
var platform = map[string]string{
	"platform/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- apps.yaml\n",
	"platform/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: platform-apps
  namespace: flux-system
spec:
  interval: 10m
  prune: true
  path: ./platform/apps
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substitute:
      cluster_name: ${cluster}
      region: ${region}
`,
	"platform/apps/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- config.yaml\n- deployment.yaml\n- addons.yaml\n",
	"platform/apps/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: platform
  namespace: platform
data:
  cluster: ${cluster_name}
  region: ${region}
`,
	"platform/apps/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: platform
  namespace: platform
  labels:
    region: ${region}
spec:
  selector:
    matchLabels: {app: platform}
  template:
    metadata:
      labels: {app: platform, region: "${region}"}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        env:
        - {name: REGION, value: "${region}"}
`,
	"platform/apps/addons.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: platform-addons
  namespace: flux-system
spec:
  interval: 10m
  prune: true
  path: ./platform/addons
  targetNamespace: addons
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substitute:
      region: ${region}
`,
	"platform/addons/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- node-agent.yaml\n",
	"platform/addons/node-agent.yaml": `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: node-agent
  labels:
    region: ${region}
spec:
  selector:
    matchLabels: {app: node-agent}
  template:
    metadata:
      labels: {app: node-agent}
    spec:
      containers:
      - name: agent
        image: nginx:1.25
`,
}

// Write writes fleet.yaml, fleet.lock.yaml and the files they refer to for a
// fleet of n clusters into dir, plus each layer's folder (a kustomization
// with one Deployment using the images above), so that the CLI can load,
// discover images and render it.
func Write(dir string, n int) error {
	f := Fleet(n)
	data, err := yaml.Marshal(f)
	if err != nil {
		return fmt.Errorf("marshal fleet: %w", err)
	}
	files := map[string][]byte{
		"fleet.yaml":   data,
		lock.FileName:  Lock(f).Marshal(),
		kubeconfigFile: []byte(kubeconfig),
		caFile:         []byte(caPEM),
	}
	for path, imgs := range LayerImages(f) {
		if len(imgs) == 0 {
			continue
		}
		files[path+"/kustomization.yaml"] = []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deployment.yaml\n")
		var containers string
		for i, img := range imgs {
			containers += fmt.Sprintf("      - name: c%d\n        image: %s\n", i, img)
		}
		files[path+"/deployment.yaml"] = []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: bench\n  namespace: default\nspec:\n  selector:\n    matchLabels: {app: bench}\n  template:\n    metadata:\n      labels: {app: bench}\n    spec:\n      containers:\n" + containers)
	}
	for name, d := range platform {
		files[name] = []byte(d)
	}
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ChartLayer is the layer WriteCharts adds: one HelmRelease per cluster,
// its values set by ${env}, so that the 10,000 clusters share three renders.
const ChartLayer = "charts"

// WriteCharts adds to the fleet Write wrote in dir a layer that every
// cluster selects, holding one HelmRelease of an OCI chart whose image is
// set through values, and the chart's digest and image in the lock. With
// render the chart is in the chart cache below dir/cache (XDG_CACHE_HOME)
// and renders; without, the HelmRelease's source is a GitRepository, which
// fleetgen does not render: the same fleet with that layer's chart not
// rendered.
func WriteCharts(dir string, render bool) error {
	chart, err := chartArchive()
	if err != nil {
		return err
	}
	c, err := charts.Load("", chart, charts.DefaultLimits())
	if err != nil {
		return err
	}
	a, err := charts.Republish(c, chart)
	if err != nil {
		return err
	}
	cache := charts.NewCache(filepath.Join(dir, "cache", "fleetgen", "charts"))
	if err := cache.PutArtifact(a, charts.DefaultLimits()); err != nil {
		return err
	}
	source := "kind: HelmRepository\nmetadata: {name: bench, namespace: apps}\nspec: {type: oci, url: oci://ghcr.io/bench/charts, interval: 10m}\n"
	ref := "{kind: HelmRepository, name: bench}"
	if !render {
		source = "kind: GitRepository\nmetadata: {name: bench, namespace: apps}\nspec: {url: https://github.com/bench/charts, interval: 10m, ref: {branch: main}}\n"
		ref = "{kind: GitRepository, name: bench}"
	}
	files := map[string]string{
		ChartLayer + "/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [release.yaml]\n",
		ChartLayer + "/release.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\n" + source + `---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 10m
  chart:
    spec: {chart: web, version: 1.0.0, sourceRef: ` + ref + `}
  values:
    env: ${env}
    image: {repository: "ghcr.io/bench/web-${env}", tag: "1.0"}
`,
	}
	fleet, err := os.ReadFile(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		return err
	}
	var f schema.Fleet
	if err := yaml.Unmarshal(fleet, &f); err != nil {
		return err
	}
	f.Spec.Layers = append(f.Spec.Layers, schema.Layer{Name: ChartLayer, Path: "./" + ChartLayer})
	data, err := yaml.Marshal(&f)
	if err != nil {
		return err
	}
	files["fleet.yaml"] = string(data)
	l, err := lock.Load(filepath.Join(dir, lock.FileName))
	if err != nil {
		return err
	}
	imgs := append([]lock.Image(nil), l.Images...)
	imgs = append(imgs, lock.Image{Source: "ghcr.io/bench/charts/web:1.0.0", Target: "bench.azurecr.io/bench/charts/web:1.0.0", Digest: a.Digest})
	for i, env := range envs {
		imgs = append(imgs, lock.Image{Source: "ghcr.io/bench/web-" + env + ":1.0", Target: "bench.azurecr.io/bench/web-" + env + ":1.0", Digest: "sha256:" + repeat(fmt.Sprint(4+i))})
	}
	l.SetImages(imgs)
	files[lock.FileName] = string(l.Marshal())
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// chartArchive is the chart of WriteCharts' HelmRelease: a Deployment and a
// Service, its image from values.
func chartArchive() ([]byte, error) {
	files := map[string]string{
		"web/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"web/values.yaml": "env: dev\nimage: {repository: ghcr.io/bench/web, tag: \"1.0\"}\n",
		"web/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}, labels: {env: {{ .Values.env }}}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"}]
`,
		"web/templates/service.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: {{ .Release.Name }}}\nspec:\n  ports: [{port: 80}]\n",
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		body := files[name]
		hd := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
		if err := tw.WriteHeader(hd); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
