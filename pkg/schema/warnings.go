package schema

import (
	"fmt"

	"fleetgen.dev/fleetgen/pkg/fleetmatch"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// Warnings returns what Validate accepts but is likely a mistake, sorted in
// document order: a ClusterGroup that holds no cluster registered with
// Fleet, a delivery target that reaches no cluster (with the reason), and a
// manager (spec.argocd, spec.kubefleet, spec.sveltos, spec.ocm) that selects
// no cluster. Each is a *FieldError with its Code
// (CodeEmptyGroup, CodeUnmatchedTarget, CodeEmptySelection). A warning never
// makes input invalid: `fleetgen validate` prints them and exits as it
// would without them. f is defaulted and valid; Warnings reads nothing.
func Warnings(f *Fleet) problem.Errors {
	var ws problem.Errors
	warn := func(code, path, format string, args ...any) {
		e := f.Errorf(path, format, args...)
		e.Code = code
		ws = append(ws, e)
	}
	groups := f.FleetGroups()
	for i, g := range groups {
		n := 0
		for j := range f.Spec.Clusters {
			c := &f.Spec.Clusters[j]
			if m := c.ModeOf(); m != nil && m.Fleet && g.Selector != nil && fleetmatch.Selects(g.Selector, c.Labels) {
				n++
			}
		}
		if n == 0 {
			warn(problem.CodeEmptyGroup, fmt.Sprintf("spec.groups[%d].selector", i), "group %q selects no cluster registered with Fleet (mode agent, manager or capi): its ClusterGroup stays empty, and targets naming it deliver nothing", g.Name)
		}
	}
	for _, u := range f.unmatched(f.reach()) {
		warn(problem.CodeUnmatchedTarget, u.Path, "target %q of delivery %q reaches no cluster: %s", u.Target, u.Delivery, u.Why)
	}
	for i := range Registrars {
		r := &Registrars[i]
		if r.Used(f) && len(f.Spec.Clusters) > 0 && len(r.Clusters(f)) == 0 {
			warn(problem.CodeEmptySelection, r.Field()+".selector", "%s selects no cluster: no %s %s is rendered (the clusters' labels: %s)", r.Field(), r.Title, r.Object, labelValues(f, r.Selector(f)))
		}
	}
	sortErrors(ws)
	return ws
}
