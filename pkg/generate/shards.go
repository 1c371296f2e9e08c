package generate

import (
	"strconv"

	"fleetgen.dev/fleetgen/pkg/fleetmatch"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// The shard each rendered object carries, the way its manager reads it (SPEC
// §8, docs/scale.md): Fleet's sharded controllers reconcile only the objects
// whose schema.FleetShardLabel names their --shard-id, so the Cluster, the
// GitRepo (whose gitjob copies its labels onto the Bundles it makes, and the
// bundle controller onto their BundleDeployments) and the ClusterGroup carry
// it; Argo CD reads a cluster Secret's shard key. The shards come from the
// lock, where package shard put them; one the lock lacks (or names without
// spec.shards declaring it) is not rendered: the pipeline refuses such a
// render before it gets here.

// fleetShards is the set of declared Fleet shard IDs; nil when Fleet is not
// sharded.
func (r *renderer) fleetShards() map[string]bool {
	if !r.f.FleetShards() {
		return nil
	}
	r.shardOnce.Do(func() {
		r.declared = map[string]bool{}
		for _, id := range r.f.Spec.Shards.Fleet {
			r.declared[id] = true
		}
	})
	return r.declared
}

// clusterShard is the Fleet shard of cluster name; "" when none.
func (r *renderer) clusterShard(name string) string {
	declared := r.fleetShards()
	if declared == nil {
		return ""
	}
	if e, ok := r.l.ClusterShard(name); ok && declared[e.Fleet] {
		return e.Fleet
	}
	return ""
}

// fleetLabels are the labels of a cluster's Fleet Cluster: its own, and its
// shard.
func (r *renderer) fleetLabels(c *schema.Cluster) map[string]string {
	return withShard(c.Labels, r.clusterShard(c.Name))
}

// gitRepoLabels are the labels of a delivery's GitRepo: its shard, or none.
func (r *renderer) gitRepoLabels(d *schema.Delivery) map[string]string {
	if declared := r.fleetShards(); declared != nil {
		if id, ok := r.l.DeliveryShard(d.Name); ok && declared[id] {
			return map[string]string{schema.FleetShardLabel: id}
		}
	}
	return nil
}

// groupLabels are the labels of a ClusterGroup: the shard that holds most of
// its clusters (the first declared on a tie, or for a group of none). Fleet's
// ClusterGroup controller recomputes a group's status, from every cluster it
// selects in any shard, when one of its own shard's Clusters changes: this
// shard sees most of its changes.
func (r *renderer) groupLabels(g fleetmatch.Group) map[string]string {
	declared := r.fleetShards()
	if declared == nil {
		return nil
	}
	count := map[string]int{}
	for i := range r.f.Spec.Clusters {
		c := &r.f.Spec.Clusters[i]
		if m := c.ModeOf(); m != nil && m.Fleet && fleetmatch.Selects(g.Selector, c.Labels) {
			count[r.clusterShard(c.Name)]++
		}
	}
	best := ""
	for _, id := range r.f.Spec.Shards.Fleet {
		if best == "" || count[id] > count[best] {
			best = id
		}
	}
	return map[string]string{schema.FleetShardLabel: best}
}

// argoCDShard is the shard key of a cluster's Argo CD Secret: its replica
// as Argo CD reads it (a decimal), and false when Argo CD is not sharded.
func (r *renderer) argoCDShard(name string) (string, bool) {
	n := r.f.ArgoCDShards()
	if n == 0 {
		return "", false
	}
	if e, ok := r.l.ClusterShard(name); ok && e.ArgoCD != nil && *e.ArgoCD >= 0 && *e.ArgoCD < n {
		return strconv.Itoa(*e.ArgoCD), true
	}
	return "", false
}

// withShard returns labels with the shard label added; labels itself when
// id is "".
func withShard(labels map[string]string, id string) map[string]string {
	if id == "" {
		return labels
	}
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[schema.FleetShardLabel] = id
	return out
}
