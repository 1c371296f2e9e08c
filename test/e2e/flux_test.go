package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/test/testenv"
)

var (
	gitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	kustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
	namespaceGVK     = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	secretGVK        = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
)

// fluxCRDs are the CustomResourceDefinitions of the source- and
// kustomize-controller builds (their modules' config/crd/bases), which
// include helmcharts and externalartifacts that source-controller watches.
func fluxCRDs(t *testing.T, tools string) []byte {
	t.Helper()
	var all []byte
	for _, c := range []string{"source-controller", "kustomize-controller"} {
		files, err := filepath.Glob(filepath.Join(tools, "crds", c, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no CRDs in %s/crds/%s (rebuild the e2e tools): %v", tools, c, err)
		}
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, "---\n"...)
			all = append(all, b...)
			all = append(all, '\n')
		}
	}
	return all
}

// startFlux runs source-controller and kustomize-controller as local
// processes against c, as Flux's Deployments would run them in flux-system,
// every listener on loopback.
func startFlux(t *testing.T, tools, logs string, c *cluster) {
	t.Helper()
	env := []string{"KUBECONFIG=" + c.kubeconfig, "RUNTIME_NAMESPACE=flux-system"}
	storage := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	// source-controller refuses a storage path that does not exist.
	if err := os.MkdirAll(filepath.Join(c.dir, "flux-storage"), 0o755); err != nil {
		t.Fatal(err)
	}
	start(t, logs, c.name+"-source-controller", filepath.Join(tools, "bin", "source-controller"), env,
		"--enable-leader-election=false", "--watch-all-namespaces=true", "--log-level=info",
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", freePort(t)),
		fmt.Sprintf("--health-addr=127.0.0.1:%d", freePort(t)),
		"--storage-path="+filepath.Join(c.dir, "flux-storage"),
		"--storage-addr="+storage, "--storage-adv-addr="+storage,
	)
	start(t, logs, c.name+"-kustomize-controller", filepath.Join(tools, "bin", "kustomize-controller"), env,
		"--enable-leader-election=false", "--watch-all-namespaces=true", "--log-level=info",
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", freePort(t)),
		fmt.Sprintf("--health-addr=127.0.0.1:%d", freePort(t)),
	)
}

// bootstrapFiles are what `flux bootstrap git --path=clusters/<c>` commits in
// clusters/<c>/flux-system/: the components (here the Namespace and the
// CRDs; the controllers run as local processes), the sync objects, and the
// kustomization.yaml that lists both.
func bootstrapFiles(crds []byte, gitURL, cluster string) map[string][]byte {
	components := "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: flux-system\n" + string(crds)
	sync := fmt.Sprintf(`---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m0s
  ref:
    branch: main
  secretRef:
    name: flux-system
  url: %s
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m0s
  path: ./clusters/%s
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
`, gitURL, cluster)
	kustomization := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- gotk-components.yaml
- gotk-sync.yaml
`
	dir := filepath.Join("clusters", cluster, "flux-system")
	return map[string][]byte{
		filepath.Join(dir, "gotk-components.yaml"): []byte(components),
		filepath.Join(dir, "gotk-sync.yaml"):       []byte(sync),
		filepath.Join(dir, "kustomization.yaml"):   []byte(kustomization),
	}
}

// commit writes files into a clone of repo's main branch, commits and pushes,
// and returns the new head.
func commit(t *testing.T, repo, message string, files map[string][]byte, remove ...string) string {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "clone")
	testenv.Git(t, "", "clone", "--quiet", "--branch", "main", repo, clone)
	for p, b := range files {
		write(t, filepath.Join(clone, p), b)
		testenv.Git(t, clone, "add", p)
	}
	for _, p := range remove {
		testenv.Git(t, clone, "rm", "--quiet", "-r", p)
	}
	testenv.Git(t, clone, "commit", "--quiet", "-m", message)
	testenv.Git(t, clone, "push", "--quiet", "origin", "main")
	return testenv.Git(t, repo, "rev-parse", "main")
}

// requestReconcile asks source-controller to fetch the GitRepository now,
// as `flux reconcile source git flux-system` does.
func requestReconcile(ctx context.Context, c *cluster) error {
	obj, err := c.get(ctx, gitRepositoryGVK, "flux-system", "flux-system")
	if err != nil {
		return err
	}
	if obj == nil {
		return fmt.Errorf("GitRepository flux-system/flux-system is gone from %s", c.name)
	}
	patch := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gitRepositoryGVK.GroupVersion().String(),
		"kind":       gitRepositoryGVK.Kind,
		"metadata": map[string]any{
			"name": "flux-system", "namespace": "flux-system",
			"annotations": map[string]any{"reconcile.fluxcd.io/requestedAt": time.Now().Format(time.RFC3339Nano)},
		},
	}}
	return c.applyOne(ctx, "", patch)
}

// condition returns the status, reason and message of the condition typ.
func condition(obj *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		status, _ = m["status"].(string)
		reason, _ = m["reason"].(string)
		message, _ = m["message"].(string)
	}
	return status, reason, message
}

// kustomizationState is a Flux Kustomization's readiness at a revision.
type kustomizationState struct {
	ready, reason, message, revision string
}

func kustomization(ctx context.Context, c *cluster, name string) (*kustomizationState, error) {
	obj, err := c.get(ctx, kustomizationGVK, "flux-system", name)
	if err != nil || obj == nil {
		return nil, err
	}
	s := &kustomizationState{}
	s.ready, s.reason, s.message = condition(obj, "Ready")
	s.revision, _, _ = unstructured.NestedString(obj.Object, "status", "lastAppliedRevision")
	return s, nil
}

// revisionOf is the Flux revision string of a Git commit on main.
func revisionOf(head string) string { return "main@sha1:" + head }

// inventory lists the object IDs (namespace_name_group_kind) a Kustomization applied.
func inventory(ctx context.Context, c *cluster, name string) ([]string, error) {
	obj, err := c.get(ctx, kustomizationGVK, "flux-system", name)
	if err != nil || obj == nil {
		return nil, err
	}
	entries, _, _ := unstructured.NestedSlice(obj.Object, "status", "inventory", "entries")
	var ids []string
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok {
			if id, ok := m["id"].(string); ok {
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// fluxSystemIntact checks that Flux's own objects survived a reconcile of
// clusters/<c>: the Namespace, GitRepository and Kustomization flux-system
// exist, the Kustomization applied head and is Ready, and its inventory holds
// both itself and the fleetgen Kustomizations of clusters/<c>.
func fluxSystemIntact(ctx context.Context, c *cluster, head string, fleetgenKustomizations []string) error {
	for _, o := range []struct {
		gvk      schema.GroupVersionKind
		ns, name string
	}{
		{namespaceGVK, "", "flux-system"},
		{gitRepositoryGVK, "flux-system", "flux-system"},
		{kustomizationGVK, "flux-system", "flux-system"},
	} {
		obj, err := c.get(ctx, o.gvk, o.ns, o.name)
		if err != nil {
			return err
		}
		if obj == nil || obj.GetDeletionTimestamp() != nil {
			return &prunedError{fmt.Sprintf("%s flux-system was pruned from %s", o.gvk.Kind, c.name)}
		}
	}
	k, err := kustomization(ctx, c, "flux-system")
	if err != nil {
		return err
	}
	if k.ready != "True" || k.revision != revisionOf(head) {
		return fmt.Errorf("Kustomization flux-system on %s: Ready=%s at %q (%s: %s), want True at %s",
			c.name, k.ready, k.revision, k.reason, k.message, revisionOf(head))
	}
	inv, err := inventory(ctx, c, "flux-system")
	if err != nil {
		return err
	}
	want := []string{"flux-system_flux-system_kustomize.toolkit.fluxcd.io_Kustomization",
		"flux-system_flux-system_source.toolkit.fluxcd.io_GitRepository", "_flux-system__Namespace"}
	for _, n := range fleetgenKustomizations {
		want = append(want, "flux-system_"+n+"_kustomize.toolkit.fluxcd.io_Kustomization")
	}
	for _, id := range want {
		if !contains(inv, id) {
			return fmt.Errorf("Kustomization flux-system on %s does not hold %s in its inventory: %s", c.name, id, strings.Join(inv, " "))
		}
	}
	return nil
}

// prunedError: a flux-system object is gone; waiting will not bring it back.
type prunedError struct{ msg string }

func (e *prunedError) Error() string { return e.msg }

// fluxSystemSettles is fluxSystemIntact once the flux-system Kustomization
// has had time to apply head (it reconciles on its own schedule, after the
// Kustomizations fleetgen wrote); a pruned object fails at once.
func fluxSystemSettles(ctx context.Context, c *cluster, head string, fleetgenKustomizations []string) error {
	var last error
	err := eventually(90*time.Second, func() error {
		last = fluxSystemIntact(ctx, c, head, fleetgenKustomizations)
		var pruned *prunedError
		if errors.As(last, &pruned) {
			return nil // final: stop waiting, report it below
		}
		return last
	})
	if err != nil {
		return err
	}
	return last
}

func contains(s []string, v string) bool {
	i := sort.SearchStrings(s, v)
	return i < len(s) && s[i] == v
}

// eventually polls check every half second until it succeeds or timeout.
func eventually(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// deregister is assertion 5: a cluster removed from fleet.yaml and
// published is pruned from the manager by Flux, and publish keeps the
// bootstrap's flux-system/ files.
func deregister(t *testing.T, ctx context.Context, s *summary, mgr *cluster, ex *example, mgrKs []renderedKustomization) {
	t.Helper()
	var objs []*unstructured.Unstructured
	files, err := filepath.Glob(filepath.Join(ex.out, "manager", "*", removedName, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("nothing rendered for %s under manager/: %v", removedName, err)
	}
	for _, f := range files {
		objs = append(objs, readObjects(t, f)...)
	}
	for _, o := range objs {
		live, err := mgr.get(ctx, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
		if err != nil || live == nil {
			t.Fatalf("%s %s/%s is not on the manager before deregistration: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}

	testenv.ReplaceIn(t, ex.cfg.File, "    - name: "+removedName+"\n      labels: {env: dev, region: us}\n      registration: {mode: agent, tokenTTL: 24h}\n", "")
	if err := pipeline.Build(ctx, ex.cfg, ex.build); err != nil {
		t.Fatalf("fleetgen build --publish without %s: %v", removedName, err)
	}
	head := testenv.Git(t, ex.repo, "rev-parse", "main")
	if _, err := testenv.GitErr(ex.repo, "cat-file", "-e", "main:clusters/"+managerName+"/flux-system/gotk-sync.yaml"); err != nil {
		s.fail("5 deregistration", "publish removed clusters/%s/flux-system/gotk-sync.yaml", managerName)
	}
	if _, err := testenv.GitErr(ex.repo, "cat-file", "-e", "main:clusters/"+removedName); err == nil {
		s.fail("5 deregistration", "publish left clusters/%s/ in the branch", removedName)
	}
	start := time.Now()
	if err := requestReconcile(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	err = eventually(2*time.Minute, func() error {
		for _, o := range objs {
			live, err := mgr.get(ctx, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
			if err != nil {
				return err
			}
			if live != nil {
				return fmt.Errorf("%s %s/%s is still on the manager", o.GetKind(), o.GetNamespace(), o.GetName())
			}
		}
		return nil
	})
	if err != nil {
		s.fail("5 deregistration", "%v", err)
		return
	}
	if err := fluxSystemSettles(ctx, mgr, head, names(mgrKs)); err != nil {
		s.fail("5 deregistration", "after the second publish: %v", err)
		return
	}
	s.pass("5 deregistration", "%s removed from fleet.yaml and published: its %d objects pruned from the manager in %s; flux-system/ kept by publish and intact",
		removedName, len(objs), time.Since(start).Round(100*time.Millisecond))
}

// brokenRender commits what an older fleetgen wrote, a
// clusters/<manager>/kustomization.yaml listing only fleetgen's files, and
// checks that assertion 3 catches Flux pruning itself.
func brokenRender(t *testing.T, ctx context.Context, s *summary, mgr *cluster, ex *example, mgrKs []renderedKustomization) {
	t.Helper()
	head := commit(t, ex.repo, "clusters/"+managerName+": a kustomization.yaml without flux-system/", map[string][]byte{
		filepath.Join("clusters", managerName, "kustomization.yaml"): []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- manager.yaml\n"),
	})
	if err := requestReconcile(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	var caught error
	err := eventually(2*time.Minute, func() error {
		caught = fluxSystemIntact(ctx, mgr, head, names(mgrKs))
		if caught != nil && strings.Contains(caught.Error(), "pruned") {
			return nil
		}
		return fmt.Errorf("flux-system still intact: %v", caught)
	})
	if err != nil {
		s.fail("broken render", "assertion 3 did not catch the broken render: %v", err)
		return
	}
	s.pass("broken render", "clusters/%s/kustomization.yaml without flux-system/ makes Flux prune itself; assertion 3 fails with %q", managerName, caught.Error())
}
