// Package shard assigns the controller shards of SPEC §8: the Fleet shard of
// every cluster registered with Fleet and of every delivery's GitRepo, and
// the Argo CD application-controller replica of every cluster Secret. An
// assignment, once made, is kept in fleet.lock.yaml, so that adding or
// removing a cluster moves no other; Options.Rebalance moves them on
// purpose. It is pure: Compute reads a loaded fleet and its lock, and
// returns the lock's new entries, what moved, and each shard's load.
//
// docs/scale.md explains the loads and which Fleet objects carry the shard.
package shard

import (
	"slices"
	"strconv"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Managers, as Load.Manager and Assignment.Manager name them.
const (
	Fleet  = "fleet"
	ArgoCD = "argocd"
)

// Options are Compute's.
type Options struct {
	// Rebalance reassigns on purpose (render --rebalance): the clusters and
	// deliveries whose shard is no longer declared, and only them; when
	// there are none, the fewest unpinned ones that bring every shard
	// within one cluster's load of the others.
	Rebalance bool
}

// Plan is every shard assignment of a fleet after Compute.
type Plan struct {
	// Clusters and Deliveries are the lock's new shard entries: those of
	// the lock for clusters and deliveries no longer listed (or no longer
	// registered with the manager), and the assignment of every other.
	Clusters   []lock.ClusterShard
	Deliveries []lock.DeliveryShard
	// Changed says whether the entries differ from the lock's.
	Changed bool
	// Added, Moved and Stale are, in input order: the assignments of
	// clusters and deliveries the lock had none for, those it had another
	// for (a pin changed, or Rebalance), and those the lock puts on a shard
	// spec.shards no longer declares (From), left there until Rebalance.
	Added, Moved, Stale []Assignment
	// Load is each declared shard's load, Fleet's then Argo CD's, in
	// declared order.
	Load []Load

	heaviest map[string]int64  // manager -> the heaviest cluster's load
	fleet    map[string]string // cluster -> Fleet shard
	gitRepo  map[string]string // delivery -> Fleet shard
	argo     map[string]int    // cluster -> replica
}

// Assignment is one cluster's or delivery's shard for one manager.
type Assignment struct {
	Manager string // Fleet or ArgoCD
	// Delivery says Name is a delivery (its GitRepo), not a cluster.
	Delivery bool
	Name     string
	// From is the lock's shard ("" when it had none), To the new one
	// ("" when a stale one is left in place).
	From, To string
}

// Load is what one shard carries (`fleetgen targets --output json`, SPEC §8).
type Load struct {
	Manager  string `json:"manager"`
	Shard    string `json:"shard"`
	Clusters int    `json:"clusters"`
	// BundleDeployments (Fleet) are those its clusters receive from the
	// fleet's deliveries, whose status its cluster controller aggregates.
	BundleDeployments *int `json:"bundleDeployments,omitempty"`
	// GitRepos (Fleet) are the deliveries it runs, and
	// GitRepoBundleDeployments the BundleDeployments their Bundles make (for
	// clusters of any shard), which its bundle controller writes.
	GitRepos                 *int `json:"gitRepos,omitempty"`
	GitRepoBundleDeployments *int `json:"gitRepoBundleDeployments,omitempty"`

	// weight is the balanced quantity: clusters plus BundleDeployments
	// (Fleet), clusters (Argo CD).
	weight int64
}

// Compute places every cluster and delivery of f (defaulted and valid) on
// its shards, starting from l's entries.
func Compute(f *schema.Fleet, l *lock.Lock, o Options) *Plan {
	p := &Plan{heaviest: map[string]int64{}, fleet: map[string]string{}, gitRepo: map[string]string{}, argo: map[string]int{}}
	entries := map[string]lock.ClusterShard{}
	deliveries := map[string]string{}
	if l.Shards != nil {
		for _, e := range l.Shards.Clusters {
			entries[e.Cluster] = e
		}
		for _, e := range l.Shards.Deliveries {
			deliveries[e.Delivery] = e.Fleet
		}
	}
	bds, reached := f.BundleDeployments()

	// What to place, per manager: Fleet's clusters and deliveries, Argo
	// CD's clusters.
	var fleetIDs, argoIDs []string
	var fleetItems, gitRepoItems, argoItems []item
	var fleetWho []int // fleetItems' index in spec.clusters
	if f.FleetShards() {
		fleetIDs = f.Spec.Shards.Fleet
		for i := range f.Spec.Clusters {
			c := &f.Spec.Clusters[i]
			if m := c.ModeOf(); m == nil || !m.Fleet {
				continue
			}
			it := item{name: c.Name, weight: 1 + int64(bds[i]), had: entries[c.Name].Fleet}
			if c.Shard != nil {
				it.pin = c.Shard.Fleet
			}
			fleetItems, fleetWho = append(fleetItems, it), append(fleetWho, i)
			p.heaviest[Fleet] = max(p.heaviest[Fleet], it.weight)
		}
		for d := range f.Spec.Deliveries {
			ds := &f.Spec.Deliveries[d]
			gitRepoItems = append(gitRepoItems, item{name: ds.Name, weight: 1 + int64(ds.BundleCount()*reached[d]), had: deliveries[ds.Name]})
		}
	}
	if n := f.ArgoCDShards(); n > 0 {
		argoIDs = make([]string, n)
		for i := range argoIDs {
			argoIDs[i] = strconv.Itoa(i)
		}
		for _, i := range f.ArgoCDClusters() {
			c := &f.Spec.Clusters[i]
			it := item{name: c.Name, weight: 1}
			if e, ok := entries[c.Name]; ok && e.ArgoCD != nil {
				it.had = strconv.Itoa(*e.ArgoCD)
			}
			if c.Shard != nil && c.Shard.ArgoCD != nil {
				it.pin = strconv.Itoa(*c.Shard.ArgoCD)
			}
			argoItems = append(argoItems, it)
			p.heaviest[ArgoCD] = 1
		}
	}
	// --rebalance moves what is stale, and only that, while anything is.
	balance := !stale(fleetIDs, fleetItems) && !stale(fleetIDs, gitRepoItems) && !stale(argoIDs, argoItems)

	if f.FleetShards() {
		pl := assign(fleetIDs, fleetItems, o.Rebalance, balance)
		p.record(Fleet, false, fleetItems, pl)
		loads := make([]Load, len(fleetIDs))
		for s, id := range fleetIDs {
			loads[s] = Load{Manager: Fleet, Shard: id, BundleDeployments: new(int), GitRepos: new(int), GitRepoBundleDeployments: new(int)}
		}
		at := indexOf(fleetIDs)
		for k, it := range fleetItems {
			s := pl.shard[k]
			if s == "" {
				continue
			}
			e := entries[it.name]
			e.Cluster, e.Fleet = it.name, s
			entries[it.name] = e
			p.fleet[it.name] = s
			ld := &loads[at[s]]
			ld.Clusters++
			*ld.BundleDeployments += bds[fleetWho[k]]
			ld.weight += it.weight
		}
		dpl := assign(fleetIDs, gitRepoItems, o.Rebalance, balance)
		p.record(Fleet, true, gitRepoItems, dpl)
		for k, it := range gitRepoItems {
			s := dpl.shard[k]
			if s == "" {
				continue
			}
			deliveries[it.name] = s
			p.gitRepo[it.name] = s
			ld := &loads[at[s]]
			*ld.GitRepos++
			*ld.GitRepoBundleDeployments += int(it.weight - 1)
		}
		p.Load = append(p.Load, loads...)
	}

	if len(argoIDs) > 0 {
		pl := assign(argoIDs, argoItems, o.Rebalance, balance)
		p.record(ArgoCD, false, argoItems, pl)
		for s, id := range argoIDs {
			p.Load = append(p.Load, Load{Manager: ArgoCD, Shard: id, Clusters: pl.count[s], weight: pl.load[s]})
		}
		for k, it := range argoItems {
			s := pl.shard[k]
			if s == "" {
				continue
			}
			r, _ := strconv.Atoi(s)
			e := entries[it.name]
			e.Cluster, e.ArgoCD = it.name, &r
			entries[it.name] = e
			p.argo[it.name] = r
		}
	}

	for _, e := range entries {
		p.Clusters = append(p.Clusters, e)
	}
	for d, s := range deliveries {
		p.Deliveries = append(p.Deliveries, lock.DeliveryShard{Delivery: d, Fleet: s})
	}
	next := &lock.Lock{}
	next.SetShards(p.Clusters, p.Deliveries)
	if next.Shards != nil {
		p.Clusters, p.Deliveries = next.Shards.Clusters, next.Shards.Deliveries
	} else {
		p.Clusters, p.Deliveries = nil, nil
	}
	p.Changed = !sameShards(l.Shards, next.Shards)
	return p
}

// record adds pl's changes to p.
func (p *Plan) record(manager string, delivery bool, items []item, pl placed) {
	add := func(to *[]Assignment, is []int) {
		for _, i := range is {
			*to = append(*to, Assignment{Manager: manager, Delivery: delivery, Name: items[i].name, From: items[i].had, To: pl.shard[i]})
		}
	}
	add(&p.Added, pl.added)
	add(&p.Moved, slices.Sorted(slices.Values(pl.moved)))
	add(&p.Stale, pl.stale)
}

// Why says where a cluster's shard for manager comes from: its pin, the
// lock, or this assignment (which a render adds to the lock).
func (p *Plan) Why(f *schema.Fleet, manager string, i int) string {
	c := &f.Spec.Clusters[i]
	if c.Shard != nil && (manager == Fleet && c.Shard.Fleet != "" || manager == ArgoCD && c.Shard.ArgoCD != nil) {
		return "pinned: clusters[].shard"
	}
	for _, a := range p.Added {
		if a.Manager == manager && !a.Delivery && a.Name == c.Name {
			return "least loaded: render keeps it in " + lock.FileName
		}
	}
	for _, a := range p.Moved {
		if a.Manager == manager && !a.Delivery && a.Name == c.Name {
			return "moved from " + a.From + " by --rebalance"
		}
	}
	return "kept in " + lock.FileName
}

// Apply writes p's entries into l.
func (p *Plan) Apply(l *lock.Lock) { l.SetShards(p.Clusters, p.Deliveries) }

// FleetShard returns the Fleet shard of a cluster; "" when it has none.
func (p *Plan) FleetShard(cluster string) string { return p.fleet[cluster] }

// GitRepoShard returns the Fleet shard of a delivery's GitRepo; "" when it
// has none.
func (p *Plan) GitRepoShard(delivery string) string { return p.gitRepo[delivery] }

// ArgoCDShard returns a cluster's Argo CD replica; ok is false when it has
// none.
func (p *Plan) ArgoCDShard(name string) (int, bool) {
	r, ok := p.argo[name]
	return r, ok
}

func indexOf(ids []string) map[string]int {
	m := make(map[string]int, len(ids))
	for i, id := range ids {
		m[id] = i
	}
	return m
}

func sameShards(a, b *lock.Shards) bool {
	if a == nil || b == nil {
		return (a == nil || len(a.Clusters)+len(a.Deliveries) == 0) && (b == nil || len(b.Clusters)+len(b.Deliveries) == 0)
	}
	return slices.EqualFunc(a.Clusters, b.Clusters, func(x, y lock.ClusterShard) bool {
		return x.Cluster == y.Cluster && x.Fleet == y.Fleet && (x.ArgoCD == nil) == (y.ArgoCD == nil) && (x.ArgoCD == nil || *x.ArgoCD == *y.ArgoCD)
	}) && slices.Equal(a.Deliveries, b.Deliveries)
}
