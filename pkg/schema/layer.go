package schema

import (
	"path"
	"path/filepath"
	"strings"
)

// CleanPath is a layer path, as written or as ExpandPath made it for a
// cluster, in the one form every step keys layers by: slash-separated,
// cleaned, relative to the source root, no leading "./" or "/" ("." for the
// root itself). "./apps", "apps/", "/apps" and "//apps" are all "apps".
func CleanPath(p string) string {
	return path.Clean(strings.TrimLeft(filepath.ToSlash(p), "/"))
}

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

// Variables returns the postBuild.substitute variables the Flux Kustomization
// of layer l gives cluster c: the layer's substitute entries as defaults, the
// cluster's labels over them, and cluster, always the cluster's name (as in
// ExpandPath). Labels that cannot be variable names (kubernetes.io/os: Flux
// accepts only [_a-zA-Z][_a-zA-Z0-9]*) are left out. Rendering and the
// strict substitution check both read it.
func (l *Layer) Variables(c *Cluster) map[string]string {
	subst := make(map[string]string, len(c.Labels)+len(l.Substitute)+1)
	for k, v := range l.Substitute {
		subst[k] = v
	}
	for k, v := range c.Labels {
		if IsVarName(k) {
			subst[k] = v
		}
	}
	subst["cluster"] = c.Name
	return subst
}

// IsVarName reports whether k can be a post-build substitution variable
// name: substVarRE.MatchString(k) ([_a-zA-Z][_a-zA-Z0-9]*, Flux's
// varsubRegex) without a regular expression, as it is asked for every label
// of every cluster and layer (TestIsVarName holds the two equal).
func IsVarName(k string) bool {
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return k != ""
}
