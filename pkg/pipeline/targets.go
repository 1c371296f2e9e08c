package pipeline

import (
	"context"
	"slices"
	"strings"

	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/shard"
)

// Reach is what Targets returns: what reaches each cluster (schema.Reach:
// its layers, deliveries, managers and shards) and, for the cluster that
// runs Argo CD, every ApplicationSet it receives with the Applications it
// would create, which each cluster's entry lists too; and the load of every
// declared shard (SPEC §8).
type Reach struct {
	*schema.Reach
	ApplicationSets []ApplicationSetPreview `json:"applicationSets"`
	// Load is each shard's load, Fleet's then Argo CD's, in declared
	// order; empty when spec.shards declares none.
	Load []shard.Load `json:"load,omitempty"`
}

// TargetsOptions are Targets'.
type TargetsOptions struct {
	// Clusters limits the clusters listed to these (`--cluster`: names of
	// spec.clusters or the manager's); nil means all. The targets and layer
	// selectors that select nothing are listed whatever it holds.
	Clusters []string
}

// Targets loads fleet.yaml and returns what reaches each of its clusters:
// the layers selected for it, the deliveries whose targets select it
// (Fleet's matching, package fleetmatch), the managers that register it and
// its shards (those the lock keeps, or those a render would assign now);
// every delivery target, layer selector and manager selector that reaches
// no cluster, with the label values that exist (`fleetgen targets`, SPEC
// §2); when a cluster of the fleet runs Argo CD (spec.argocd.cluster),
// every ApplicationSet it receives with the Applications it would create,
// which each cluster's entry lists too; and each shard's load (SPEC §8). It
// writes nothing.
//
// It explains a fleet that validate refuses too: whenever fleet.yaml holds a
// Fleet it returns its Reach, with validate's problems as the error (what
// Validate would return), so that a target that selects nothing is
// explained before the command exits 2. Names in the Reach then are
// fleet.yaml's, unchecked: print them inert.
func Targets(ctx context.Context, cfg Config, o TargetsOptions) (*Reach, error) {
	ld, _, err := validateAll(ctx, cfg)
	if ld == nil {
		return nil, err
	}
	f := ld.Fleet
	keep, _, serr := f.SelectClusters(o.Clusters)
	if serr != nil {
		return nil, serr
	}
	out := &Reach{Reach: f.Reach(), ApplicationSets: []ApplicationSetPreview{}}
	if f.Spec.ArgoCD != nil {
		if regs, rerr := registrationFiles(f); rerr == nil {
			v := argoCDSees(f, ld.Model, regs)
			out.ApplicationSets = v.preview()
			apps := v.byDestination(out.ApplicationSets)
			for i := range out.Clusters {
				c := &out.Clusters[i]
				c.Applications = append(c.Applications, apps[c.Name]...)
				slices.SortStableFunc(c.Applications, func(a, b schema.ApplicationReach) int {
					if d := strings.Compare(a.ApplicationSet, b.ApplicationSet); d != 0 {
						return d
					}
					return strings.Compare(a.Name, b.Name)
				})
			}
		}
	}
	if ld.Model != nil {
		for i := range out.Clusters {
			c := &out.Clusters[i]
			c.Deliveries = withBundles(c.Deliveries, ld.Model.Delivered(c.Name))
		}
	}
	if f.Spec.Shards != nil && !ld.lockBad {
		p := ld.shardPlan()
		for i := range out.Clusters {
			c := &out.Clusters[i]
			var s schema.ClusterShard
			s.Fleet = p.FleetShard(c.Name)
			if n, ok := p.ArgoCDShard(c.Name); ok {
				s.ArgoCD = &n
			}
			if s.Fleet != "" || s.ArgoCD != nil {
				c.Shard = &s
			}
			if s.Fleet != "" {
				c.ShardWhy = append(c.ShardWhy, p.Why(f, shard.Fleet, i))
			}
			if s.ArgoCD != nil {
				c.ShardWhy = append(c.ShardWhy, p.Why(f, shard.ArgoCD, i))
			}
		}
		out.Load = p.Load
	}
	if keep != nil {
		cs := []schema.ClusterReach{}
		for _, c := range out.Clusters {
			if keep[c.Name] {
				cs = append(cs, c)
			}
		}
		out.Clusters = cs
	}
	return out, err
}

// withBundles adds to a cluster's deliveries the bundles it receives from
// the fleet's own source (sets, layers.Model.Delivered): each delivery's
// bundle folders, and a delivery no target of which selects the cluster
// but a bundle's overrideTargets do, which Fleet deploys all the same.
func withBundles(ds []schema.DeliveryReach, sets []*layers.Set) []schema.DeliveryReach {
	if len(sets) == 0 {
		return ds
	}
	bundles := map[string][]string{}
	var order []string // spec.deliveries order, as the sets come
	for _, s := range sets {
		if bundles[s.Delivery] == nil {
			order = append(order, s.Delivery)
		}
		bundles[s.Delivery] = append(bundles[s.Delivery], s.Origin)
	}
	for i := range ds {
		ds[i].Bundles = bundles[ds[i].Name]
		delete(bundles, ds[i].Name)
	}
	for _, name := range order {
		if b, ok := bundles[name]; ok {
			ds = append(ds, schema.DeliveryReach{Name: name, Bundles: b, Why: "a bundle's own overrideTargets"})
		}
	}
	for i := range ds {
		slices.Sort(ds[i].Bundles)
		ds[i].Bundles = slices.Compact(ds[i].Bundles)
	}
	return ds
}
