package schema

import "fmt"

// The JSON Schema's documentation of spec.shards and spec.clusters[].shard
// (SPEC §8, docs/scale.md), merged into fieldDocs.
func init() {
	for k, d := range shardDocs {
		fieldDocs[k] = d
	}
}

var shardDocs = map[string]fieldDoc{
	"spec.shards": {desc: "The controller shards a large fleet runs its managers in. Every cluster gets one shard per manager declared here: clusters[].shard pins it, otherwise fleetgen assigns the least loaded one and keeps it in fleet.lock.yaml, so adding or removing clusters moves no other (render --rebalance moves them on purpose)."},
	"spec.shards.fleet": {desc: "Fleet controller shard IDs, the fleet chart's shards[].id: each cluster, delivery (GitRepo) and group is labelled " + FleetShardLabel + " with one of them.",
		extra: map[string]any{"minItems": 1, "uniqueItems": true}, example: []any{"eu-1", "eu-2", "us-1"}},
	"spec.shards.fleet[]": {desc: fmt.Sprintf("A shard ID: at most %d lower case letters, digits and '-'.", MaxShardIDLen), pattern: shardIDRE.String(), maxLen: MaxShardIDLen, example: "eu-1"},
	"spec.shards.argocd": {desc: "The number of Argo CD application-controller replicas: each cluster Secret carries its replica, 0 to N-1, in its shard key. Needs spec.argocd.",
		extra: map[string]any{"minimum": 1, "maximum": MaxArgoCDShards}, example: 3},

	"spec.clusters[].shard":        {desc: "Pins the cluster's shards; unpinned managers are assigned the least loaded shard, kept in fleet.lock.yaml.", extra: map[string]any{"minProperties": 1}, example: map[string]any{"fleet": "eu-1"}},
	"spec.clusters[].shard.fleet":  {desc: "The Fleet shard, one of spec.shards.fleet; only for clusters registered with Fleet (modes agent, manager, capi).", pattern: shardIDRE.String(), maxLen: MaxShardIDLen, example: "eu-1"},
	"spec.clusters[].shard.argocd": {desc: "The Argo CD application-controller replica, 0 to spec.shards.argocd-1; only for clusters spec.argocd selects.", extra: map[string]any{"minimum": 0, "maximum": MaxArgoCDShards - 1}, example: 0},
}
