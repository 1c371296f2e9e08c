package pipeline

import (
	"fmt"
	"maps"
	"strings"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/shard"
)

// shardPlan is the shard assignment of ld's fleet from its lock as it is
// now (package shard), computed once per lock.
func (ld *Loaded) shardPlan() *shard.Plan {
	if ld.shards == nil || ld.shardsOf != ld.Lock {
		ld.shards = shard.Compute(ld.Fleet, ld.Lock, shard.Options{Rebalance: ld.rebalance})
		ld.shardsOf = ld.Lock
	}
	return ld.shards
}

// lockedShards is the --locked refusal of a render that would change the
// lock's shard entries: assign a new cluster or delivery, or move one.
func lockedShards(p *shard.Plan) error {
	var names []string
	seen := map[string]bool{}
	for _, as := range [][]shard.Assignment{p.Added, p.Moved} {
		for _, a := range as {
			n := a.Name
			if a.Delivery {
				n = "delivery " + n
			}
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return problem.Invalid(fmt.Errorf("a render would change the shards %s keeps for %s (a new cluster or delivery, a changed pin, or --rebalance), and with --locked (or -o -) the lock is never changed: run `fleetgen render -o DIR` locally and commit %s",
		lock.FileName, shortList(names), lock.FileName))
}

// shortList names at most three of names, then how many more.
func shortList(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}

// liveLabels gives each cluster the model renders Fleet bundles for the
// labels its Cluster object has once the manager's Flux applied it, which
// Fleet's values templating reads (layers.FleetCluster.Live): fleet.yaml's,
// the shard render writes (shardPlan: the lock's, or a new cluster's), and
// the owner labels of the Kustomization that applies ManagerDir.
func (ld *Loaded) liveLabels() {
	cs := ld.layerOpts.Clusters
	if len(cs) == 0 {
		return
	}
	var plan *shard.Plan
	declared := map[string]bool{}
	if ld.Fleet.FleetShards() {
		plan = ld.shardPlan()
		for _, id := range ld.Fleet.Spec.Shards.Fleet {
			declared[id] = true
		}
	}
	flux := layout.FluxApplied(layout.FluxNamespace, layout.ManagerKustomizationName)
	for i := range cs {
		live := make(map[string]string, len(cs[i].Labels)+len(flux)+1)
		maps.Copy(live, cs[i].Labels)
		if plan != nil {
			if id := plan.FleetShard(cs[i].Name); declared[id] {
				live[schema.FleetShardLabel] = id
			}
		}
		maps.Copy(live, flux)
		cs[i].Live = live
	}
}
