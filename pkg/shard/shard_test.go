package shard

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// fleet is a sharded fleet of n clusters: agent, manager and capi clusters
// in Fleet (with every fifth one verrazzano, outside it), three deliveries
// that reach overlapping subsets with 1, 2 and 3 bundles (so a cluster
// receives 0 to 6 BundleDeployments), and Argo CD for the clusters labelled
// argocd=yes.
func fleet(t testing.TB, n int, fleetShards []string, argo int) *schema.Fleet {
	t.Helper()
	f := &schema.Fleet{
		APIVersion: schema.APIVersion, Kind: schema.Kind, Metadata: schema.Metadata{Name: "big"},
		Spec: schema.Spec{
			Manager:  schema.Manager{APIServerURL: "https://fleet.big.example:6443"},
			Registry: schema.Registry{Host: "big.azurecr.io"},
			Source:   schema.Source{Kind: schema.SourceGit, URL: "https://git.big.example/fleet.git"},
			Images:   []string{"rancher/fleet-agent:v0.16.1"},
			Deliveries: []schema.Delivery{
				{Name: "everywhere", Repo: "https://git.big.example/base.git", Targets: []schema.DeliveryTarget{{Name: "all", ClusterSelector: map[string]string{}}}},
				{Name: "prod", Repo: "https://git.big.example/prod.git", Bundles: []schema.DeliveryBundle{{Base: "a"}, {Base: "b"}},
					Targets: []schema.DeliveryTarget{{Name: "prod", ClusterSelector: map[string]string{"env": "prod"}}}},
				{Name: "eu", Repo: "https://git.big.example/eu.git", Paths: []string{"x", "y", "z"},
					Targets: []schema.DeliveryTarget{{Name: "eu", ClusterSelector: map[string]string{"region": "eu"}}}},
			},
			ArgoCD: &schema.ArgoCD{Selector: map[string]string{"argocd": "yes"},
				Auth: schema.ArgoCDAuth{AzureWorkloadIdentity: &schema.AzureWorkloadIdentity{ClientID: "00000000-0000-0000-0000-000000000000"}}},
			Shards: &schema.Shards{Fleet: fleetShards},
		},
	}
	if argo > 0 {
		f.Spec.Shards.ArgoCD = &argo
	}
	for i := range n {
		f.Spec.Clusters = append(f.Spec.Clusters, cluster(i))
	}
	schema.Default(f)
	if err := schema.Validate(f); err != nil {
		t.Fatal(err)
	}
	return f
}

func cluster(i int) schema.Cluster {
	c := schema.Cluster{
		Name:         fmt.Sprintf("c%05d", i),
		Labels:       map[string]string{"env": []string{"prod", "dev", "staging"}[i%3], "region": []string{"eu", "us"}[i/3%2], "argocd": []string{"yes", "no"}[i/7%2]},
		Registration: schema.Registration{Mode: []string{schema.ModeAgent, schema.ModeAgent, schema.ModeCAPI, schema.ModeAgent, schema.ModeVerrazzano}[i%5]},
		APIServer:    &schema.APIServer{URL: fmt.Sprintf("https://c%05d.big.example:6443", i)},
	}
	return c
}

// lockOf is l with p's entries.
func lockOf(p *Plan) *lock.Lock {
	l := lock.New()
	p.Apply(l)
	return l
}

// checkBalance fails unless every shard of each manager is within one
// cluster of the mean (Argo CD) or within one cluster's load of it (Fleet:
// each cluster plus the BundleDeployments it receives), what SPEC §8's
// assignment promises; with bds, each Fleet shard's BundleDeployments too.
func checkBalance(t *testing.T, f *schema.Fleet, p *Plan, checkBDs bool) {
	t.Helper()
	bds, _ := f.BundleDeployments()
	maxWeight := 1 + slices.Max(bds)
	for _, manager := range []string{Fleet, ArgoCD} {
		var ls []Load
		for _, l := range p.Load {
			if l.Manager == manager {
				ls = append(ls, l)
			}
		}
		if len(ls) == 0 {
			continue
		}
		bound := 1
		if manager == Fleet {
			bound = maxWeight
		}
		var sum, sumBD float64
		for _, l := range ls {
			sum += float64(l.weight)
			if l.BundleDeployments != nil {
				sumBD += float64(*l.BundleDeployments)
			}
		}
		mean, meanBD := sum/float64(len(ls)), sumBD/float64(len(ls))
		for _, l := range ls {
			if d := math.Abs(float64(l.weight) - mean); d > float64(bound) {
				t.Errorf("%s shard %s carries %d, %.1f from the mean %.1f: want at most %d", manager, l.Shard, l.weight, d, mean, bound)
			}
			if l.BundleDeployments != nil && checkBDs {
				if d := math.Abs(float64(*l.BundleDeployments) - meanBD); d > float64(bound) {
					t.Errorf("fleet shard %s receives %d BundleDeployments, %.1f from the mean %.1f: want at most %d", l.Shard, *l.BundleDeployments, d, meanBD, bound)
				}
			}
		}
	}
}

// shardsOf is every cluster's shards in p.
func shardsOf(p *Plan) map[string]lock.ClusterShard {
	m := map[string]lock.ClusterShard{}
	for _, c := range p.Clusters {
		m[c.Cluster] = c
	}
	return m
}

// TestAddingClustersMovesNone is issue 36's acceptance test: adding 100
// clusters to a 3,000-cluster sharded fleet changes no existing cluster's
// shard, and every shard stays within one cluster (Argo CD) or one cluster's
// load (Fleet) of the mean.
func TestAddingClustersMovesNone(t *testing.T) {
	t.Parallel()
	ids := []string{"eu-1", "eu-2", "us-1", "us-2", "ap-1"}
	f := fleet(t, 3000, ids, 7)
	first := Compute(f, lock.New(), Options{})
	if len(first.Moved)+len(first.Stale) > 0 || !first.Changed {
		t.Fatalf("first assignment: %d moved, %d stale, changed %v; want only additions", len(first.Moved), len(first.Stale), first.Changed)
	}
	checkBalance(t, f, first, true)
	l := lockOf(first)
	if again := Compute(f, l, Options{}); again.Changed || len(again.Added)+len(again.Moved) > 0 {
		t.Fatalf("a second render changes the lock: %+v", again.Added)
	}

	grown := fleet(t, 3100, ids, 7)
	next := Compute(grown, l, Options{})
	if len(next.Moved) > 0 {
		t.Errorf("adding 100 clusters moved %d existing assignments, first %+v", len(next.Moved), next.Moved[0])
	}
	before, after := shardsOf(first), shardsOf(next)
	for name, was := range before {
		if d := cmp.Diff(was, after[name]); d != "" {
			t.Errorf("cluster %s changed shard (-before +after):\n%s", name, d)
		}
	}
	for i := 3000; i < 3100; i++ {
		c := &grown.Spec.Clusters[i]
		got := after[c.Name]
		if inFleet := c.ModeOf().Fleet; inFleet != (got.Fleet != "") {
			t.Errorf("new cluster %s (mode %s) has Fleet shard %q", c.Name, c.Registration.Mode, got.Fleet)
		}
		if inArgo := c.Labels["argocd"] == "yes"; inArgo != (got.ArgoCD != nil) {
			t.Errorf("new cluster %s (argocd=%s) has Argo CD shard %v", c.Name, c.Labels["argocd"], got.ArgoCD)
		}
	}
	for _, a := range next.Added {
		if !a.Delivery && a.Name < "c03000" {
			t.Errorf("existing cluster %s assigned anew: %+v", a.Name, a)
		}
	}
	checkBalance(t, grown, next, true)
}

// TestRemovingAShardMovesOnlyItsClusters: with a shard gone, the lock's
// clusters on it are stale (validate names them), and --rebalance moves
// them, and only them, keeping the balance.
func TestRemovingAShardMovesOnlyItsClusters(t *testing.T) {
	t.Parallel()
	f := fleet(t, 3000, []string{"eu-1", "eu-2", "us-1", "us-2"}, 5)
	l := lockOf(Compute(f, lock.New(), Options{}))
	on := map[string]bool{} // the clusters and deliveries on us-1
	for _, c := range l.Shards.Clusters {
		if c.Fleet == "us-1" {
			on[c.Cluster] = true
		}
	}
	for _, d := range l.Shards.Deliveries {
		if d.Fleet == "us-1" {
			on["delivery "+d.Delivery] = true
		}
	}

	shrunk := fleet(t, 3000, []string{"eu-1", "eu-2", "us-2"}, 5)
	p := Compute(shrunk, l, Options{})
	stale := map[string]bool{}
	for _, a := range p.Stale {
		if a.From != "us-1" || a.Manager != Fleet {
			t.Errorf("stale %+v: want only us-1's", a)
		}
		stale[name(a)] = true
	}
	if d := cmp.Diff(on, stale); d != "" {
		t.Errorf("stale (-on us-1 +reported):\n%s", d)
	}
	if len(p.Moved)+len(p.Added) > 0 || p.Changed {
		t.Errorf("without --rebalance: %d moved, %d added, changed %v; want the lock as it was", len(p.Moved), len(p.Added), p.Changed)
	}
	if errs := p.Problems(shrunk); len(errs) != 1 {
		t.Errorf("Problems = %v; want one naming us-1", errs)
	}

	r := Compute(shrunk, l, Options{Rebalance: true})
	moved := map[string]bool{}
	for _, a := range r.Moved {
		if a.From != "us-1" {
			t.Errorf("--rebalance moved %+v, not on the removed shard", a)
		}
		moved[name(a)] = true
	}
	if d := cmp.Diff(on, moved); d != "" {
		t.Errorf("--rebalance moved (-on us-1 +moved):\n%s", d)
	}
	if len(r.Stale) > 0 || len(r.Problems(shrunk)) > 0 {
		t.Errorf("after --rebalance: %d stale", len(r.Stale))
	}
	checkBalance(t, shrunk, r, true)
}

func name(a Assignment) string {
	if a.Delivery {
		return "delivery " + a.Name
	}
	return a.Name
}

// TestRebalance: a lock whose balance went (the fleet changed shape) is left
// alone by a render; --rebalance moves the fewest clusters it needs to bring
// every shard within bounds, never a pinned one, and a balanced lock not at
// all.
func TestRebalance(t *testing.T) {
	t.Parallel()
	ids := []string{"a", "b", "c"}
	f := fleet(t, 600, ids, 3)
	// Everything on a and replica 0, as an older fleet might have left it.
	l := lock.New()
	var cs []lock.ClusterShard
	zero := 0
	for _, c := range f.Spec.Clusters {
		cs = append(cs, lock.ClusterShard{Cluster: c.Name, Fleet: "a", ArgoCD: &zero})
	}
	l.SetShards(cs, nil)
	f.Spec.Clusters[0].Shard = &schema.ClusterShard{Fleet: "a"} // pinned where it is

	if p := Compute(f, l, Options{}); len(p.Moved) > 0 {
		t.Fatalf("a render moved %d clusters; want none without --rebalance", len(p.Moved))
	}
	p := Compute(f, l, Options{Rebalance: true})
	checkBalance(t, f, p, false)
	for _, a := range p.Moved {
		if a.Name == f.Spec.Clusters[0].Name && a.Manager == Fleet {
			t.Errorf("--rebalance moved the pinned cluster")
		}
	}
	// The fewest moves: on Argo CD (weight 1) exactly those above the mean.
	argoMoves, argoClusters := 0, 0
	for _, a := range p.Moved {
		if a.Manager == ArgoCD {
			argoMoves++
		}
	}
	for _, ld := range p.Load {
		if ld.Manager == ArgoCD {
			argoClusters += ld.Clusters
		}
	}
	if want := argoClusters - (argoClusters+2)/3; argoMoves != want {
		t.Errorf("--rebalance moved %d Argo CD clusters; want %d (all but a third of them)", argoMoves, want)
	}
	if again := Compute(f, lockOf(p), Options{Rebalance: true}); len(again.Moved) > 0 {
		t.Errorf("--rebalance of a balanced lock moved %d: %+v", len(again.Moved), again.Moved[0])
	}
}

// TestPins: a pin wins over the lock (a move the user asked for), and is
// recorded so that removing the pin later moves nothing.
func TestPins(t *testing.T) {
	t.Parallel()
	f := fleet(t, 30, []string{"a", "b"}, 2)
	l := lockOf(Compute(f, lock.New(), Options{}))
	c := f.Spec.Clusters[0].Name
	was, _ := l.ClusterShard(c)
	to := map[string]string{"a": "b", "b": "a"}[was.Fleet]
	f.Spec.Clusters[0].Shard = &schema.ClusterShard{Fleet: to}
	p := Compute(f, l, Options{})
	if want := []Assignment{{Manager: Fleet, Name: c, From: was.Fleet, To: to}}; !cmp.Equal(p.Moved, want) {
		t.Errorf("Moved = %+v, want %+v", p.Moved, want)
	}
	f.Spec.Clusters[0].Shard = nil
	if q := Compute(f, lockOf(p), Options{}); len(q.Moved) > 0 || q.FleetShard(c) != to {
		t.Errorf("after the pin went: %+v, shard %s; want it kept on %s", q.Moved, q.FleetShard(c), to)
	}
}

// TestNoShards: a fleet without spec.shards leaves the lock's entries alone
// and has no load.
func TestNoShards(t *testing.T) {
	t.Parallel()
	f := fleet(t, 10, []string{"a"}, 0)
	l := lockOf(Compute(f, lock.New(), Options{}))
	f.Spec.Shards = nil
	p := Compute(f, l, Options{})
	if p.Changed || len(p.Load) > 0 || len(p.Added) > 0 {
		t.Errorf("without spec.shards: changed %v, %d loads, %d added", p.Changed, len(p.Load), len(p.Added))
	}
	if got := Compute(f, lock.New(), Options{}); got.Changed || got.Clusters != nil {
		t.Errorf("an empty lock gains entries: %+v", got.Clusters)
	}
}

// TestWarnings: an empty shard and an overloaded one are warned about.
func TestWarnings(t *testing.T) {
	t.Parallel()
	f := fleet(t, 40, []string{"a", "b", "c"}, 0)
	l := lock.New()
	var cs []lock.ClusterShard
	for _, c := range f.Spec.Clusters {
		cs = append(cs, lock.ClusterShard{Cluster: c.Name, Fleet: "a"})
	}
	l.SetShards(cs, []lock.DeliveryShard{{Delivery: "everywhere", Fleet: "a"}, {Delivery: "prod", Fleet: "a"}, {Delivery: "eu", Fleet: "b"}})
	ws := Compute(f, l, Options{}).Warnings(f)
	var codes []string
	for _, w := range ws {
		codes = append(codes, w.Path+" "+w.ErrorCode())
	}
	want := []string{"spec.shards.fleet[0] shard-load", "spec.shards.fleet[2] empty-shard"}
	if d := cmp.Diff(want, codes); d != "" {
		t.Errorf("warnings (-want +got):\n%s\n%v", d, ws)
	}

	// A shard declared twice is validate's error; no balance is computed
	// over a list that counts it twice.
	f.Spec.Shards.Fleet = []string{"a", "b", "a"}
	if ws := Compute(f, l, Options{}).Warnings(f); len(ws) != 0 {
		t.Errorf("warnings with a duplicate shard ID: %v, want none", ws)
	}
}
