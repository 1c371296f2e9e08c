package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/test/testenv"
)

// The OCM release tools/build.sh builds (its OCM_VERSION and OCM_API_VERSION).
const (
	ocmVersion    = "v1.2.1"
	ocmAPIVersion = "v1.2.0"
)

var managedClusterGVK = schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1", Kind: "ManagedCluster"}

// TestOCMHubAcceptsManagedClusters: OCM's own hub registration controller
// (open-cluster-management.io/ocm's `registration controller`, built from
// the module proxy) accepts every ManagedCluster fleetgen renders for
// examples/multi-manager: applied to a real kube-apiserver with the OCM
// API's CRDs, each gets the condition HubAcceptedManagedCluster=True and
// its cluster namespace on the hub, what `clusteradm accept` would have
// done. The klusterlet's side (a bootstrap CSR) needs a managed cluster and
// is not run.
func TestOCMHubAcceptsManagedClusters(t *testing.T) {
	tools := tools(t)
	bin := filepath.Join("bin", "ocm-registration-"+ocmVersion)
	need(t, tools, []string{"bin/etcd", "bin/kube-apiserver", "bin/kube-controller-manager", bin, filepath.Join("crds", "ocm-"+ocmAPIVersion)})
	ctx := t.Context()
	logs := logDir(t)

	etcd := startEtcd(t, filepath.Join(tools, "bin", "etcd"), t.TempDir(), logs)
	hub := launchCluster(t, tools, etcd, logs, "hub")
	hub.ready(t)
	crds, err := filepath.Glob(filepath.Join(tools, "crds", "ocm-"+ocmAPIVersion, "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no OCM CRDs in %s (test/e2e/tools/build.sh ocm-registration): %v", tools, err)
	}
	sort.Strings(crds)
	for _, f := range crds {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := hub.apply(ctx, b); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
	}

	// fleetgen's ManagedClusters, as Flux would apply them on the hub.
	dir := testenv.CopyTree(t, filepath.Join("..", "..", "examples", "multi-manager"))
	out := filepath.Join(t.TempDir(), "out")
	if err := pipeline.Render(ctx, pipeline.Config{File: filepath.Join(dir, "fleet.yaml")}, pipeline.RenderOptions{OutDir: out}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for p, data := range testenv.ReadTree(t, out, ".fleetgen") {
		lp := layout.Parse(p)
		if lp.Kind != layout.OCMCluster {
			continue
		}
		if err := hub.apply(ctx, []byte(data)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		names = append(names, lp.Cluster)
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatal("examples/multi-manager renders no ManagedCluster")
	}
	if err := hub.apply(ctx, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: open-cluster-management-hub}\n")); err != nil {
		t.Fatal(err)
	}

	reg := start(t, logs, "ocm-registration", filepath.Join(tools, bin), nil,
		"controller", "--kubeconfig="+hub.kubeconfig, "--namespace=open-cluster-management-hub",
		"--disable-leader-election", fmt.Sprintf("--listen=127.0.0.1:%d", freePort(t)))
	for _, name := range names {
		err := waitFor(reg, 3*time.Minute, func() error {
			mc, err := hub.get(ctx, managedClusterGVK, "", name)
			if err != nil {
				return err
			}
			if s, _, _ := condition(mc, "HubAcceptedManagedCluster"); s != "True" {
				return fmt.Errorf("ManagedCluster %s: HubAcceptedManagedCluster is %q", name, s)
			}
			if _, err := hub.get(ctx, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", name); err != nil {
				return fmt.Errorf("the hub made no namespace %s: %w", name, err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("OCM's hub does not accept %s: %v", name, err)
			continue
		}
		t.Logf("OCM's hub accepted ManagedCluster %s (HubAcceptedManagedCluster=True, namespace %s)", name, name)
	}
}
