package e2e_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// fleetShards are the Fleet controller shards of the test's fleet
// (shardsYAML); startFleetController runs a fleet-controller with
// --shard-id for each, beside the unsharded one, as the fleet chart does
// with shardValues, and notes where each serves its metrics.
var (
	fleetShards  = []string{"shard-a", "shard-b"}
	shardMetrics = map[string]string{}
)

const (
	shardsYAML  = "  shards:\n    fleet: [shard-a, shard-b]\n"
	shardValues = "shards:\n- id: shard-a\n- id: shard-b\n"
	// undeclared is a shard no controller runs.
	undeclared = "shard-z"
	// clusterFinalizer is what Fleet's cluster controller adds to every
	// Cluster it reconciles (internal/cmd/controller/finalize).
	clusterFinalizer = "fleet.cattle.io/cluster-finalizer"
)

// scrape reads a Prometheus metrics endpoint.
func scrape(ctx context.Context, addr string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return string(b), err
}

// sharding is assertion 9 (docs/scale.md): every object the render labels
// with a Fleet shard names a declared one; each labelled Cluster is
// reconciled by its shard's fleet-controller (its metrics name it); a
// Bundle labelled with an undeclared shard is deployed nowhere while its
// twin in a declared shard is; and each GitRepo's Bundles and
// BundleDeployments carry its shard, whose bundle controller (and no other:
// the others' filters drop them) made the BundleDeployments, for clusters
// of other shards too.
func sharding(t *testing.T, ctx context.Context, s *summary, tools, logs string, mgr *cluster, ex *example) {
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
		s.fail("9 shards", "%v", err)
		return
	}
	s.pass("9 shards", "every rendered object with %s names a declared shard (%s): %s", schema.FleetShardLabel, strings.Join(fleetShards, ", "), countList(kinds))

	// Clusters: reconciled by their shard's fleet-controller, whose metrics
	// name every Cluster its cluster controller reconciled. (Not by it
	// alone: the cluster controller filters events, not requests, so a
	// BundleDeployment event it passes, of its own shard's or, for the
	// unsharded controller, of the fleet-agent Bundle agent management
	// makes for every cluster, reconciles the Cluster it lands on whatever
	// its label; docs/scale.md.)
	byShard := map[string][]string{}
	for name, id := range clusterShard {
		byShard[id] = append(byShard[id], name)
	}
	for id, names := range byShard {
		err := eventually(2*time.Minute, func() error {
			m, err := scrape(ctx, shardMetrics[id])
			if err != nil {
				return err
			}
			for _, n := range names {
				if !strings.Contains(m, `name="`+n+`"`) || !strings.Contains(m, "fleet_cluster_") {
					return fmt.Errorf("the fleet-controller of shard %s reports no metric of Cluster %s", id, n)
				}
			}
			return nil
		})
		if err != nil {
			s.fail("9 shards", "%v", err)
			return
		}
	}
	for name := range clusterShard {
		c, err := mgr.get(ctx, fleetClusterGVK, fleetNS, name)
		if err != nil || !slices.Contains(c.GetFinalizers(), clusterFinalizer) {
			s.fail("9 shards", "Cluster %s not reconciled (no %s): %v", name, clusterFinalizer, err)
			return
		}
	}
	s.pass("9 shards", "each sharded Cluster reconciled by its shard's fleet-controller (%s)", shardList(byShard))

	// The control: Bundles like the deliveries', one labelled with a
	// declared shard and one with a shard no controller runs. The first is
	// deployed; by then the second would have been too, were anything
	// processing an undeclared shard.
	dir := t.TempDir()
	write(t, filepath.Join(dir, "ctl", "configmap.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ctl}\ndata: {a: b}\n"))
	targets := filepath.Join(dir, "targets.json")
	write(t, targets, []byte(`{"targets":[{"name":"all","clusterSelector":{}}],"targetRestrictions":[{"name":"all","clusterSelector":{}}]}`))
	for _, c := range []struct{ name, shard string }{{"declared", fleetShards[0]}, {"ghost", undeclared}} {
		label := fmt.Sprintf("--label=fleet.cattle.io/repo-name=%s,%s=%s", c.name, schema.FleetShardLabel, c.shard)
		if _, err := runFleet(ctx, tools, logs, mgr, dir, c.name, "apply", "--targets-file="+targets, label,
			"--namespace", fleetNS, "--", c.name, "ctl"); err != nil {
			s.fail("9 shards", "fleet apply %s: %v", c.name, err)
			return
		}
	}
	err = eventually(2*time.Minute, func() error {
		got, err := deployedTo(ctx, mgr, "declared")
		if err == nil && len(got) == 0 {
			err = fmt.Errorf("Bundle declared (shard %s) deployed nowhere yet", fleetShards[0])
		}
		return err
	})
	if err == nil {
		time.Sleep(5 * time.Second)
		var got map[string]string
		if got, err = deployedTo(ctx, mgr, "ghost"); err == nil && len(got) > 0 {
			err = fmt.Errorf("Bundle ghost, labelled with the undeclared shard %s, deployed to %v", undeclared, got)
		}
	}
	if err != nil {
		s.fail("9 shards", "%v", err)
	} else {
		s.pass("9 shards", "a Bundle labelled %s is deployed; one labelled %s, which no controller runs, nowhere", fleetShards[0], undeclared)
	}

	// GitRepos: their Bundles and BundleDeployments carry their shard, and
	// the BundleDeployments (made only by that shard's bundle controller)
	// reach clusters of the other shard too.
	for repo, id := range repoShard {
		bs, err := bundlesOf(ctx, mgr, repo)
		if err != nil || len(bs) == 0 {
			s.fail("9 shards", "GitRepo %s: no Bundle (%v)", repo, err)
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
			s.fail("9 shards", "GitRepo %s: %v", repo, err)
			continue
		}
		sort.Strings(where)
		s.pass("9 shards", "GitRepo %s (shard %s): its Bundles and BundleDeployments carry %s, deployed by that shard's fleet-controller to %s", repo, id, id, strings.Join(where, ", "))
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
