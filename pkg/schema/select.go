package schema

import (
	"fmt"
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// maxListedClusters bounds the names SelectClusters lists in its error.
const maxListedClusters = 10

// SelectClusters checks names (the command line's `--cluster`, SPEC §2)
// against f: each must be the name of one of spec.clusters or of the
// manager. It returns them as a set, and whether the manager is among them;
// an unknown name is an input error that suggests the closest name and
// lists some that exist. No names (nil) selects nothing: the caller shows
// every cluster then.
func (f *Fleet) SelectClusters(names []string) (map[string]bool, bool, error) {
	if len(names) == 0 {
		return nil, false, nil
	}
	all := make([]string, 0, len(f.Spec.Clusters)+1)
	known := make(map[string]bool, len(f.Spec.Clusters)+1)
	for _, c := range f.Spec.Clusters {
		all = append(all, c.Name)
		known[c.Name] = true
	}
	mgr := f.Spec.Manager.Name
	all = append(all, mgr)
	known[mgr] = true
	keep := make(map[string]bool, len(names))
	manager := false
	for _, n := range names {
		if !known[n] {
			listed := all
			more := ""
			if len(listed) > maxListedClusters {
				listed, more = listed[:maxListedClusters], fmt.Sprintf(" and %d more", len(all)-maxListedClusters)
			}
			return nil, false, problem.Invalid(fmt.Errorf("--cluster %q: no cluster of that name in %s%s: want the name of one of spec.clusters or the manager (%s%s)",
				n, f.File, problem.DidYouMean(n, all), strings.Join(listed, ", "), more))
		}
		keep[n] = true
		manager = manager || n == mgr
	}
	return keep, manager, nil
}
