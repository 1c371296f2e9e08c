package schema

import (
	"strings"
)

// Selects reports whether labels match every pair of selector, as a Kubernetes
// matchLabels does (a missing label does not match an empty value); an empty
// selector selects everything.
func Selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

// ExpandPath substitutes ${cluster} and ${label} in a layer path for cluster c
// (whose labels are already defaulted); ${cluster} is the cluster's name even
// if it has a label "cluster". Unknown variables are left as they are;
// Validate reports them.
func ExpandPath(path string, c *Cluster) string {
	if !strings.Contains(path, "${") {
		return path
	}
	var b strings.Builder
	for {
		i := strings.Index(path, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(path[i+2:], '}')
		if j < 0 {
			break
		}
		name, end := path[i+2:i+2+j], i+3+j
		b.WriteString(path[:i])
		if v, ok := c.Labels[name]; name == "cluster" {
			b.WriteString(c.Name)
		} else if ok {
			b.WriteString(v)
		} else {
			b.WriteString(path[i:end])
		}
		path = path[end:]
	}
	b.WriteString(path)
	return b.String()
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
