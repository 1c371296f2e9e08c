package review

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/fleetmatch"
)

// DeliveriesField starts the field of a Change that says which target of a
// delivery reaches a cluster: "deliveries.<delivery>", from the old target
// to the new one, "" where the delivery does not reach the cluster.
const DeliveriesField = "deliveries."

// Small local shapes of Fleet's GitRepo and ClusterGroup, the fields the
// matcher reads.
type gitRepoTargets struct {
	Kind string `json:"kind"`
	Spec struct {
		Targets []struct {
			Name                 string           `json:"name"`
			ClusterName          string           `json:"clusterName"`
			ClusterGroup         string           `json:"clusterGroup"`
			ClusterSelector      *matchLabelsOnly `json:"clusterSelector"`
			ClusterGroupSelector *matchLabelsOnly `json:"clusterGroupSelector"`
		} `json:"targets"`
	} `json:"spec"`
}

type groupSelector struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Selector *matchLabelsOnly `json:"selector"`
	} `json:"spec"`
}

type matchLabelsOnly struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// labels is s's matchLabels, non-nil when s is set (so {} selects all).
func (s *matchLabelsOnly) labels() map[string]string {
	if s == nil {
		return nil
	}
	if s.MatchLabels == nil {
		return map[string]string{}
	}
	return s.MatchLabels
}

// reach reads which target of each GitRepo reaches each Fleet Cluster of a
// rendered tree, with Fleet's matcher (package fleetmatch): cluster ->
// delivery -> target.
func reach(files map[string][]byte) map[string]map[string]string {
	var clusters []fleetmatch.Cluster
	var groups []fleetmatch.Group
	repos := map[string][]fleetmatch.Target{}
	for _, p := range sortedKeys(files) {
		parts := strings.Split(p, "/")
		if len(parts) != 4 || parts[0] != "manager" || parts[1] != "fleet" {
			continue
		}
		name := strings.TrimSuffix(parts[3], ".yaml")
		switch {
		case parts[2] == "gitrepos":
			var g gitRepoTargets
			if yaml.Unmarshal(files[p], &g) != nil || g.Kind != "GitRepo" {
				continue
			}
			ts := []fleetmatch.Target{}
			for _, t := range g.Spec.Targets {
				ts = append(ts, fleetmatch.Target{Name: t.Name, ClusterName: t.ClusterName, ClusterGroup: t.ClusterGroup,
					ClusterSelector: t.ClusterSelector.labels(), ClusterGroupSelector: t.ClusterGroupSelector.labels()})
			}
			repos[name] = ts
		case parts[2] == "groups":
			var g groupSelector
			if yaml.Unmarshal(files[p], &g) == nil {
				groups = append(groups, fleetmatch.Group{Name: name, Selector: g.Spec.Selector.labels(), Labels: g.Metadata.Labels})
			}
		case parts[3] == "cluster.yaml":
			var o object
			if yaml.Unmarshal(files[p], &o) == nil && o.Kind == "Cluster" {
				clusters = append(clusters, fleetmatch.Cluster{Name: parts[2], Labels: o.Metadata.Labels})
			}
		}
	}
	out := map[string]map[string]string{}
	if len(repos) == 0 {
		return out
	}
	for _, c := range clusters {
		in := fleetmatch.GroupsOf(c, groups)
		for d, ts := range repos {
			if i := fleetmatch.First(ts, c, in); i >= 0 {
				if out[c.Name] == nil {
					out[c.Name] = map[string]string{}
				}
				out[c.Name][d] = ts[i].Name
			}
		}
	}
	return out
}

// addDeliveries records, per cluster, each delivery that starts or stops
// reaching it or reaches it through another target (SPEC §7), as
// DeliveriesField changes, with a warning where a delivery stops: Fleet
// then removes what its bundles deployed there. A cluster the report does
// not list yet is added as changed.
func (r *Report) addDeliveries(old, new map[string][]byte) {
	o, n := reach(old), reach(new)
	for _, name := range sortedKeys(o, n) {
		var ch []Change
		var warn []string
		for _, d := range sortedKeys(o[name], n[name]) {
			from, to := o[name][d], n[name][d]
			if from == to {
				continue
			}
			ch = append(ch, Change{Field: DeliveriesField + d, From: from, To: to})
			if to == "" {
				warn = append(warn, fmt.Sprintf("%s: delivery %s no longer reaches it: Fleet removes what its bundles deployed there (unless the GitRepo keeps resources)", name, d))
			}
		}
		if len(ch) == 0 {
			continue
		}
		i := sort.Search(len(r.Clusters), func(i int) bool { return r.Clusters[i].Name >= name })
		if i == len(r.Clusters) || r.Clusters[i].Name != name {
			r.Clusters = slices.Insert(r.Clusters, i, Cluster{Name: name, Change: Update, Changes: []Change{}, Warnings: []string{}})
		}
		c := &r.Clusters[i]
		c.Changes = append(c.Changes, ch...)
		if c.Change != Removed {
			c.Warnings = append(c.Warnings, warn...)
		}
	}
}
