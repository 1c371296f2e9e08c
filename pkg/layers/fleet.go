package layers

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Load builds the model of fleet f (loaded and defaulted): every cluster
// with every layer it selects (FromFleet), built in the folder of fleet.yaml,
// the Kustomizations that lead from them to the source f publishes
// (SourceOf), and the bundles of f's deliveries from its own source
// (DeliveriesOf); opts bounds it and may bring a chart renderer. Fields of
// opts that Load fills are taken as given when set.
//
// A layer folder that does not exist or does not build is a problem of
// fleet.yaml, located at the first layer whose path expands to it and naming
// the cluster whose labels expanded it; all of them are returned at once as
// problem.Errors, with the model of what did build (validate goes on to check
// it: one run finds every problem). A bound of Options is an input error (*problem.InvalidError);
// an I/O failure or a panic in kustomize is a runtime error.
func Load(f *schema.Fleet, opts Options) (*Model, error) { return LoadUnits(f, FromFleet(f), opts) }

// LoadUnits is Load of some of f's units (of FromFleet(f)): validate leaves
// out the layers whose path fleet.yaml's own rules found wrong, and checks
// the rest in the same run.
func LoadUnits(f *schema.Fleet, units []Unit, opts Options) (*Model, error) {
	dir := f.Dir
	if dir == "" {
		dir = "."
	}
	if opts.Source == nil {
		opts.Source = SourceOf(f)
	}
	if opts.Deliveries == nil {
		opts.Deliveries, opts.Clusters = DeliveriesOf(f)
	}
	m, err := New(dir, units, opts)
	var lim *LimitError
	if errors.As(err, &lim) {
		return nil, problem.Invalid(lim)
	}
	if err != nil {
		return nil, fmt.Errorf("layers: %w", err)
	}
	var errs problem.Errors
	for _, p := range sortedBuilds(m) {
		b := m.Builds[p]
		if b.Err == nil || b.ov != nil {
			continue // a followed Kustomization's: a note of Check
		}
		at, names, expanded := whereFleet(f, units, p)
		if errors.Is(b.Err, errNoFolder) {
			errs = append(errs, f.At(problem.Other(at+".path", "layer %s: folder %s%s does not exist: want a folder inside the folder of fleet.yaml", names, p, expanded)))
			continue
		}
		errs = append(errs, f.At(problem.Other(at+".path", "layer %s: folder %s%s does not build with kustomize: %v", names, p, expanded, b.Err)))
	}
	if len(errs) > 0 {
		return m, schema.Sorted(errs)
	}
	return m, nil
}

// whereFleet names the layers of f that expand to path p: the field of the
// first (spec.layers[i]), their names, and " (as expanded for cluster X)"
// when a cluster's labels made the path.
func whereFleet(f *schema.Fleet, units []Unit, p string) (at, names, expanded string) {
	idx := layerIndex(f)
	seen := map[int]bool{}
	var list []int
	for _, u := range units {
		if u.Path != p {
			continue
		}
		li := idx[u.Layer]
		if !seen[li] {
			seen[li] = true
			list = append(list, li)
		}
		if expanded == "" && p != schema.CleanPath(f.Spec.Layers[li].Path) {
			expanded = fmt.Sprintf(" (as expanded for cluster %s)", u.Cluster)
		}
	}
	sort.Ints(list)
	var n []string
	for _, li := range list {
		n = append(n, f.Spec.Layers[li].Name)
	}
	return fmt.Sprintf("spec.layers[%d]", list[0]), strings.Join(n, ", "), expanded
}

func layerIndex(f *schema.Fleet) map[string]int {
	idx := make(map[string]int, len(f.Spec.Layers))
	for i, l := range f.Spec.Layers {
		idx[l.Name] = i
	}
	return idx
}

func sortedBuilds(m *Model) []string {
	out := make([]string, 0, len(m.Builds))
	for p := range m.Builds {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
