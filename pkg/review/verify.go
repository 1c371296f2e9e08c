package review

import "sort"

// AddImageVerification records image signature changes (spec.verify, SPEC
// §4) under manager: images are fleet-wide. Each change's Field is
// images[<source reference>].verified; From and To name the policy and the
// verifying signature ("spec.verify[0] policy sha256:… signature sha256:…"),
// "" for none. Changes whose sides are equal are dropped; the rest are
// appended sorted by field. It adds data only: every output format shows
// manager changes.
func (r *Report) AddImageVerification(changes []Change) {
	var add []Change
	for _, c := range changes {
		if c.From != c.To {
			add = append(add, c)
		}
	}
	sort.Slice(add, func(i, j int) bool { return add[i].Field < add[j].Field })
	if r.Manager.Changes == nil {
		r.Manager.Changes = []Change{}
	}
	r.Manager.Changes = append(r.Manager.Changes, add...)
}
