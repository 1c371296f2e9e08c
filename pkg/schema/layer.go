package schema

import (
	"sort"
	"strings"
)

// Selects reports whether labels match every pair of selector; an empty selector
// selects everything.
func Selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// ExpandPath substitutes ${cluster} and ${label} in a layer path for cluster c
// (whose labels are already defaulted). Unknown variables are left as they are;
// Validate reports them.
func ExpandPath(path string, c *Cluster) string {
	if !strings.Contains(path, "${") {
		return path
	}
	keys := make([]string, 0, len(c.Labels)+1)
	for k := range c.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := []string{"${cluster}", c.Name}
	for _, k := range keys {
		if k == "cluster" {
			continue
		}
		pairs = append(pairs, "${"+k+"}", c.Labels[k])
	}
	return strings.NewReplacer(pairs...).Replace(path)
}

// SelectedLayers returns the layers whose selector matches c, in spec order.
func (f *Fleet) SelectedLayers(c *Cluster) []*Layer {
	var out []*Layer
	for i := range f.Spec.Layers {
		if Selects(f.Spec.Layers[i].Selector, c.Labels) {
			out = append(out, &f.Spec.Layers[i])
		}
	}
	return out
}
