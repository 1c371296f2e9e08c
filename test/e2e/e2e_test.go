// Package e2e_test reconciles fleetgen's output with the real reconcilers: a
// Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager) on
// loopback, Flux's source- and kustomize-controller, and Rancher Fleet's
// controller and agent, all built from the Go module proxy by
// tools/build.sh (`make e2e`). There are no kubelets: nothing runs in a pod,
// every controller runs as a local process.
package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/test/testenv"
)

// The quickstart's clusters the test follows: the management cluster, an
// agent-mode workload cluster whose Flux also runs here, a manager-mode
// cluster Fleet imports, and the cluster that deregistration removes.
const (
	managerName  = "manager"
	workloadName = "edge-1"
	importedName = "prod-eu-1"
	removedName  = "edge-2"
	fleetNS      = "fleet-default"
)

// example is the quickstart, copied and pointed at loopback: its images in a
// local "upstream" registry, mirrored into a local mirror, its source a Git
// repository served over HTTP, its manager API URL and CA the test's.
type example struct {
	dir, out string
	upstream string // the upstream registry's host:port
	mirror   string // the mirror registry's host:port
	repo     string // bare repository
	gitURL   string // its smart-HTTP URL, as Flux reads it
	gitUser  string
	gitPass  string
	cfg      pipeline.Config
	build    pipeline.BuildOptions // build --publish
	ageKey   []byte
}

func TestReconcile(t *testing.T) {
	parent := t
	tools := tools(t)
	need(t, tools, controlPlaneBinaries)
	ctx := t.Context()
	runStart := time.Now()
	logs := logDir(t)
	s := &summary{t: t}
	// Registered before any process starts, so that it runs after their
	// cleanups (which print the tails of their logs when the test failed):
	// the summary is the last thing a CI log shows.
	t.Cleanup(s.print)

	etcd := startEtcd(t, filepath.Join(tools, "bin", "etcd"), t.TempDir(), logs)
	mgr := launchCluster(t, tools, etcd, logs, managerName)
	edge := launchCluster(t, tools, etcd, logs, workloadName)
	imported := launchCluster(t, tools, etcd, logs, importedName)
	for _, c := range []*cluster{mgr, edge, imported} {
		c.ready(t)
	}
	s.time("control plane up (etcd, 3 x kube-apiserver /readyz)", time.Since(runStart))

	crds := append(fluxCRDs(t, tools), helmControllerCRD(t, tools)...)
	for _, c := range []*cluster{mgr, edge} {
		if err := c.apply(ctx, crds); err != nil {
			t.Fatal(err)
		}
	}
	if err := mgr.apply(ctx, managerCRDs(t)); err != nil {
		t.Fatal(err)
	}
	startFlux(t, tools, logs, mgr)
	startFlux(t, tools, logs, edge)
	startHelmController(t, tools, logs, edge)

	ex := quickstart(t, mgr, imported)
	addSubstitutionLayer(t, ex)
	addNestedLayer(t, ex)
	addOwnDelivery(t, ex)
	addHelmLayer(t, ex)
	if err := pipeline.Build(ctx, ex.cfg, ex.build); err != nil {
		t.Fatalf("fleetgen build --publish: %v", err)
	}
	boot := map[string][]byte{}
	for _, c := range []string{managerName, workloadName} {
		for p, b := range bootstrapFiles(crds, ex.gitURL, c) {
			boot[p] = b
		}
	}
	head := commit(t, ex.repo, "Add Flux sync manifests", boot)
	bootStart := time.Now()
	for _, c := range []*cluster{mgr, edge} {
		bootstrap(t, ctx, c, ex)
	}

	// 1. Every fleetgen Kustomization reconciles: Ready, or for wait: true
	// layers the health-check failure that a cluster without kubelets gives.
	mgrKs := renderedKustomizations(t, ex.out, managerName)
	edgeKs := renderedKustomizations(t, ex.out, workloadName)
	firstReady := time.Duration(0)
	for _, cs := range []struct {
		c  *cluster
		ks []renderedKustomization
	}{{mgr, mgrKs}, {edge, edgeKs}} {
		for _, k := range cs.ks {
			got, err := waitKustomization(ctx, cs.c, k, head, 3*time.Minute)
			if err != nil {
				s.fail("1 reconcile", "%s: Kustomization %s: %v", cs.c.name, k.name, err)
				continue
			}
			if firstReady == 0 {
				firstReady = time.Since(bootStart)
			}
			s.pass("1 reconcile", "%s: Kustomization %s: %s", cs.c.name, k.name, got)
		}
	}
	if firstReady > 0 {
		s.time("first Kustomization settled after bootstrap", firstReady)
	}
	if n, err := imagesPinned(ctx, edge, ex); err != nil {
		s.fail("1 images", "%s: %v", edge.name, err)
	} else {
		s.pass("1 images", "%s: %d container images applied, every one the mirror's by digest", edge.name, n)
	}

	// 2. The manager's objects are there as rendered, Secrets decrypted.
	if n, err := managerObjects(ctx, mgr, ex); err != nil {
		s.fail("2 manager objects", "%v", err)
	} else {
		s.pass("2 manager objects", "%d rendered objects live as rendered, kubeconfig Secrets decrypted by SOPS", n)
	}

	// 3. Flux's own objects survived.
	for _, cs := range []struct {
		c  *cluster
		ks []renderedKustomization
	}{{mgr, mgrKs}, {edge, edgeKs}} {
		if err := fluxSystemSettles(ctx, cs.c, head, names(cs.ks)); err != nil {
			s.fail("3 flux-system", "%v", err)
		} else {
			s.pass("3 flux-system", "%s: Namespace, GitRepository and Kustomization flux-system intact, inventory holds %s", cs.c.name, strings.Join(names(cs.ks), ", "))
		}
	}
	// 7. What the model says a cluster receives is what kustomize-controller
	// applied: every rule of post-build substitution (issue 27).
	if n, err := substitutionMatches(ctx, edge, ex); err != nil {
		s.fail("7 substitution", "%s: %v", edge.name, err)
	} else {
		s.pass("7 substitution", "%s: %d objects of layer %s live as fleetgen's model has them (each substitution rule, opt-outs, a generator)", edge.name, n, substitutionLayer)
	}
	// 8. A Kustomization the layer leads to is applied as the model's
	// closure has it (issue 39).
	if n, err := nestedMatches(ctx, edge, ex); err != nil {
		s.fail("8 closure", "%s: %v", edge.name, err)
	} else {
		s.pass("8 closure", "%s: Kustomization %s, which layer %s applies, reconciled exactly the %d objects fleetgen's model has for it, live as the model has them (its namePrefix, patch, commonMetadata, substitute and substituteFrom)", edge.name, nestedKustomization, nestedLayer, n)
	}
	// 10. HelmReleases: helm-controller installs an OCI chart fleetgen
	// mirrored and an HTTP repository's chart it republished, and every
	// Deployment they make runs mirror images by digest (helm_test.go).
	if got, err := helmReleasesPinned(ctx, edge, ex); err != nil {
		s.fail("10 helm", "%s: %v", edge.name, err)
	} else {
		s.pass("10 helm", "%s: HelmReleases charts/hello (OCI chart), charts/web (HTTP chart) and infra/infra (applied by Kustomization charts-infra) Ready; Deployments %s run mirror images by digest only", edge.name, got)
	}
	if t.Failed() {
		return
	}

	// 4. Fleet registers clusters for real. fleet-controller runs to the
	// end: deregistration (5) needs it to release its finalizers.
	t.Run("Fleet", func(t *testing.T) {
		need(t, tools, fleetBinaries)
		fleetStart := time.Now()
		startFleetController(t, parent, ctx, tools, logs, mgr)
		fleetRegistration(t, parent, ctx, s, tools, logs, mgr, edge, imported, ex)
		s.time("fleet registration", time.Since(fleetStart))
	})

	// 6. Deliveries: the fleet-controller deploys each GitRepo's bundles to
	// exactly the clusters `fleetgen targets` lists (deliveries_test.go).
	t.Run("Deliveries", func(t *testing.T) {
		need(t, tools, append(fleetBinaries, "bin/fleet"))
		deliveries(t, ctx, s, tools, logs, mgr, edge, ex)
	})

	// 9. Shards: each sharded Cluster and GitRepo processed by its shard's
	// fleet-controller, nothing rendered names an undeclared shard
	// (sharding_test.go).
	t.Run("Sharding", func(t *testing.T) {
		need(t, tools, append(fleetBinaries, "bin/fleet"))
		sharding(t, ctx, s, tools, logs, mgr, ex)
	})

	// 5. Deregistration: a cluster removed from fleet.yaml is pruned.
	deregister(t, ctx, s, mgr, ex, mgrKs)

	// A broken render, a clusters/<c>/kustomization.yaml that leaves out
	// flux-system/, makes Flux prune itself, and assertion 3 says so.
	t.Run("BrokenRenderIsCaught", func(t *testing.T) {
		brokenRender(t, ctx, s, mgr, ex, mgrKs)
	})
	s.time("whole run", time.Since(runStart))
}

// quickstart copies examples/quickstart and points it at loopback: the
// manager's API server and CA, and imported's kubeconfig for the
// manager-mode cluster of that name.
func quickstart(t *testing.T, mgr, imported *cluster) *example {
	t.Helper()
	upstream, mirror := testenv.Registry(t), testenv.Registry(t)
	rng := rand.New(rand.NewSource(11))
	for _, p := range []string{
		"library/busybox:1.36", "rancher/fleet-agent:v0.16.1", "kubereboot/kured:1.12.0",
		"stefanprodan/podinfo:6.7.1", "ingress-nginx/controller:v1.11.3",
	} {
		img, err := testenv.Image(rng, nil, 1, 512)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.ParseReference(upstream+"/"+p, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}

	ex := &example{
		dir:      filepath.Join(t.TempDir(), "quickstart"),
		upstream: upstream,
		mirror:   mirror,
		out:      filepath.Join(t.TempDir(), "out"),
		repo:     testenv.BareRepo(t, "fleet-gitops.git"),
		gitUser:  "flux",
		gitPass:  randHex(t, 12),
	}
	ex.gitURL = testenv.GitHTTP(t, ex.repo, ex.gitUser, ex.gitPass)
	if err := os.CopyFS(ex.dir, os.DirFS("../../examples/quickstart")); err != nil {
		t.Fatal(err)
	}
	testenv.ReplaceIn(t, filepath.Join(ex.dir, "fleet.yaml"),
		"host: quickstart.azurecr.io", "host: \""+mirror+"\"\n    insecure: true",
		"- rancher/fleet-agent:v0.16.1", "- "+upstream+"/rancher/fleet-agent:v0.16.1",
		"url: https://git.quickstart.example/platform/fleet-gitops.git", "url: "+ex.gitURL,
		"apiServerURL: https://fleet.quickstart.example:6443", "apiServerURL: "+mgr.url,
		// Without kubelets a wait: true layer can only time out: make that quick.
		"      wait: true\n", "      wait: true\n      timeout: 20s\n")
	addDeliveries(t, filepath.Join(ex.dir, "fleet.yaml")) // deliveries_test.go
	write(t, filepath.Join(ex.dir, "certs", "manager-ca.pem"), mgr.caPEM)
	b, err := os.ReadFile(imported.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ex.dir, "kubeconfigs", imported.name+".yaml"), b)
	testenv.ReplaceIn(t, filepath.Join(ex.dir, "apps", "base", "podinfo.yaml"),
		"image: busybox:1.36", "image: "+upstream+"/library/busybox:1.36", "ghcr.io", upstream)
	testenv.ReplaceIn(t, filepath.Join(ex.dir, "infrastructure", "base", "kured.yaml"), "ghcr.io", upstream)
	testenv.ReplaceIn(t, filepath.Join(ex.dir, "infrastructure", "prod", "ingress-nginx.yaml"), "registry.k8s.io", upstream)
	lockPath := filepath.Join(ex.dir, lock.FileName)
	l, err := lock.Load(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	l.SetImages(nil) // the example's placeholder digests are in no registry
	if err := lock.Write(lockPath, l); err != nil {
		t.Fatal(err)
	}
	ex.ageKey, err = os.ReadFile(filepath.Join(ex.dir, "age.agekey"))
	if err != nil {
		t.Fatal(err)
	}
	ex.cfg = pipeline.Config{
		File:      filepath.Join(ex.dir, "fleet.yaml"),
		LookupEnv: func(string) (string, bool) { return "", false },
	}
	ex.build = pipeline.BuildOptions{Publish: pipeline.PublishOptions{OutDir: ex.out, PushURL: "file://" + ex.repo}, Push: true}
	return ex
}

// bootstrap does on c what `flux bootstrap git` does after its commit: the
// Git credentials Secret, the components, then the sync objects; plus the
// sops-age Secret with the example's test key, as the quickstart's README
// asks for.
func bootstrap(t *testing.T, ctx context.Context, c *cluster, ex *example) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	testenv.Git(t, "", "clone", "--quiet", "--branch", "main", ex.repo, dir)
	fs := filepath.Join(dir, "clusters", c.name, "flux-system")
	for _, f := range []string{"gotk-components.yaml"} {
		b, err := os.ReadFile(filepath.Join(fs, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	secrets := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: flux-system, namespace: flux-system}
stringData: {username: %q, password: %q}
---
apiVersion: v1
kind: Secret
metadata: {name: sops-age, namespace: flux-system}
data: {age.agekey: %s}
`, ex.gitUser, ex.gitPass, base64.StdEncoding.EncodeToString(ex.ageKey))
	if err := c.apply(ctx, []byte(secrets)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(fs, "gotk-sync.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.apply(ctx, b); err != nil {
		t.Fatal(err)
	}
}

// managerCRDs are Fleet's and Verrazzano's CRDs, the project's copies (those
// fleetgen's output is validated against).
func managerCRDs(t *testing.T) []byte {
	t.Helper()
	var all []byte
	for _, f := range []string{
		"../../test/crdcheck/crds/fleet/fleet-crds.yaml",
		"../../test/crdcheck/crds/verrazzano/clusters.verrazzano.io_verrazzanomanagedclusters.yaml",
	} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(append(all, "\n---\n"...), b...)
	}
	return all
}

// renderedKustomization is a Flux Kustomization fleetgen wrote for a cluster.
type renderedKustomization struct {
	name string
	wait bool
}

func renderedKustomizations(t *testing.T, out, cluster string) []renderedKustomization {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "clusters", cluster, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ks []renderedKustomization
	for _, f := range files {
		for _, obj := range readObjects(t, f) {
			if obj.GroupVersionKind() != kustomizationGVK {
				continue
			}
			wait, _, _ := unstructured.NestedBool(obj.Object, "spec", "wait")
			ks = append(ks, renderedKustomization{name: obj.GetName(), wait: wait})
		}
	}
	if len(ks) == 0 {
		t.Fatalf("fleetgen rendered no Flux Kustomization in clusters/%s", cluster)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].name < ks[j].name })
	return ks
}

func names(ks []renderedKustomization) []string {
	var out []string
	for _, k := range ks {
		out = append(out, k.name)
	}
	return out
}

// waitKustomization waits until k applied head: Ready, or, for wait: true,
// failed its health checks (nothing becomes ready without kubelets).
func waitKustomization(ctx context.Context, c *cluster, k renderedKustomization, head string, timeout time.Duration) (string, error) {
	var got string
	err := eventually(timeout, func() error {
		st, err := kustomization(ctx, c, k.name)
		if err != nil {
			return err
		}
		if st == nil {
			return fmt.Errorf("not found")
		}
		switch {
		case !k.wait && st.ready == "True" && st.revision == revisionOf(head):
			got = "Ready at " + st.revision
			return nil
		case k.wait && st.ready == "False" && st.reason == "HealthCheckFailed":
			got = "HealthCheckFailed as expected without kubelets (wait: true): " + firstLine(st.message)
			return nil
		}
		return fmt.Errorf("Ready=%s %s: %s (applied %q)", st.ready, st.reason, firstLine(st.message), st.revision)
	})
	return got, err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

var workloadGVKs = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"},
}

// imagesPinned checks every container image of the workloads Flux applied
// on c: each must be a lock target's repository at its digest.
func imagesPinned(ctx context.Context, c *cluster, ex *example) (int, error) {
	l, err := lock.Load(filepath.Join(ex.dir, lock.FileName))
	if err != nil {
		return 0, err
	}
	want := map[string]bool{}
	for _, img := range l.Images {
		ref, err := name.ParseReference(img.Target, name.Insecure)
		if err != nil {
			return 0, err
		}
		want[ref.Context().Name()+"@"+img.Digest] = true
	}
	n := 0
	for _, gvk := range workloadGVKs {
		objs, err := c.list(ctx, gvk, "")
		if err != nil {
			return 0, err
		}
		for _, o := range objs {
			if o.GetLabels()["kustomize.toolkit.fluxcd.io/namespace"] != "flux-system" {
				continue
			}
			for _, field := range []string{"initContainers", "containers"} {
				cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", field)
				for _, ci := range cs {
					img, _ := ci.(map[string]any)["image"].(string)
					if !want[img] {
						return 0, fmt.Errorf("%s %s/%s runs %s, not a mirror image by digest", gvk.Kind, o.GetNamespace(), o.GetName(), img)
					}
					n++
				}
			}
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("Flux applied no workload")
	}
	return n, nil
}

// managerObjects compares every object fleetgen rendered under manager/ with
// the live one: each rendered field must be live with the same value; an
// encrypted Secret value must arrive decrypted (a kubeconfig equal to the
// example's file).
func managerObjects(ctx context.Context, c *cluster, ex *example) (int, error) {
	var files []string
	err := filepath.Walk(filepath.Join(ex.out, "manager"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(p, ".yaml") && info.Name() != "kustomization.yaml" {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	n, secrets := 0, 0
	for _, f := range files {
		for _, want := range readObjectsErr(f) {
			live, err := c.get(ctx, want.GroupVersionKind(), want.GetNamespace(), want.GetName())
			if err != nil {
				return n, err
			}
			if live == nil {
				return n, fmt.Errorf("%s %s/%s (%s) is not on the manager", want.GetKind(), want.GetNamespace(), want.GetName(), f)
			}
			id := fmt.Sprintf("%s %s/%s", want.GetKind(), want.GetNamespace(), want.GetName())
			if _, encrypted := want.Object["sops"]; encrypted {
				if err := decrypted(want, live, ex); err != nil {
					return n, fmt.Errorf("%s: %w", id, err)
				}
				secrets++
				delete(want.Object, "sops")
				delete(want.Object, "data")
				delete(want.Object, "stringData")
			}
			for _, k := range []string{"spec", "data", "type"} {
				if v, ok := want.Object[k]; ok {
					if err := subset(k, v, live.Object[k]); err != nil {
						return n, fmt.Errorf("%s: %w", id, err)
					}
				}
			}
			if err := subset("metadata.labels", toAny(want.GetLabels()), toAny(live.GetLabels())); err != nil {
				return n, fmt.Errorf("%s: %w", id, err)
			}
			n++
		}
	}
	if secrets == 0 {
		return n, fmt.Errorf("no encrypted Secret rendered under manager/")
	}
	return n, nil
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// decrypted checks a SOPS-encrypted Secret arrived decrypted; a cluster-api
// kubeconfig Secret must hold the example's kubeconfig file.
func decrypted(want, live *unstructured.Unstructured, ex *example) error {
	data, _, _ := unstructured.NestedStringMap(live.Object, "data")
	if len(data) == 0 {
		return fmt.Errorf("live Secret has no data")
	}
	for k, v := range data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return fmt.Errorf("data.%s: %w", k, err)
		}
		if bytes.Contains(b, []byte("ENC[")) || strings.Contains(v, "ENC[") {
			return fmt.Errorf("data.%s is still encrypted", k)
		}
	}
	if cluster := want.GetLabels()["cluster.x-k8s.io/cluster-name"]; cluster != "" {
		file, err := os.ReadFile(filepath.Join(ex.dir, "kubeconfigs", cluster+".yaml"))
		if err != nil {
			return err
		}
		got, _ := base64.StdEncoding.DecodeString(data["value"])
		if !bytes.Equal(got, file) {
			return fmt.Errorf("data.value is not kubeconfigs/%s.yaml decrypted", cluster)
		}
	}
	return nil
}

// subset reports the first field of want that got lacks or holds differently.
func subset(path string, want, got any) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, live has %v", path, got)
		}
		for k, v := range w {
			if err := subset(path+"."+k, v, g[k]); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: want %d items, live has %v", path, len(w), got)
		}
		for i := range w {
			if err := subset(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); err != nil {
				return err
			}
		}
		return nil
	default:
		if fmt.Sprint(number(want)) != fmt.Sprint(number(got)) {
			return fmt.Errorf("%s: rendered %v, live %v", path, want, got)
		}
		return nil
	}
}

// number makes JSON numbers comparable whatever their Go type.
func number(v any) any {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int:
		return float64(n)
	}
	return v
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	objs := readObjectsErr(path)
	if objs == nil {
		t.Fatalf("%s holds no object", path)
	}
	return objs
}

// readObjectsErr parses the YAML documents of path; nil when it cannot.
func readObjectsErr(path string) []*unstructured.Unstructured {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return parseObjects(b)
}

// decodeObjects parses the YAML documents of b (helm template's output).
func decodeObjects(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	objs := parseObjects(b)
	if objs == nil {
		t.Fatalf("no object in %.200q", b)
	}
	return objs
}

func parseObjects(b []byte) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(b), "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil || len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// summary collects one line per assertion and the times, printed at the end
// (and each as it happens, with -v).
type summary struct {
	t     *testing.T
	lines []string
}

func (s *summary) add(line string) {
	s.lines = append(s.lines, line)
	s.t.Log(line)
}

func (s *summary) pass(what, format string, args ...any) {
	s.add(fmt.Sprintf("PASS  %-18s %s", what, fmt.Sprintf(format, args...)))
}

func (s *summary) fail(what, format string, args ...any) {
	s.t.Helper()
	line := fmt.Sprintf("FAIL  %-18s %s", what, fmt.Sprintf(format, args...))
	s.lines = append(s.lines, line)
	s.t.Error(line)
}

func (s *summary) time(what string, d time.Duration) {
	s.add(fmt.Sprintf("TIME  %-18s %s", what, d.Round(10*time.Millisecond)))
}

func (s *summary) print() {
	var failed []string
	for _, l := range s.lines {
		if strings.HasPrefix(l, "FAIL") {
			failed = append(failed, l)
		}
	}
	msg := "e2e summary:\n" + strings.Join(s.lines, "\n")
	switch {
	case len(failed) > 0:
		msg += "\nfailed:\n" + strings.Join(failed, "\n")
	case s.t.Failed():
		msg += "\nfailed: see the first error above (a step that could not go on)"
	}
	s.t.Log(msg)
}
