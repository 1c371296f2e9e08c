package pipeline

import (
	"context"
	"path/filepath"

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

// Targets loads fleet.yaml and its lock and returns what reaches each of its
// clusters: the layers selected for it, the deliveries whose targets select
// it (Fleet's matching, package fleetmatch) and its shards (those the lock
// keeps, or those a render would assign now), every delivery target that
// reaches no cluster, and each shard's load (`fleetgen targets`, SPEC §2).
// It reads neither the layer folders nor the output, and writes nothing.
func Targets(ctx context.Context, cfg Config) (*Reach, error) {
	f, err := load(cfg)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &Reach{Reach: f.Reach()}
	if f.Spec.Shards == nil {
		return r, nil
	}
	l, _, err := loadLock(filepath.Dir(cfg.file()))
	if err != nil {
		return nil, err
	}
	p := shard.Compute(f, l, shard.Options{Rebalance: cfg.Rebalance})
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
	return r, nil
}
