package schema

import (
	"fmt"
	"regexp"
	"strings"

	"fleetgen.dev/fleetgen/pkg/fleetmatch"
)

// Delivery is one Fleet GitRepo (spec.deliveries[]): a Git repository whose
// bundles Fleet deploys to the clusters its targets select. Every field is
// the GitRepo field of the same name (fleet.cattle.io/v1alpha1).
type Delivery struct {
	// Name is the GitRepo's name, in the manager's workspace.
	Name string `json:"name"`
	// Repo is a URL Fleet's gitjob clones: https://, http://, ssh://,
	// git:// or scp-style git@host:path.
	Repo string `json:"repo"`
	// Branch or Revision (a tag or commit), not both; with neither Fleet
	// follows master.
	Branch   string `json:"branch,omitempty"`
	Revision string `json:"revision,omitempty"`
	// Bundles is a driven scan (Fleet v0.13+): each base folder is one
	// bundle, with an optional options file relative to it.
	Bundles []DeliveryBundle `json:"bundles,omitempty"`
	// Paths is a classic scan of these folders (globs allowed); never with
	// Bundles. Neither means the repository's root.
	Paths []string `json:"paths,omitempty"`
	// Targets select the clusters, in order: the first that matches a
	// cluster wins. At least one.
	Targets []DeliveryTarget `json:"targets"`
	// HelmSecretName holds the credentials for Helm charts; Fleet v0.16
	// uses them only for chart URLs that HelmRepoURLRegex matches, which
	// Default sets to the mirror (^oci://<registry.host>/) when it is empty.
	HelmSecretName   string `json:"helmSecretName,omitempty"`
	HelmRepoURLRegex string `json:"helmRepoURLRegex,omitempty"`
	// ClientSecretName holds the Git credentials (basic-auth or ssh-auth).
	ClientSecretName string `json:"clientSecretName,omitempty"`
	// ServiceAccount deploys the bundles on the downstream clusters.
	ServiceAccount  string        `json:"serviceAccount,omitempty"`
	PollingInterval string        `json:"pollingInterval,omitempty"`
	CorrectDrift    *CorrectDrift `json:"correctDrift,omitempty"`
	TargetNamespace string        `json:"targetNamespace,omitempty"`
	Paused          bool          `json:"paused,omitempty"`
}

// DeliveryBundle is one bundle of a driven scan.
type DeliveryBundle struct {
	// Base is the bundle's folder, relative to the repository's root.
	Base string `json:"base"`
	// Options is the bundle's options file (a Fleet fleet.yaml), relative to
	// Base; default Base's fleet.yaml, if any.
	Options string `json:"options,omitempty"`
}

// DeliveryTarget is one GitRepo target. Every criterion that is set must
// hold (AND); a target that sets none selects nothing.
type DeliveryTarget struct {
	Name        string `json:"name"`
	ClusterName string `json:"clusterName,omitempty"`
	// ClusterSelector is a matchLabels over the Cluster's labels; {} selects
	// every cluster.
	ClusterSelector map[string]string `json:"clusterSelector,omitempty"`
	// ClusterGroup names one of spec.groups.
	ClusterGroup string `json:"clusterGroup,omitempty"`
	// ClusterGroupSelector is a matchLabels over the labels of the
	// ClusterGroups a cluster is in. fleetgen's groups carry no labels, so
	// only {} (any group, or none) selects anything.
	ClusterGroupSelector map[string]string `json:"clusterGroupSelector,omitempty"`
}

// CorrectDrift is GitRepo spec.correctDrift.
type CorrectDrift struct {
	Enabled         bool `json:"enabled,omitempty"`
	Force           bool `json:"force,omitempty"`
	KeepFailHistory bool `json:"keepFailHistory,omitempty"`
}

// Match is t as Fleet's matcher reads it.
func (t *DeliveryTarget) Match() fleetmatch.Target {
	return fleetmatch.Target{
		Name:                 t.Name,
		ClusterName:          t.ClusterName,
		ClusterGroup:         t.ClusterGroup,
		ClusterSelector:      t.ClusterSelector,
		ClusterGroupSelector: t.ClusterGroupSelector,
	}
}

// Criteria describes t's criteria for people: "clusterGroup production,
// clusterSelector region=eu"; "no criterion" when it sets none.
func (t *DeliveryTarget) Criteria() string {
	var parts []string
	if t.ClusterName != "" {
		parts = append(parts, "clusterName "+t.ClusterName)
	}
	if t.ClusterGroup != "" {
		parts = append(parts, "clusterGroup "+t.ClusterGroup)
	}
	if t.ClusterGroupSelector != nil {
		parts = append(parts, "clusterGroupSelector "+labelList(t.ClusterGroupSelector))
	}
	if t.ClusterSelector != nil {
		parts = append(parts, "clusterSelector "+labelList(t.ClusterSelector))
	}
	if len(parts) == 0 {
		return "no criterion"
	}
	return strings.Join(parts, ", ")
}

// labelList is a matchLabels as k=v,k=v ("{}" when empty: everything).
func labelList(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	keys := sortedKeys(m)
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return strings.Join(keys, ",")
}

// DefaultHelmRepoURLRegex is the helmRepoURLRegex a delivery with a
// helmSecretName gets when it sets none: every chart on the mirror.
func DefaultHelmRepoURLRegex(r Registry) string {
	return "^oci://" + regexp.QuoteMeta(r.Host) + "/"
}

func defaultDeliveries(s *Spec) {
	for i := range s.Deliveries {
		d := &s.Deliveries[i]
		if d.HelmSecretName != "" && d.HelmRepoURLRegex == "" {
			// Fleet v0.16 strips Helm credentials from any chart URL the
			// regex does not match: the mirror holds fleetgen's charts.
			d.HelmRepoURLRegex = DefaultHelmRepoURLRegex(s.Registry)
		}
	}
}

// FleetGroups returns spec.groups as Fleet's matcher sees them: each
// ClusterGroup has its selector (rendered non-nil: {} selects every
// cluster) and no labels.
func (f *Fleet) FleetGroups() []fleetmatch.Group {
	out := make([]fleetmatch.Group, len(f.Spec.Groups))
	for i, g := range f.Spec.Groups {
		sel := g.Selector
		if sel == nil {
			sel = map[string]string{}
		}
		out[i] = fleetmatch.Group{Name: g.Name, Selector: sel}
	}
	return out
}

// deliveryReach is, for every delivery, which target (index) reaches each
// cluster of spec.clusters (-1: none, or not a Fleet cluster), and how many
// clusters each target reaches and matches.
type deliveryReach struct {
	target  [][]int // [delivery][cluster]
	reached [][]int // [delivery][target]: clusters the target is first for
	matched [][]int // [delivery][target]: clusters the target matches at all
}

// reach matches every delivery against every Fleet cluster.
func (f *Fleet) reach() *deliveryReach {
	ds := f.Spec.Deliveries
	r := &deliveryReach{target: make([][]int, len(ds)), reached: make([][]int, len(ds)), matched: make([][]int, len(ds))}
	targets := make([][]fleetmatch.Target, len(ds))
	for d := range ds {
		r.target[d] = make([]int, len(f.Spec.Clusters))
		r.reached[d] = make([]int, len(ds[d].Targets))
		r.matched[d] = make([]int, len(ds[d].Targets))
		for i := range ds[d].Targets {
			targets[d] = append(targets[d], ds[d].Targets[i].Match())
		}
	}
	if len(ds) == 0 {
		return r
	}
	groups := f.FleetGroups()
	for ci := range f.Spec.Clusters {
		c := &f.Spec.Clusters[ci]
		m := c.ModeOf()
		if m == nil || !m.Fleet {
			for d := range ds {
				r.target[d][ci] = -1
			}
			continue
		}
		fc := fleetmatch.Cluster{Name: c.Name, Labels: c.Labels}
		in := fleetmatch.GroupsOf(fc, groups)
		for d := range ds {
			r.target[d][ci] = -1
			for ti, t := range targets[d] {
				if !t.Matches(fc, in) {
					continue
				}
				r.matched[d][ti]++
				if r.target[d][ci] < 0 {
					r.target[d][ci] = ti
					r.reached[d][ti]++
				}
			}
		}
	}
	return r
}

// Reach is what reaches each cluster of a fleet, and each delivery target
// that reaches no cluster. Its JSON encoding is `fleetgen targets --output
// json` (SPEC §2).
type Reach struct {
	// Clusters are every cluster of spec.clusters, in input order.
	Clusters []ClusterReach `json:"clusters"`
	// Unmatched are the targets that are first for no cluster, in input
	// order.
	Unmatched []Unmatched `json:"unmatched"`
	// UnmatchedLayers are the layers whose selector selects no cluster, in
	// input order.
	UnmatchedLayers []UnmatchedLayer `json:"unmatchedLayers"`
	// EmptyManagers are the managers (spec.argocd, spec.kubefleet, …)
	// whose selector selects no cluster, in Registrars order.
	EmptyManagers []EmptyManager `json:"emptyManagers"`
}

// EmptyManager is a manager whose selector selects no cluster.
type EmptyManager struct {
	Manager string `json:"manager"`
	// Why says which label values do exist (LabelHint).
	Why string `json:"-"`
}

// ClusterReach is what reaches one cluster.
type ClusterReach struct {
	Name string `json:"name"`
	// Layers are the layers selected for the cluster, in spec.layers order.
	Layers []string `json:"layers"`
	// Deliveries are the deliveries that reach it, in spec.deliveries
	// order, each with the target that selected it.
	Deliveries []DeliveryReach `json:"deliveries"`
	// Managers are the managers that register it: Fleet or Verrazzano by
	// its mode, then the Registrars that select it, in that order.
	Managers []ManagerReach `json:"managers"`
	// Applications are the Argo CD Applications that ApplicationSets would
	// create on it (filled by the pipeline, which builds the layers of the
	// cluster that runs Argo CD), sorted by ApplicationSet and name.
	Applications []ApplicationReach `json:"applications"`
	// Shard is the cluster's shards (SPEC §8), which the caller fills in
	// from the lock; nil when none is.
	Shard *ClusterShard `json:"shard,omitempty"`
	// ShardWhy says where each shard comes from, Fleet's then Argo CD's.
	ShardWhy []string `json:"-"`

	// Mode is the cluster's registration mode; deliveries reach only
	// clusters of modes registered with Fleet (agent, manager, capi).
	Mode string `json:"-"`
	// Fleet is whether Mode registers the cluster with Fleet.
	Fleet bool `json:"-"`
	// LayerWhy says, per layer, which selector selected it.
	LayerWhy []string `json:"-"`
}

// ManagerReach is a manager that registers a cluster.
type ManagerReach struct {
	// Manager is fleet, verrazzano or a Registrar's name (argocd,
	// kubefleet, sveltos, ocm).
	Manager string `json:"manager"`
	// Host is the cluster that runs it: the manager's name or a cluster's.
	Host string `json:"host"`
	// Why says what registers the cluster there: its mode, or the
	// manager's selector.
	Why string `json:"-"`
}

// ApplicationReach is an Argo CD Application an ApplicationSet would create
// on a cluster (its destination).
type ApplicationReach struct {
	// ApplicationSet is namespace/name of the ApplicationSet.
	ApplicationSet string `json:"applicationSet"`
	Name           string `json:"name"`
	Project        string `json:"project"`
	// Namespace is the Application's destination namespace.
	Namespace string `json:"namespace,omitempty"`
}

// DeliveryReach is a delivery that reaches a cluster and the target that
// selected it.
type DeliveryReach struct {
	Name string `json:"name"`
	// Target is the delivery target that selected the cluster; "" when
	// none did and only a bundle's own overrideTargets reach it.
	Target string `json:"target"`
	// Bundles are, for a delivery from the fleet's own source, the bundle
	// folders the cluster receives (the pipeline fills them in from the
	// model: a bundle's overrideTargets and targetCustomizations' doNotDeploy
	// decide, as Fleet's do), sorted.
	Bundles []string `json:"bundles,omitempty"`
	// Why is the target's criteria (DeliveryTarget.Criteria).
	Why string `json:"-"`
}

// Unmatched is a delivery target that is first for no cluster.
type Unmatched struct {
	Delivery string `json:"delivery"`
	Target   string `json:"target"`
	// Why says why it reaches no cluster.
	Why string `json:"-"`
	// Path is the target's field path in fleet.yaml.
	Path string `json:"-"`
}

// Reach returns what reaches each cluster of f (defaulted; LoadPartial's
// Fleet will do): its layers (spec.layers[].selector) and its deliveries
// (Fleet's target matching: package fleetmatch), and every delivery target
// and layer selector that reaches no cluster, with the reason.
func (f *Fleet) Reach() *Reach {
	dr := f.reach()
	out := &Reach{Clusters: make([]ClusterReach, len(f.Spec.Clusters)), Unmatched: f.unmatched(dr), UnmatchedLayers: f.unmatchedLayers()}
	// Each selector and target described once, not once per cluster.
	layerWhy := make([]string, len(f.Spec.Layers))
	for i, l := range f.Spec.Layers {
		layerWhy[i] = "every cluster"
		if len(l.Selector) > 0 {
			layerWhy[i] = "selector " + labelList(l.Selector)
		}
	}
	targetWhy := make([][]string, len(f.Spec.Deliveries))
	for d := range f.Spec.Deliveries {
		for ti := range f.Spec.Deliveries[d].Targets {
			targetWhy[d] = append(targetWhy[d], f.Spec.Deliveries[d].Targets[ti].Criteria())
		}
	}
	for ci := range f.Spec.Clusters {
		c := &f.Spec.Clusters[ci]
		cr := ClusterReach{Name: c.Name, Mode: c.Registration.Mode, Fleet: c.ModeOf() != nil && c.ModeOf().Fleet, Layers: []string{}, Deliveries: []DeliveryReach{},
			Managers: []ManagerReach{}, Applications: []ApplicationReach{}}
		if m := c.ModeOf(); m != nil {
			name := "fleet"
			if !m.Fleet {
				name = m.Name // verrazzano
			}
			cr.Managers = append(cr.Managers, ManagerReach{Manager: name, Host: f.Spec.Manager.Name, Why: "mode " + m.Name})
		}
		for i, l := range f.Spec.Layers {
			if Selects(l.Selector, c.Labels) {
				cr.Layers = append(cr.Layers, l.Name)
				cr.LayerWhy = append(cr.LayerWhy, layerWhy[i])
			}
		}
		for d := range f.Spec.Deliveries {
			if ti := dr.target[d][ci]; ti >= 0 {
				cr.Deliveries = append(cr.Deliveries, DeliveryReach{Name: f.Spec.Deliveries[d].Name, Target: f.Spec.Deliveries[d].Targets[ti].Name, Why: targetWhy[d][ti]})
			}
		}
		out.Clusters[ci] = cr
	}
	for i := range Registrars {
		r := &Registrars[i]
		host, why := r.Host(f), r.Why(f)
		for _, ci := range r.Clusters(f) {
			out.Clusters[ci].Managers = append(out.Clusters[ci].Managers, ManagerReach{Manager: r.Name, Host: host, Why: why})
		}
	}
	out.EmptyManagers = []EmptyManager{}
	for _, m := range f.emptyManagers() {
		out.EmptyManagers = append(out.EmptyManagers, m.EmptyManager)
	}
	return out
}

// unmatched lists the targets that are first for no cluster, with why.
func (f *Fleet) unmatched(dr *deliveryReach) []Unmatched {
	out := []Unmatched{}
	for d := range f.Spec.Deliveries {
		ds := &f.Spec.Deliveries[d]
		for ti := range ds.Targets {
			if dr.reached[d][ti] > 0 {
				continue
			}
			out = append(out, Unmatched{
				Delivery: ds.Name, Target: ds.Targets[ti].Name, Why: f.unmatchedWhy(ds, ti, dr.matched[d][ti]),
				Path: fmt.Sprintf("spec.deliveries[%d].targets[%d]", d, ti),
			})
		}
	}
	return out
}

// unmatchedWhy says why target ti of d is first for no cluster, matched
// being the number of Fleet clusters it matches at all.
func (f *Fleet) unmatchedWhy(d *Delivery, ti, matched int) string {
	t := &d.Targets[ti]
	switch {
	case !t.Match().HasCriteria():
		return "it sets no criterion, and Fleet's matcher selects nothing with none: want clusterName, clusterGroup, clusterSelector or clusterGroupSelector"
	case matched > 0:
		return "every cluster it selects is taken by an earlier target of the delivery (the first target that matches wins)"
	case t.ClusterGroupSelector != nil && len(t.ClusterGroupSelector) > 0:
		return "its clusterGroupSelector matches no ClusterGroup: fleetgen's groups carry no labels (" + t.Criteria() + ")"
	}
	why := "no cluster registered with Fleet (mode agent, manager or capi) matches " + t.Criteria()
	if len(t.ClusterSelector) > 0 {
		var fc []*Cluster
		for i := range f.Spec.Clusters {
			if m := f.Spec.Clusters[i].ModeOf(); m != nil && m.Fleet {
				fc = append(fc, &f.Spec.Clusters[i])
			}
		}
		why += " (" + LabelHint(t.ClusterSelector, fc) + ")"
	}
	return why
}
