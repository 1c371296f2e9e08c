package pipeline

import (
	"context"

	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/shard"
)

// Reach is what Targets returns: what reaches each cluster (schema.Reach),
// each cluster's shards, and the load of every declared shard (SPEC §8).
type Reach struct {
	*schema.Reach
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

// Targets loads fleet.yaml and its lock and returns what reaches each of its
// clusters: the layers selected for it, the deliveries whose targets select
// it (Fleet's matching, package fleetmatch) and its shards (those the lock
// keeps, or those a render would assign now), every delivery target and
// layer selector that reaches no cluster, with the label values that exist,
// and each shard's load (`fleetgen targets`, SPEC §2 and §8). It writes
// nothing.
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
	keep, _, serr := ld.Fleet.SelectClusters(o.Clusters)
	if serr != nil {
		return nil, serr
	}
	f := ld.Fleet
	r := &Reach{Reach: f.Reach()}
	if f.Spec.Shards != nil && !ld.lockBad {
		p := ld.shardPlan()
		for i := range r.Clusters {
			c := &r.Clusters[i]
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
		r.Load = p.Load
	}
	if keep != nil {
		cs := []schema.ClusterReach{}
		for _, c := range r.Clusters {
			if keep[c.Name] {
				cs = append(cs, c)
			}
		}
		r.Clusters = cs
	}
	return r, err
}
