package schema

import (
	"fmt"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// UnmatchedLayer is a layer whose selector selects no cluster of the fleet:
// its Flux Kustomization is rendered for none.
type UnmatchedLayer struct {
	Layer    string            `json:"layer"`
	Selector map[string]string `json:"selector"`
	// Why says which label values do exist (LabelHint).
	Why string `json:"-"`
	// Path is the selector's field path in fleet.yaml.
	Path string `json:"-"`
}

// unmatchedLayers lists, in spec.layers order, the layers with a selector
// that no cluster of f matches (a layer without one selects every cluster).
func (f *Fleet) unmatchedLayers() []UnmatchedLayer {
	out := []UnmatchedLayer{}
	if len(f.Spec.Clusters) == 0 {
		return out
	}
	all := make([]*Cluster, len(f.Spec.Clusters))
	for i := range f.Spec.Clusters {
		all[i] = &f.Spec.Clusters[i]
	}
	for i, l := range f.Spec.Layers {
		if len(l.Selector) == 0 {
			continue
		}
		n := 0
		for _, c := range all {
			if Selects(l.Selector, c.Labels) {
				n++
			}
		}
		if n == 0 {
			out = append(out, UnmatchedLayer{Layer: l.Name, Selector: l.Selector, Why: LabelHint(l.Selector, all),
				Path: fmt.Sprintf("spec.layers[%d].selector", i)})
		}
	}
	return out
}

// maxHintValues bounds the values LabelHint lists per label.
const maxHintValues = 10

// LabelHint says why matchLabels sel selects none of clusters, naming the
// label values that do exist: "no cluster has env=prdo: env is dev or
// prod", "no cluster has the label tier", or, when every pair alone is
// held by some cluster, "no cluster has all of env=prod, tier=web". Label
// keys and values are fleet.yaml's, validated.
func LabelHint(sel map[string]string, clusters []*Cluster) string {
	var parts []string
	for _, k := range sortedKeys(sel) {
		seen := map[string]bool{}
		var values []string
		for _, c := range clusters {
			if v, ok := c.Labels[k]; ok && !seen[v] {
				seen[v] = true
				values = append(values, v)
			}
		}
		switch {
		case len(values) == 0:
			parts = append(parts, "no cluster has the label "+k)
		case !seen[sel[k]]:
			sort.Strings(values)
			more := ""
			if len(values) > maxHintValues {
				more = fmt.Sprintf(" and %d more", len(values)-maxHintValues)
				values = values[:maxHintValues]
			}
			parts = append(parts, fmt.Sprintf("no cluster has %s=%s: %s is %s%s", k, sel[k], k, problem.OrList(values), more))
		}
	}
	if len(parts) == 0 {
		return "no cluster has all of " + labelList(sel)
	}
	return strings.Join(parts, "; ")
}
