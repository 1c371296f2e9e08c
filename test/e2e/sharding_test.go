package e2e_test

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// fleetShards are the Fleet controller shards of the test's fleet
// (shardsYAML); startFleetController runs a fleet-controller with
// --shard-id for each, beside the unsharded one, as the fleet chart does
// with shardValues.
var fleetShards = []string{"shard-a", "shard-b"}

const (
	shardsYAML  = "  shards:\n    fleet: [shard-a, shard-b]\n"
	shardValues = "shards:\n- id: shard-a\n- id: shard-b\n"
	// undeclared is a shard no controller runs.
	undeclared = "shard-z"
	// clusterFinalizer is what Fleet's cluster controller adds to every
	// Cluster it reconciles (internal/cmd/controller/finalize).
	clusterFinalizer = "fleet.cattle.io/cluster-finalizer"
)

// sharding is assertion 8 (docs/scale.md): every object the render labels
// with a Fleet shard names a declared one; each labelled Cluster is
// reconciled (its finalizer added) while a Cluster labelled with an
// undeclared shard is not, which only the shards' own controllers can make
// true, since the unsharded one leaves labelled objects alone; and each
// GitRepo's Bundles and BundleDeployments carry its shard, whose bundle
// controller made the BundleDeployments, for clusters of other shards too.
func sharding(t *testing.T, ctx context.Context, s *summary, mgr *cluster, ex *example) {
	t.Helper()
	start := time.Now()
	declared := map[string]bool{}
	for _, id := range fleetShards {
		declared[id] = true
	}
	// The rendered tree.
	kinds := map[string]int{}
	clusterShard := map[string]string{} // Cluster -> shard
	repoShard := map[string]string{}    // GitRepo -> shard
	err := filepath.WalkDir(filepath.Join(ex.out, "manager"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		for _, obj := range readObjects(t, p) {
			id, ok := obj.GetLabels()[schema.FleetShardLabel]
			if !ok {
				continue
			}
			if !declared[id] {
				return fmt.Errorf("%s: %s %s labelled with shard %q, which no controller runs", p, obj.GetKind(), obj.GetName(), id)
			}
			kinds[obj.GetKind()]++
			switch obj.GetKind() {
			case "Cluster":
				clusterShard[obj.GetName()] = id
			case "GitRepo":
				repoShard[obj.GetName()] = id
			}
		}
		return nil
	})
	if err == nil && (kinds["Cluster"] == 0 || kinds["GitRepo"] == 0) {
		err = fmt.Errorf("labelled objects by kind %v: want Clusters and GitRepos", kinds)
	}
	if err != nil {
		s.fail("8 shards", "%v", err)
		return
	}
	s.pass("8 shards", "every rendered object with %s names a declared shard (%s): %s", schema.FleetShardLabel, strings.Join(fleetShards, ", "), countList(kinds))

	// Clusters: reconciled by their shard's fleet-controller.
	ghost := fmt.Sprintf("apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: ghost\n  labels: {%s: %s}\nspec: {}\n", schema.FleetShardLabel, undeclared)
	if err := mgr.applyIn(ctx, fleetNS, []byte(ghost)); err != nil {
		t.Fatal(err)
	}
	byShard := map[string][]string{}
	err = eventually(2*time.Minute, func() error {
		for name, id := range clusterShard {
			c, err := mgr.get(ctx, fleetClusterGVK, fleetNS, name)
			if err != nil {
				return err
			}
			if !slices.Contains(c.GetFinalizers(), clusterFinalizer) {
				return fmt.Errorf("Cluster %s (shard %s) not reconciled: no %s", name, id, clusterFinalizer)
			}
		}
		return nil
	})
	for name, id := range clusterShard {
		byShard[id] = append(byShard[id], name)
	}
	if err != nil {
		s.fail("8 shards", "%v", err)
		return
	}
	// The control: by now the ghost would have been reconciled too, were
	// anything processing an undeclared shard.
	time.Sleep(10 * time.Second)
	g, err := mgr.get(ctx, fleetClusterGVK, fleetNS, "ghost")
	switch {
	case err != nil:
		s.fail("8 shards", "Cluster ghost: %v", err)
	case slices.Contains(g.GetFinalizers(), clusterFinalizer):
		s.fail("8 shards", "Cluster ghost, labelled with the undeclared shard %s, was reconciled", undeclared)
	default:
		s.pass("8 shards", "each sharded Cluster reconciled by its shard's fleet-controller (%s); a Cluster labelled %s, which no controller runs, untouched", shardList(byShard), undeclared)
	}
	if dyn, _, err := mgr.resource(fleetClusterGVK); err == nil {
		_ = dyn.Namespace(fleetNS).Delete(ctx, "ghost", metav1.DeleteOptions{})
	}

	// GitRepos: their Bundles and BundleDeployments carry their shard, and
	// the BundleDeployments (made only by that shard's bundle controller)
	// reach clusters of the other shard too.
	for repo, id := range repoShard {
		bs, err := bundlesOf(ctx, mgr, repo)
		if err != nil || len(bs) == 0 {
			s.fail("8 shards", "GitRepo %s: no Bundle (%v)", repo, err)
			continue
		}
		var where []string
		err = eventually(time.Minute, func() error {
			where = where[:0]
			for _, b := range bs {
				if got := b.GetLabels()[schema.FleetShardLabel]; got != id {
					return fmt.Errorf("Bundle %s carries shard %q, its GitRepo %s", b.GetName(), got, id)
				}
			}
			bds, err := mgr.list(ctx, bundleDeploymentGVK, "")
			if err != nil {
				return err
			}
			for _, bd := range bds {
				if bd.GetLabels()["fleet.cattle.io/repo-name"] != repo {
					continue
				}
				if got := bd.GetLabels()[schema.FleetShardLabel]; got != id {
					return fmt.Errorf("BundleDeployment %s/%s carries shard %q, its GitRepo %s", bd.GetNamespace(), bd.GetName(), got, id)
				}
				c := bd.GetLabels()["fleet.cattle.io/cluster"]
				where = append(where, c+"@"+clusterShard[c])
			}
			if len(where) == 0 {
				return fmt.Errorf("no BundleDeployment of GitRepo %s", repo)
			}
			return nil
		})
		if err != nil {
			s.fail("8 shards", "GitRepo %s: %v", repo, err)
			continue
		}
		sort.Strings(where)
		s.pass("8 shards", "GitRepo %s (shard %s): its Bundles and BundleDeployments carry %s, deployed by that shard's fleet-controller to %s", repo, id, id, strings.Join(where, ", "))
	}
	s.time("sharding", time.Since(start))
}

func countList(m map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(out, ", ")
}

func shardList(m map[string][]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		names := slices.Sorted(slices.Values(m[k]))
		out = append(out, k+": "+strings.Join(names, ", "))
	}
	return strings.Join(out, "; ")
}
