package shard

import (
	"fmt"
	"slices"
	"strings"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// MaxLoadRatio is how far above the mean a shard's load may go before
// validate warns (SPEC §8).
const MaxLoadRatio = 1.5

// Problems are the input errors of p: every shard of the lock that
// spec.shards no longer declares, with the clusters and deliveries it
// still holds, which must move (`render --rebalance` moves them, and only
// them). Each is placed in f at the declaration that lost the shard.
func (p *Plan) Problems(f *schema.Fleet) problem.Errors {
	type key struct{ manager, shard string }
	var order []key
	held := map[key][]Assignment{}
	for _, a := range p.Stale {
		k := key{a.Manager, a.From}
		if _, ok := held[k]; !ok {
			order = append(order, k)
		}
		held[k] = append(held[k], a)
	}
	var errs problem.Errors
	for _, k := range order {
		var clusters, deliveries []string
		for _, a := range held[k] {
			if a.Delivery {
				deliveries = append(deliveries, a.Name)
			} else {
				clusters = append(clusters, a.Name)
			}
		}
		var what []string
		if len(clusters) > 0 {
			what = append(what, problem.Clusters(clusters, ""))
		}
		if len(deliveries) > 0 {
			slices.Sort(deliveries)
			what = append(what, "the GitRepo of "+plural(len(deliveries), "delivery", "deliveries")+" "+strings.Join(deliveries, ", "))
		}
		path, name, declared := "spec.shards.fleet", "Fleet shard "+k.shard, "spec.shards.fleet no longer declares it (no controller processes an object labelled with it)"
		if k.manager == ArgoCD {
			path, name = "spec.shards.argocd", "Argo CD replica "+k.shard
			declared = fmt.Sprintf("spec.shards.argocd is %d (Argo CD sends a shard out of range to replica 0)", f.ArgoCDShards())
		}
		errs = append(errs, f.At(problem.NotFound(path, "%s puts %s on %s, and %s: these must move, and `fleetgen render --rebalance` moves them, and only them, to the least loaded shards",
			lock.FileName, strings.Join(what, " and "), name, declared)))
	}
	return errs
}

// Warnings are what p's loads make likely a mistake (SPEC §8): a declared
// shard that receives nothing, and one that carries more than MaxLoadRatio
// times the mean of its manager's shards by more than its heaviest cluster
// (less no placement avoids: one cluster on two shards is twice the mean).
func (p *Plan) Warnings(f *schema.Fleet) problem.Errors {
	var ws problem.Errors
	for _, manager := range []string{Fleet, ArgoCD} {
		var loads []Load
		var total int64
		for _, l := range p.Load {
			if l.Manager == manager {
				loads = append(loads, l)
				total += l.weight
			}
		}
		if len(loads) == 0 || (manager == Fleet && f.Spec.Shards != nil && duplicates(f.Spec.Shards.Fleet)) {
			// A shard declared twice is validate's error, and a balance
			// over a list that counts it twice would mislead.
			continue
		}
		mean := float64(total) / float64(len(loads))
		for i, l := range loads {
			path, name := fmt.Sprintf("spec.shards.fleet[%d]", i), "Fleet shard "+l.Shard
			if manager == ArgoCD {
				path, name = "spec.shards.argocd", "Argo CD replica "+l.Shard
			}
			switch {
			case l.weight == 0 && (l.GitRepos == nil || *l.GitRepos == 0):
				ws = append(ws, f.At(problem.EmptyShard(path, "%s receives no cluster%s: its controller has nothing to do (fewer clusters than shards, or pins elsewhere; `fleetgen render --rebalance` moves unpinned clusters onto it)",
					name, map[bool]string{true: " and no GitRepo", false: ""}[manager == Fleet])))
			case mean > 0 && float64(l.weight) > MaxLoadRatio*mean && float64(l.weight)-mean > float64(p.heaviest[manager]):
				ws = append(ws, f.At(problem.ShardLoad(path, "%s carries %s, %.1f× the mean of its %d shards (more than %.1f×): pins put clusters there, or the lock holds an older balance; `fleetgen render --rebalance` moves unpinned clusters to the others",
					name, describe(l), float64(l.weight)/mean, len(loads), MaxLoadRatio)))
			}
		}
	}
	return ws
}

// duplicates reports whether ids holds an ID twice.
func duplicates(ids []string) bool {
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			return true
		}
		seen[id] = true
	}
	return false
}

// describe says what a shard carries: clusters, and for Fleet the
// BundleDeployments they receive.
func describe(l Load) string {
	s := plural(l.Clusters, "cluster", "clusters")
	if l.BundleDeployments != nil {
		s += fmt.Sprintf(" receiving %s (load %d: one per cluster and per BundleDeployment)", plural(*l.BundleDeployments, "BundleDeployment", "BundleDeployments"), l.weight)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
