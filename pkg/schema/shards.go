package schema

import (
	"fmt"
	"regexp"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// Shards declares the controller shards a large fleet runs its managers in
// (spec.shards, SPEC §8). Every cluster gets one shard per manager declared
// here: clusters[].shard pins it, otherwise the pipeline assigns the least
// loaded one and keeps it in fleet.lock.yaml (package shard).
type Shards struct {
	// Fleet are the Fleet controller shard IDs: the fleet chart's
	// shards[].id, each run by a fleet-controller and a gitjob with
	// --shard-id. Clusters, GitRepos and ClusterGroups carry the ID in
	// the fleet.cattle.io/shard-ref label (FleetShardLabel).
	Fleet []string `json:"fleet,omitempty"`
	// ArgoCD is the number of Argo CD application-controller replicas;
	// each cluster Secret carries its replica, 0 to ArgoCD-1, in its shard
	// key. Nil: Argo CD's own algorithm assigns them.
	ArgoCD *int `json:"argocd,omitempty"`
}

// ClusterShard pins a cluster's shards (spec.clusters[].shard): the Fleet
// shard ID and the Argo CD replica (0-based, as Argo CD's shard key counts).
type ClusterShard struct {
	Fleet  string `json:"fleet,omitempty"`
	ArgoCD *int   `json:"argocd,omitempty"`
}

// FleetShardLabel is the label by which Fleet's sharded controllers pick
// the objects they reconcile (rancher/fleet pkg/sharding.ShardingRefLabel).
// fleetgen sets it; fleet.yaml may not.
const FleetShardLabel = "fleet.cattle.io/shard-ref"

// MaxShardIDLen bounds a Fleet shard ID: the fleet chart names a Service
// monitoring-fleet-controller-shard-<id>, and a Service name is a DNS label
// of at most 63 characters (docs/scale.md).
const MaxShardIDLen = 63 - len("monitoring-fleet-controller-shard-")

// MaxArgoCDShards bounds spec.shards.argocd: more application-controller
// replicas than any published deployment runs, and far more than clusters
// a shard needs to be worth running.
const MaxArgoCDShards = 1024

var shardIDRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ShardIDProblem says why id cannot be a Fleet shard ID ("" when it can):
// the lock's parser and Validate share it.
func ShardIDProblem(id string) string {
	if id == "" || len(id) > MaxShardIDLen || !shardIDRE.MatchString(id) {
		return fmt.Sprintf("want at most %d lower case letters, digits and '-', starting and ending with a letter or digit (the fleet chart names a Service monitoring-fleet-controller-shard-<id>, a DNS label)", MaxShardIDLen)
	}
	return ""
}

// FleetShards reports whether spec.shards declares Fleet shards.
func (f *Fleet) FleetShards() bool { return f.Spec.Shards != nil && len(f.Spec.Shards.Fleet) > 0 }

// ArgoCDShards returns spec.shards.argocd, 0 when Argo CD is not sharded.
func (f *Fleet) ArgoCDShards() int {
	if f.Spec.Shards == nil || f.Spec.Shards.ArgoCD == nil || f.Spec.ArgoCD == nil {
		return 0
	}
	return *f.Spec.Shards.ArgoCD
}

// shards checks spec.shards and every clusters[].shard.
func (v *validator) shards() {
	f := v.f
	s := f.Spec.Shards
	declared := map[string]bool{}
	var ids []string // declared, valid, in order
	if s != nil {
		if s.Fleet != nil && len(s.Fleet) == 0 {
			v.add(problem.Required("spec.shards.fleet", "spec.shards.fleet is empty: want the fleet chart's shard IDs (shards[].id), or leave fleet out"))
		}
		seen := map[string]int{}
		for i, id := range s.Fleet {
			p := fmt.Sprintf("spec.shards.fleet[%d]", i)
			if why := ShardIDProblem(id); why != "" {
				v.add(problem.InvalidValue(p, "invalid Fleet shard ID %q: %s", id, why))
				continue
			}
			if j, dup := seen[id]; dup {
				v.add(problem.Duplicate(p, "duplicate Fleet shard ID %q (also spec.shards.fleet[%d]): want each shard once", id, j))
				continue
			}
			seen[id] = i
			declared[id] = true
			ids = append(ids, id)
		}
		if n := s.ArgoCD; n != nil {
			switch {
			case *n < 1 || *n > MaxArgoCDShards:
				v.add(problem.InvalidValue("spec.shards.argocd", "spec.shards.argocd is %d: want the number of Argo CD application-controller replicas, 1 to %d (leave it out when Argo CD is not sharded)", *n, MaxArgoCDShards))
			case f.Spec.ArgoCD == nil:
				v.add(problem.NotApplicable("spec.shards.argocd", "spec.shards.argocd shards Argo CD cluster Secrets, and the fleet has none: add spec.argocd or remove spec.shards.argocd"))
			}
		}
	}
	argo := map[int]bool{}
	for _, i := range f.ArgoCDClusters() {
		argo[i] = true
	}
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		if c.Shard == nil {
			continue
		}
		p := fmt.Sprintf("spec.clusters[%d].shard", i)
		if c.Shard.Fleet == "" && c.Shard.ArgoCD == nil {
			v.add(problem.Required(p, "shard pins nothing: want fleet: ID and/or argocd: N, or leave shard out"))
		}
		if id := c.Shard.Fleet; id != "" {
			m := c.ModeOf()
			switch {
			case m != nil && !m.Fleet:
				v.add(problem.NotApplicable(p+".fleet", "cluster %s registers in mode %s, not with Fleet, so no Fleet controller shard processes it: remove shard.fleet (Fleet modes: %s)",
					c.Name, c.Registration.Mode, problem.OrList(modeNames(func(m *Mode) bool { return m.Fleet }))))
			case !f.FleetShards():
				v.add(problem.NotFound(p+".fleet", "shard %q is not declared: spec.shards.fleet lists no Fleet shards (an object labelled with a shard no controller runs is processed by none)", id))
			case !declared[id] && ShardIDProblem(id) == "":
				v.add(problem.NotFound(p+".fleet", "shard %q is not declared in spec.shards.fleet (an object labelled with a shard no controller runs is processed by none): want %s%s",
					id, problem.OrList(ids), problem.DidYouMean(id, ids)))
			case !declared[id]:
				v.add(problem.InvalidValue(p+".fleet", "invalid Fleet shard ID %q: %s", id, ShardIDProblem(id)))
			}
		}
		if n := c.Shard.ArgoCD; n != nil {
			replicas := f.ArgoCDShards()
			switch {
			case f.Spec.ArgoCD == nil || !argo[i]:
				v.add(problem.NotApplicable(p+".argocd", "spec.argocd does not select cluster %s, so it has no Argo CD cluster Secret to carry a shard: remove shard.argocd", c.Name))
			case replicas == 0:
				v.add(problem.NotFound(p+".argocd", "Argo CD shard %d is not declared: spec.shards.argocd is not set (want the number of application-controller replicas there)", *n))
			case *n < 0 || *n >= replicas:
				v.add(problem.NotFound(p+".argocd", "Argo CD shard %d is not declared: spec.shards.argocd is %d, so want 0 to %d (Argo CD counts replicas from 0 and sends a shard out of range to replica 0)", *n, replicas, replicas-1))
			}
		}
	}
}

// reservedLabel refuses, in a label map or selector of fleet.yaml, a key
// that the live objects carry whatever fleet.yaml says: FleetShardLabel,
// which fleetgen sets from spec.shards, and the owner labels Flux's
// kustomize-controller sets on everything it applies (a Fleet Cluster's are
// the manager's Kustomization's, which Fleet's targets and values templates
// read).
func reservedLabel(k string) string {
	switch k {
	case FleetShardLabel:
		return "it is fleetgen's to set on the Fleet objects it renders, from spec.shards.fleet: declare the shards there and pin a cluster with clusters[].shard.fleet"
	case "kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace":
		return "Flux sets it on every object it applies (a cluster's Fleet Cluster has the manager Kustomization's, " + layout.FluxNamespace + "/" + layout.ManagerKustomizationName + "), whatever fleet.yaml says: use a label of your own"
	}
	return ""
}

// BundleCount is how many Bundles Fleet's gitjob makes of d: one per base of
// a driven scan, and at least one per path of a classic scan (a path holding
// several fleet.yaml folders makes one each; fleetgen does not clone the
// repository to count them), or one for a scan of the root.
func (d *Delivery) BundleCount() int {
	switch {
	case len(d.Bundles) > 0:
		return len(d.Bundles)
	case len(d.Paths) > 0:
		return len(d.Paths)
	}
	return 1
}

// BundleDeployments returns, per cluster of spec.clusters, the
// BundleDeployments Fleet makes there for the fleet's deliveries (each
// delivery that reaches it: BundleCount), and per delivery how many
// clusters it reaches (Fleet's matching, as Reach).
func (f *Fleet) BundleDeployments() (perCluster, reached []int) {
	dr := f.reach()
	perCluster = make([]int, len(f.Spec.Clusters))
	reached = make([]int, len(f.Spec.Deliveries))
	for d := range f.Spec.Deliveries {
		n := f.Spec.Deliveries[d].BundleCount()
		for ci, t := range dr.target[d] {
			if t >= 0 {
				perCluster[ci] += n
				reached[d]++
			}
		}
	}
	return perCluster, reached
}

// A GitRepo's status in Fleet v0.16 (docs/scale.md) holds, per cluster its
// Bundles reach, one perClusterResourceCounts entry keyed by the cluster's
// ID (workspace/name) and, per resource deployed there, the ID again in
// resources[].perClusterState, whose IDs Fleet stops adding at 1 MiB in all
// (rancher/fleet internal/resourcestatus). etcd refuses an object over its
// request limit, 1.5 MiB by default, and the controller's status update
// fails. fleetgen cannot see a bundle's resources (the repository is not
// cloned) and counts one per bundle, so its estimate is a lower bound.
const (
	// statusPerCluster is one perClusterResourceCounts entry without its
	// ID: the eight counts in JSON, quotes, colon and comma.
	statusPerCluster = 111
	// statusPerResource is one ID in a perClusterState list beyond its
	// length: quotes and comma.
	statusPerResource = 3
	// maxStateIDs is where Fleet stops adding IDs to perClusterState.
	maxStateIDs = 1 << 20
	// MaxGitRepoStatus is the estimate above which validate warns: two
	// thirds of etcd's 1.5 MiB, the rest left to the status's conditions,
	// display and the resources beyond one per bundle.
	MaxGitRepoStatus = 1 << 20
)

// gitRepoStatus estimates the bytes of the status of delivery d's GitRepo
// (a lower bound, see MaxGitRepoStatus), reach being its target per cluster.
func (f *Fleet) gitRepoStatus(d int, target []int) int {
	ids, counts := 0, 0
	ns := len(f.Spec.Manager.Namespace) + 1
	for ci, t := range target {
		if t < 0 {
			continue
		}
		id := ns + len(f.Spec.Clusters[ci].Name)
		counts += statusPerCluster + id
		ids += id + statusPerResource
	}
	return counts + min(maxStateIDs, ids*f.Spec.Deliveries[d].BundleCount())
}
