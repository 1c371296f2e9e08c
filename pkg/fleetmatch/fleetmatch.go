// Package fleetmatch is Rancher Fleet's target matcher as a pure function: which
// GitRepo target, if any, selects a cluster. It follows rancher/fleet v0.16
// (internal/cmd/controller/target/matcher and target.ClusterGroupsForCluster)
// rule for rule:
//
//   - a target's criteria are clusterName, clusterGroup, clusterGroupSelector
//     and clusterSelector; every criterion that is set must hold (AND), and a
//     target with none selects nothing;
//   - clusterName matches the Cluster's name, or its Rancher display name
//     label (management.cattle.io/cluster-display-name);
//   - a cluster's groups are the ClusterGroups whose selector matches its
//     labels (a group without a selector has no member); clusterGroup and
//     clusterGroupSelector are tried against each of them, and a cluster in no
//     group is tried once with no group (so an empty clusterGroupSelector
//     matches it, one with labels does not);
//   - targets are tried in order and the first that matches wins.
//
// Fleet duplicates a GitRepo's targets into the Bundle's targetRestrictions,
// so the restrictions never change which target matches; a bundle's own
// fleet.yaml targetCustomizations only customise (or, with doNotDeploy,
// skip) a cluster a GitRepo target selected. Selectors here are matchLabels:
// nil means the criterion is not set, an empty non-nil map selects every
// label set, as metav1.LabelSelectorAsSelector does.
//
// fleetgen's validate, targets, generate and diff all read this package, so
// that what fleetgen says a delivery reaches is what Fleet deploys.
package fleetmatch

// DisplayNameLabel is the label Rancher stores a cluster's display name in;
// Fleet's clusterName criterion matches it too.
const DisplayNameLabel = "management.cattle.io/cluster-display-name"

// Target is one GitRepo target (fleet.cattle.io/v1alpha1 GitTarget), or a
// bundle's targetCustomization (BundleTarget).
type Target struct {
	Name         string
	ClusterName  string
	ClusterGroup string
	// ClusterSelector and ClusterGroupSelector are matchLabels; nil when the
	// target does not set them.
	ClusterSelector      map[string]string
	ClusterGroupSelector map[string]string
	// ClusterExpressions and ClusterGroupExpressions are the selectors'
	// matchExpressions (a bundle's fleet.yaml may set them; fleet.yaml's
	// deliveries do not). Each must hold too.
	ClusterExpressions      []Requirement
	ClusterGroupExpressions []Requirement
}

// Requirement is one matchExpressions entry of a label selector.
type Requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// holds reports whether labels meet r, as metav1.LabelSelectorAsSelector
// reads it: In and NotIn against the values (NotIn holds for a missing
// label), Exists and DoesNotExist on the key; any other operator fails.
func (r Requirement) holds(labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Operator {
	case "In":
		return ok && contains(r.Values, v)
	case "NotIn":
		return !ok || !contains(r.Values, v)
	case "Exists":
		return ok
	case "DoesNotExist":
		return !ok
	}
	return false
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

// meets reports whether labels meet every requirement.
func meets(rs []Requirement, labels map[string]string) bool {
	for _, r := range rs {
		if !r.holds(labels) {
			return false
		}
	}
	return true
}

// Cluster is a Fleet Cluster: its name and labels.
type Cluster struct {
	Name   string
	Labels map[string]string
}

// Group is a ClusterGroup: its name, its selector (matchLabels; nil when
// it has none, and then no cluster is in it) and its own labels, which
// clusterGroupSelector matches.
type Group struct {
	Name     string
	Selector map[string]string
	Labels   map[string]string
}

// HasCriteria reports whether t sets any criterion; Fleet's matcher never
// matches a target that sets none.
func (t Target) HasCriteria() bool {
	return t.ClusterName != "" || t.ClusterGroup != "" || t.ClusterSelector != nil || t.ClusterGroupSelector != nil
}

// Selects reports whether labels match every pair of matchLabels, as a
// Kubernetes label selector does: a missing label does not match, even an
// empty value; an empty selector matches everything.
func Selects(matchLabels, labels map[string]string) bool {
	for k, v := range matchLabels {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

// GroupsOf returns the groups c is in, in the order of groups: those with a
// selector that matches c's labels.
func GroupsOf(c Cluster, groups []Group) []Group {
	var out []Group
	for _, g := range groups {
		if g.Selector != nil && Selects(g.Selector, c.Labels) {
			out = append(out, g)
		}
	}
	return out
}

// Matches reports whether t selects c, whose groups are in (GroupsOf).
func (t Target) Matches(c Cluster, in []Group) bool {
	if !t.HasCriteria() {
		return false
	}
	if len(in) == 0 {
		return t.match(c, "", nil)
	}
	for _, g := range in {
		if t.match(c, g.Name, g.Labels) {
			return true
		}
	}
	return false
}

// match is Fleet's ClusterMatcher.Match for one (cluster, group) pair.
func (t Target) match(c Cluster, group string, groupLabels map[string]string) bool {
	if t.ClusterName != "" && t.ClusterName != c.Name {
		if dn, ok := c.Labels[DisplayNameLabel]; !ok || dn != t.ClusterName {
			return false
		}
	}
	if t.ClusterGroup != "" && t.ClusterGroup != group {
		return false
	}
	if t.ClusterGroupSelector != nil && (!Selects(t.ClusterGroupSelector, groupLabels) || !meets(t.ClusterGroupExpressions, groupLabels)) {
		return false
	}
	if t.ClusterSelector != nil && (!Selects(t.ClusterSelector, c.Labels) || !meets(t.ClusterExpressions, c.Labels)) {
		return false
	}
	return true
}

// First returns the index of the first target that selects c, whose groups
// are in (GroupsOf), or -1 when none does: the target whose name Fleet
// records on the cluster's BundleDeployment.
func First(targets []Target, c Cluster, in []Group) int {
	for i, t := range targets {
		if t.Matches(c, in) {
			return i
		}
	}
	return -1
}
