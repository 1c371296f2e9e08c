package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/test/charttest"
	"fleetgen.dev/fleetgen/test/testenv"
)

// helmLayer installs two HelmReleases on the workload cluster (issue 33):
// one whose chart is an OCI chart in the upstream registry, one whose chart
// comes from an HTTP chart repository served on loopback. fleetgen mirrors
// both charts and every image they render, and its patch of the layer's
// Kustomization points the charts' sources at the mirror and pins the
// images with a post-renderer; Flux's helm-controller installs them.
const helmLayer = "charts"

// helmController is the helm-controller test/e2e/tools/build.sh builds
// (Flux 2.9's), and the folder of its CRD.
const (
	helmController     = "bin/helm-controller-v1.6.4"
	helmControllerCRDs = "crds/helm-controller-v1.6.4"
)

var helmReleaseGVK = schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}

// addHelmLayer pushes the OCI chart hello to ex's upstream registry, serves
// the chart web from an HTTP chart repository on loopback, and writes the
// layer (selected for env prod) into the example.
func addHelmLayer(t *testing.T, ex *example) {
	t.Helper()
	deployment := func(name string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `, labels: {app: ` + name + `}}
spec:
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      containers: [{name: main, image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"}]
`
	}
	hello := charttest.Archive(t, "hello", map[string]string{
		"Chart.yaml":                "apiVersion: v2\nname: hello\nversion: 0.1.0\n",
		"values.yaml":               "image: {repository: docker.io/library/busybox, tag: \"1.36\"}\n",
		"templates/deployment.yaml": deployment("hello"),
	})
	charttest.Push(t, ex.upstream+"/charts/hello:0.1.0", hello)
	web := charttest.Archive(t, "web", map[string]string{
		"Chart.yaml":                "apiVersion: v2\nname: web\nversion: 1.2.3\n",
		"values.yaml":               "image: {repository: " + ex.upstream + "/stefanprodan/podinfo, tag: 6.7.1}\n",
		"templates/deployment.yaml": deployment("web"),
	})
	repo := charttest.Repo(t, web)
	// The own delivery's bundle whose chart `fleet apply` downloads from
	// that repository (addOwnDelivery lists it): mirror locks it, and the
	// model renders it from the chart cache.
	write(t, filepath.Join(ex.dir, filepath.FromSlash(ownWeb), "fleet.yaml"), []byte(`defaultNamespace: own
helm:
  repo: "`+repo+`"
  chart: web
  version: 1.2.3
  values: {greeting: hi}
targetCustomizations:
- {name: prod, clusterGroup: production, defaultNamespace: own-prod}
- {name: us, clusterSelector: {matchLabels: {region: us}}, defaultNamespace: own-us}
`))
	// The own delivery's bundle whose chart `fleet apply` pulls from the
	// upstream OCI registry (helm.repo names the chart itself, as Fleet reads
	// it; plain HTTP, so the test's fleet apply runs with --helm-basic-http).
	write(t, filepath.Join(ex.dir, filepath.FromSlash(ownOCI), "fleet.yaml"), []byte(`defaultNamespace: own
helm:
  repo: "oci://`+ex.upstream+`/charts/hello"
  version: 0.1.0
  values: {image: {repository: "`+ex.upstream+`/stefanprodan/podinfo", tag: 6.7.1}}
targetCustomizations:
- {name: prod, clusterGroup: production, defaultNamespace: own-prod}
- {name: us, clusterSelector: {matchLabels: {region: us}}, defaultNamespace: own-us}
`))
	files := map[string]string{
		helmLayer + "/kustomization.yaml": "resources: [namespace.yaml, sources.yaml, releases.yaml, infra.yaml]\n",
		// A HelmRelease a followed Kustomization applies, its source beside
		// it (Flux's own examples lay infrastructure out this way): fleetgen
		// pins it through a patch of the layer's Kustomization on
		// charts-infra's spec.patches.
		helmLayer + "/infra.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: charts-infra, namespace: flux-system}
spec:
  interval: 1m
  prune: true
  path: ./charts-infra
  sourceRef: {kind: GitRepository, name: flux-system}
`,
		"charts-infra/release.yaml": `apiVersion: v1
kind: Namespace
metadata: {name: infra}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: infra, namespace: infra}
spec: {type: oci, url: "oci://` + ex.upstream + `/charts", interval: 1m, insecure: true}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: infra, namespace: infra}
spec:
  interval: 1m
  chart:
    spec:
      chart: hello
      version: 0.1.0
      sourceRef: {kind: HelmRepository, name: infra}
  install: {disableWait: true}
  values:
    image: {repository: "` + ex.upstream + `/library/busybox"}
`,
		helmLayer + "/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: charts}\n",
		helmLayer + "/sources.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: upstream, namespace: charts}
spec: {type: oci, url: "oci://` + ex.upstream + `/charts", interval: 1m, insecure: true}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: web, namespace: charts}
spec: {url: "` + repo + `", interval: 1m}
`,
		helmLayer + "/releases.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: hello, namespace: charts}
spec:
  interval: 1m
  chart:
    spec:
      chart: hello
      version: 0.1.0
      sourceRef: {kind: HelmRepository, name: upstream}
  install: {disableWait: true}
  values:
    image: {repository: "` + ex.upstream + `/library/busybox"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: charts}
spec:
  interval: 1m
  chart:
    spec:
      chart: web
      version: 1.2.3
      sourceRef: {kind: HelmRepository, name: web}
  install: {disableWait: true}
`,
	}
	for p, d := range files {
		write(t, filepath.Join(ex.dir, filepath.FromSlash(p)), []byte(d))
	}
	testenv.ReplaceIn(t, ex.cfg.File, "  groups:\n",
		"    - name: "+helmLayer+"\n      path: ./"+helmLayer+"\n      selector: {env: prod}\n  groups:\n")
}

// helmControllerCRD is the HelmRelease CRD of helm-controller's build.
func helmControllerCRD(t *testing.T, tools string) []byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(tools, helmControllerCRDs, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s/%s (test/e2e/tools/build.sh helm-controller): %v", tools, helmControllerCRDs, err)
	}
	sort.Strings(files)
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(append(append(all, "---\n"...), b...), '\n')
	}
	return all
}

// startHelmController runs helm-controller against c as a local process,
// as Flux's Deployment runs it in flux-system.
func startHelmController(t *testing.T, tools, logs string, c *cluster) {
	t.Helper()
	env := []string{"KUBECONFIG=" + c.kubeconfig, "RUNTIME_NAMESPACE=flux-system"}
	start(t, logs, c.name+"-helm-controller", filepath.Join(tools, helmController), env,
		"--enable-leader-election=false", "--watch-all-namespaces=true", "--log-level=info",
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", freePort(t)),
		fmt.Sprintf("--health-addr=127.0.0.1:%d", freePort(t)),
	)
}

// helmReleasesPinned is assertion 10: both HelmReleases of the helm layer
// and the one its Kustomization charts-infra applies are Ready (installed by
// helm-controller from the charts fleetgen mirrored), and every Deployment
// they made runs only mirror images by digest (the lock's targets).
func helmReleasesPinned(ctx context.Context, c *cluster, ex *example) (string, error) {
	for _, rel := range []string{"charts/hello", "charts/web", "infra/infra"} {
		ns, n, _ := strings.Cut(rel, "/")
		err := eventually(3*time.Minute, func() error {
			hr, err := c.get(ctx, helmReleaseGVK, ns, n)
			if err != nil {
				return err
			}
			if st, reason, msg := condition(hr, "Ready"); st != "True" {
				return fmt.Errorf("HelmRelease %s: Ready=%s %s: %s", rel, st, reason, firstLine(msg))
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	l, err := lock.Load(filepath.Join(ex.dir, lock.FileName))
	if err != nil {
		return "", err
	}
	want := map[string]bool{}
	for _, img := range l.Images {
		ref, err := name.ParseReference(img.Target, name.Insecure)
		if err != nil {
			return "", err
		}
		want[ref.Context().Name()+"@"+img.Digest] = true
	}
	var deps []unstructured.Unstructured
	for _, ns := range []string{"charts", "infra"} {
		ds, err := c.list(ctx, workloadGVKs[0], ns)
		if err != nil {
			return "", err
		}
		deps = append(deps, ds...)
	}
	var seen []string
	for _, d := range deps {
		if d.GetLabels()["helm.toolkit.fluxcd.io/name"] == "" {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		for _, ci := range cs {
			img, _ := ci.(map[string]any)["image"].(string)
			if !want[img] {
				return "", fmt.Errorf("Deployment %s/%s (made by helm-controller) runs %s, not a mirror image by digest", d.GetNamespace(), d.GetName(), img)
			}
			seen = append(seen, d.GetNamespace()+"/"+d.GetName())
		}
	}
	if len(seen) != 3 {
		return "", fmt.Errorf("helm-controller made Deployments %v, want charts/hello, charts/web and infra/hello (HelmRelease infra/infra, through Kustomization charts-infra)", seen)
	}
	return strings.Join(seen, ", "), nil
}
