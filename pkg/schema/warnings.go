package schema

import (
	"fmt"

	"fleetgen.dev/fleetgen/pkg/fleetmatch"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// Warnings returns what Validate accepts but is likely a mistake, sorted in
// document order: a ClusterGroup that holds no cluster registered with
// Fleet, a delivery target that reaches no cluster (with the reason), a
// layer whose selector selects no cluster (with the label values that
// exist), a manager (spec.argocd, spec.kubefleet, spec.sveltos, spec.ocm)
// that selects no cluster (likewise), a keyless identity pattern without
// both anchors (cosign matches it anywhere), and a delivery whose GitRepo
// status would near etcd's object limit. Each is a *FieldError with its Code
// (CodeEmptyGroup, CodeUnmatchedTarget, CodeEmptySelection, CodeUnanchored,
// CodeStatusSize). A warning never
// makes input invalid: `fleetgen validate` prints them and exits as it
// would without them. f is defaulted (LoadPartial's Fleet will do: validate
// prints warnings beside errors); Warnings reads nothing.
func Warnings(f *Fleet) problem.Errors {
	var ws problem.Errors
	warn := func(e *problem.FieldError) { ws = append(ws, f.At(e)) }
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
			warn(problem.EmptyGroup(fmt.Sprintf("spec.groups[%d].selector", i), "group %q selects no cluster registered with Fleet (mode agent, manager or capi): its ClusterGroup stays empty, and targets naming it deliver nothing", g.Name))
		}
	}
	dr := f.reach()
	for _, u := range f.unmatched(dr) {
		warn(problem.UnmatchedTarget(u.Path, "target %q of delivery %q reaches no cluster: %s", u.Target, u.Delivery, u.Why))
	}
	for d := range f.Spec.Deliveries {
		if n := f.gitRepoStatus(d, dr.target[d]); n > MaxGitRepoStatus {
			reached := 0
			for _, t := range dr.target[d] {
				if t >= 0 {
					reached++
				}
			}
			warn(problem.StatusSize(fmt.Sprintf("spec.deliveries[%d]", d), "delivery %q reaches %d clusters with %d bundles: Fleet v0.16 would keep at least %d KiB of per-cluster state in its GitRepo's status (one entry per cluster, and the cluster once per resource), over the %d KiB fleetgen allows under etcd's 1.5 MiB object limit, past which the status update fails: split it into deliveries that reach fewer clusters each (docs/scale.md)",
				f.Spec.Deliveries[d].Name, reached, f.Spec.Deliveries[d].BundleCount(), n>>10, MaxGitRepoStatus>>10))
		}
	}
	for _, u := range f.unmatchedLayers() {
		warn(problem.EmptySelection(u.Path, "layer %q selects no cluster: %s; its Flux Kustomization is rendered for none", u.Layer, u.Why))
	}
	for _, m := range f.emptyManagers() {
		warn(problem.EmptySelection(m.path, "%s selects no cluster: no %s %s is rendered (%s)", m.field, m.title, m.object, m.Why))
	}
	for i, p := range f.Spec.Verify {
		if p.Cosign == nil {
			continue
		}
		for k, id := range p.Cosign.Identities {
			if id.SubjectRegExp == "" {
				continue
			}
			start, end := Anchored(id.SubjectRegExp)
			var what string
			switch {
			case !start && !end:
				what = "has neither ^ nor $: cosign matches it anywhere in the subject, so a subject that only contains a match verifies too (release@contoso\\.example also accepts release@contoso.example.evil.example)"
			case !start:
				what = "has no ^: cosign matches it anywhere in the subject, so a subject that only ends with a match verifies too"
			case !end:
				what = "has no $: a subject that only begins with a match verifies too (^https://github\\.com/contoso/app also accepts https://github.com/contoso/app-evil)"
			default:
				continue
			}
			warn(problem.Unanchored(fmt.Sprintf("spec.verify[%d].cosign.identities[%d].subjectRegExp", i, k),
				"%q %s; anchor the whole subject, ^…$", id.SubjectRegExp, what))
		}
	}
	ws.Sort()
	return ws
}
