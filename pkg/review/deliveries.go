package review

import (
	"fmt"
	"maps"
	"slices"

	"fleetgen.dev/fleetgen/pkg/fleetmatch"
)

// DeliveriesField starts the field of a Change that says which target of a
// delivery reaches a cluster: "deliveries.<delivery>", from the old target
// to the new one, "" where the delivery does not reach the cluster.
const DeliveriesField = "deliveries."

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

// reach says which target of each GitRepo of t reaches each of its Fleet
// Clusters, with Fleet's matcher (package fleetmatch): cluster -> delivery
// -> target.
func (t tree) reach() map[string]map[string]string {
	out := map[string]map[string]string{}
	groups := slices.Collect(maps.Values(t.manager.groups))
	for name, c := range t.clusters {
		if !c.fleet {
			continue
		}
		fc := fleetmatch.Cluster{Name: name, Labels: c.labels}
		in := fleetmatch.GroupsOf(fc, groups)
		for d, ts := range t.manager.repos {
			if i := fleetmatch.First(ts, fc, in); i >= 0 {
				if out[name] == nil {
					out[name] = map[string]string{}
				}
				out[name][d] = ts[i].Name
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
func (r *Report) addDeliveries(old, new tree) {
	o, n := old.reach(), new.reach()
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
		c := r.listed(name)
		c.Changes = append(c.Changes, ch...)
		if c.Change != Removed {
			c.Warnings = append(c.Warnings, warn...)
		}
	}
}
