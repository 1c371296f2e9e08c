package schema

import (
	"fmt"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
)

func (v *validator) layers() {
	ls := v.f.Spec.Layers
	index := map[string]int{}
	for i := range ls {
		l := &ls[i]
		p := fmt.Sprintf("spec.layers[%d]", i)
		if v.name(p+".name", "layer name", l.Name) {
			if why := layout.ReservedLayer(l.Name); why != "" {
				v.add(problem.Other(p+".name", "layer name %q is reserved: %s: want another name", l.Name, why))
			} else if j, dup := index[l.Name]; dup {
				v.add(problem.Duplicate(p+".name", "duplicate layer name %q (also spec.layers[%d]): want unique names", l.Name, j))
			} else {
				index[l.Name] = i
			}
		}
		v.duration(p+".interval", l.Interval)
		v.duration(p+".timeout", l.Timeout)
		v.labels(p+".selector", "selector", l.Selector, nil)
		for _, k := range sortedKeys(l.Substitute) {
			if !substVarRE.MatchString(k) {
				v.add(problem.InvalidValue(p+".substitute["+k+"]", "invalid variable name %q: want letters, digits and _, not starting with a digit", k))
			}
		}
		v.layerPath(p+".path", l)
	}
	// Dependencies: known, not self, selected wherever the dependent is.
	for i := range ls {
		l := &ls[i]
		for j, dep := range l.DependsOn {
			p := fmt.Sprintf("spec.layers[%d].dependsOn[%d]", i, j)
			d, ok := index[dep]
			switch {
			case dep == l.Name:
				v.add(problem.Cycle(p, "layer %q depends on itself: want other layer names", dep))
			case !ok:
				v.add(problem.NotFound(p, "unknown layer %q%s: want one of %s", dep, problem.DidYouMean(dep, sortedNames(index)), strings.Join(sortedNames(index), ", ")))
			default:
				for k := range v.f.Spec.Clusters {
					c := &v.f.Spec.Clusters[k]
					if Selects(l.Selector, c.Labels) && !Selects(ls[d].Selector, c.Labels) {
						v.add(problem.Other(p, "layer %q is not selected for cluster %q, which layer %q is selected for (Flux would wait for it forever): want %q's selector to cover every cluster %q's does", dep, c.Name, l.Name, dep, l.Name))
						break
					}
				}
			}
		}
	}
	v.cycles(index)
}

func sortedNames(index map[string]int) []string {
	names := make([]string, 0, len(index))
	for n := range index {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return []string{"(no layers)"}
	}
	return names
}

// cycles reports each dependency cycle once, at the dependsOn entry that
// closes it, with the cycle's path.
func (v *validator) cycles(index map[string]int) {
	ls := v.f.Spec.Layers
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(ls))
	var stack []int
	var visit func(i int)
	visit = func(i int) {
		color[i] = grey
		stack = append(stack, i)
		for j, dep := range ls[i].DependsOn {
			d, ok := index[dep]
			if !ok || d == i {
				continue
			}
			switch color[d] {
			case white:
				visit(d)
			case grey:
				var names []string
				for k := len(stack) - 1; k >= 0; k-- {
					names = append([]string{ls[stack[k]].Name}, names...)
					if stack[k] == d {
						break
					}
				}
				names = append(names, ls[d].Name)
				v.add(problem.Cycle(fmt.Sprintf("spec.layers[%d].dependsOn[%d]", i, j), "dependency cycle %s: want dependsOn to form no cycle", strings.Join(names, " -> ")))
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
	}
	for i := range ls {
		if color[i] == white && index[ls[i].Name] == i {
			visit(i)
		}
	}
}

// layerPath checks a layer path, its ${…} variables against every selected
// cluster, and that every expansion stays inside the source root.
func (v *validator) layerPath(p string, l *Layer) {
	if l.Path == "" {
		v.add(problem.Required(p, "layer path is required: want a folder relative to fleet.yaml, e.g. ./infrastructure/${env}"))
		return
	}
	rest := pathVarRE.ReplaceAllString(l.Path, "")
	if strings.Contains(rest, "${") {
		v.add(problem.Other(p, "unterminated ${ in path %q: want ${cluster} or ${LABEL}", l.Path))
		return
	}
	if why := relPath(l.Path); why != "" {
		v.add(problem.InvalidValue(p, "invalid path %q: %s", l.Path, why))
		return
	}
	ok := true
	for _, m := range pathVarRE.FindAllStringSubmatch(l.Path, -1) {
		name := m[1]
		if name == "cluster" {
			continue
		}
		if labelKey(name) != "" {
			v.add(problem.InvalidValue(p, "invalid variable ${%s} in path: want ${cluster} or ${LABEL} with a label key", name))
			ok = false
			continue
		}
		for k := range v.f.Spec.Clusters {
			c := &v.f.Spec.Clusters[k]
			if _, has := c.Labels[name]; !has && Selects(l.Selector, c.Labels) {
				v.add(problem.MissingLabel(p, "cluster %q has no label %q for ${%s}, and layer %q is selected for it: want the label on every selected cluster (or in defaults.labels), or a selector that leaves the cluster out", c.Name, name, name, l.Name))
				ok = false
				break
			}
		}
	}
	// Input apart from output: whatever clusters it selects (none too:
	// publish copies it all the same), the path's literal folders may not
	// overlap the rendered tree.
	literal := l.Path
	if i := strings.Index(literal, "${"); i >= 0 {
		literal = literal[:strings.LastIndexByte(literal[:i]+"/", '/')]
	}
	if literal != "" {
		if why := v.f.apartFromOutput(literal); why != "" && (literal == l.Path || v.f.InRendered(literal) != "") {
			v.add(problem.InvalidValue(p, "invalid path %q: %s", l.Path, why))
			return
		}
	}
	if !ok || !strings.Contains(l.Path, "${") {
		return
	}
	for k := range v.f.Spec.Clusters {
		c := &v.f.Spec.Clusters[k]
		if !Selects(l.Selector, c.Labels) {
			continue
		}
		if e := ExpandPath(l.Path, c); relPath(e) != "" {
			v.add(problem.Other(p, "path %q expands to %q for cluster %q, which leaves the folder of fleet.yaml: want a path inside it", l.Path, e, c.Name))
			return
		} else if why := v.f.apartFromOutput(e); why != "" {
			v.add(problem.InvalidValue(p, "path %q expands to %q for cluster %q: %s", l.Path, e, c.Name, why))
			return
		}
	}
}
