package lock

import (
	"fmt"
	"sort"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Shards are the controller shards fleetgen assigned (SPEC §8): once a
// cluster or delivery has one it keeps it, so that adding or removing others
// moves none. Like client IDs, entries of clusters no longer listed are kept.
type Shards struct {
	// Clusters is sorted by Cluster.
	Clusters []ClusterShard `json:"clusters,omitempty"`
	// Deliveries is sorted by Delivery: the Fleet shard of each delivery's
	// GitRepo (its Bundles and BundleDeployments follow it).
	Deliveries []DeliveryShard `json:"deliveries,omitempty"`
}

// ClusterShard is one cluster's shards: its Fleet shard ID and its Argo CD
// application-controller replica, each set when that manager is sharded and
// the cluster registered with it.
type ClusterShard struct {
	Cluster string `json:"cluster"`
	Fleet   string `json:"fleet,omitempty"`
	ArgoCD  *int   `json:"argocd,omitempty"`
}

// DeliveryShard is the Fleet shard of one delivery's GitRepo.
type DeliveryShard struct {
	Delivery string `json:"delivery"`
	Fleet    string `json:"fleet"`
}

func (s *Shards) clone() *Shards {
	if s == nil {
		return nil
	}
	c := &Shards{Clusters: append([]ClusterShard(nil), s.Clusters...), Deliveries: append([]DeliveryShard(nil), s.Deliveries...)}
	for i := range c.Clusters {
		if n := c.Clusters[i].ArgoCD; n != nil {
			v := *n
			c.Clusters[i].ArgoCD = &v
		}
	}
	return c
}

func (l *Lock) sortShards() {
	s := l.Shards
	if s == nil {
		return
	}
	if len(s.Clusters) == 0 && len(s.Deliveries) == 0 {
		l.Shards = nil
		return
	}
	sort.Slice(s.Clusters, func(i, j int) bool { return s.Clusters[i].Cluster < s.Clusters[j].Cluster })
	sort.Slice(s.Deliveries, func(i, j int) bool { return s.Deliveries[i].Delivery < s.Deliveries[j].Delivery })
}

// ClusterShard returns the shards kept for cluster.
func (l *Lock) ClusterShard(cluster string) (ClusterShard, bool) {
	if l.Shards == nil {
		return ClusterShard{}, false
	}
	cs := l.Shards.Clusters
	i := sort.Search(len(cs), func(i int) bool { return cs[i].Cluster >= cluster })
	if i < len(cs) && cs[i].Cluster == cluster {
		return cs[i], true
	}
	return ClusterShard{}, false
}

// DeliveryShard returns the Fleet shard kept for delivery's GitRepo.
func (l *Lock) DeliveryShard(delivery string) (string, bool) {
	if l.Shards == nil {
		return "", false
	}
	ds := l.Shards.Deliveries
	i := sort.Search(len(ds), func(i int) bool { return ds[i].Delivery >= delivery })
	if i < len(ds) && ds[i].Delivery == delivery {
		return ds[i].Fleet, true
	}
	return "", false
}

// SetShards replaces the shard entries (package shard computes them all at
// once) and sorts them.
func (l *Lock) SetShards(clusters []ClusterShard, deliveries []DeliveryShard) {
	l.Shards = &Shards{Clusters: clusters, Deliveries: deliveries}
	l.sortShards()
}

// checkShards reports what the decoder cannot in the shard entries: an ID
// that cannot be a Fleet shard, a negative replica, an entry listed twice.
func (l *Lock) checkShards(add func(at string, e *problem.FieldError)) {
	if l.Shards == nil {
		return
	}
	id := func(path, s string) {
		if s != "" && schema.ShardIDProblem(s) != "" {
			add(path, problem.InvalidValue(path, "malformed Fleet shard ID: %s", schema.ShardIDProblem(s)))
		}
	}
	clusters := map[string]int{}
	for i, c := range l.Shards.Clusters {
		path := fmt.Sprintf("shards.clusters[%d]", i)
		id(path+".fleet", c.Fleet)
		if c.ArgoCD != nil && (*c.ArgoCD < 0 || *c.ArgoCD >= schema.MaxArgoCDShards) {
			add(path+".argocd", problem.InvalidValue(path+".argocd", "malformed Argo CD shard: want 0 to %d", schema.MaxArgoCDShards-1))
		}
		if j, dup := clusters[c.Cluster]; dup && c.Cluster != "" {
			add(path, problem.Duplicate(path+".cluster", "duplicate cluster (also shards.clusters[%d]): want one entry per cluster", j))
		} else {
			clusters[c.Cluster] = i
		}
	}
	deliveries := map[string]int{}
	for i, d := range l.Shards.Deliveries {
		path := fmt.Sprintf("shards.deliveries[%d]", i)
		id(path+".fleet", d.Fleet)
		if j, dup := deliveries[d.Delivery]; dup && d.Delivery != "" {
			add(path, problem.Duplicate(path+".delivery", "duplicate delivery (also shards.deliveries[%d]): want one entry per delivery", j))
		} else {
			deliveries[d.Delivery] = i
		}
	}
}
