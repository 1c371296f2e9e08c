package pipeline

import (
	"fmt"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/review"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
)

// Signature policies (spec.verify, SPEC §4): compiled once per load, their
// input rules run with the others (validate reports them), mirror verifies
// at the source (mirror.WithVerify) and publish at the mirror (mirror.Verify).

// Policies returns spec.verify compiled: the trusted roots read, the keys
// parsed. Its error is an input error located in fleet.yaml.
func (ld *Loaded) Policies() (verify.Policies, error) {
	if !ld.polDone {
		ld.pol, ld.polErr = verify.Compile(ld.Fleet, nil)
		ld.polDone = true
	}
	return ld.pol, ld.polErr
}

// verifyInput reports what spec.verify holds that a later step would refuse:
// a trusted root that does not parse, a glob that matches no image of the
// fleet (a typo would leave images unverified without a word).
func (ld *Loaded) verifyInput() problem.Errors {
	f := ld.Fleet
	if len(f.Spec.Verify) == 0 {
		return nil
	}
	var errs problem.Errors
	if _, err := ld.Policies(); err != nil {
		if es, ok := err.(problem.Errors); ok {
			errs = append(errs, es...)
		} else {
			errs = append(errs, f.At(problem.Other("spec.verify", "%v", err)))
		}
	}
	var repos []string
	for _, u := range ld.Images.Images {
		repo, _ := lock.SplitRef(u.Ref)
		repos = append(repos, repo)
	}
	for i, p := range f.Spec.Verify {
		for j, g := range p.Images {
			if schema.GlobProblem(g) != "" {
				continue // reported by schema.Validate
			}
			matched := false
			for _, r := range repos {
				if schema.GlobMatch(g, r) {
					matched = true
					break
				}
			}
			if !matched {
				errs = append(errs, f.At(problem.Other(fmt.Sprintf("spec.verify[%d].images[%d]", i, j),
					"%q matches no image of the fleet: want a glob of normalised source repositories, e.g. docker.io/library/busybox or ghcr.io/contoso/** (`fleetgen images` lists them)", g)))
			}
		}
	}
	return errs
}

// verifyLock reports covered images whose lock entry does not record a
// verification under the policy as it is now: a lock written before the
// policy existed or changed. Like the other lock rules it names the field
// and who uses the image, not the image.
func (ld *Loaded) verifyLock() problem.Errors {
	ps, err := ld.Policies()
	if err != nil || len(ps) == 0 {
		return nil
	}
	count := map[string]int{}
	var order []string
	for _, u := range ld.Images.Images {
		img, ok := ld.Lock.Image(u.Ref)
		if !ok {
			continue // lockErrors reports it
		}
		repo, _ := lock.SplitRef(u.Ref)
		p := ps.For(repo)
		if p == nil {
			continue
		}
		if v := img.Verified; v != nil && v.Policy == p.Name && v.PolicyDigest == p.Digest {
			continue
		}
		if count[p.Name] == 0 {
			order = append(order, p.Name)
		}
		count[p.Name]++
	}
	var errs problem.Errors
	for _, name := range order {
		errs = append(errs, ld.Fleet.At(problem.Other(name, "%d image(s) this policy covers are locked without a signature verified under it (the policy is new or changed): run `fleetgen mirror`", count[name])))
	}
	return errs
}

// verificationChanges says, per locked image, where the policy that covers
// it now differs from the one its lock entry was verified under: a policy
// added, removed or changed (its digest) that `fleetgen mirror` has not
// applied yet. A lock whose verification changed in the same change (a
// new signature after mirror) reads as the recorded state on both sides.
func (ld *Loaded) verificationChanges() []review.Change {
	ps, err := ld.Policies()
	if err != nil {
		return nil
	}
	var out []review.Change
	for _, u := range ld.Images.Images {
		img, ok := ld.Lock.Image(u.Ref)
		if !ok {
			continue
		}
		from := ""
		if v := img.Verified; v != nil {
			from = v.Policy + " policy " + v.PolicyDigest + " signature " + v.Signature
		}
		repo, _ := lock.SplitRef(u.Ref)
		to := ""
		if p := ps.For(repo); p != nil {
			if v := img.Verified; v != nil && v.Policy == p.Name && v.PolicyDigest == p.Digest {
				to = from
			} else {
				to = p.Name + " policy " + p.Digest + " (not verified yet: run `fleetgen mirror`)"
			}
		}
		out = append(out, review.Change{Field: "images[" + u.Ref + "].verified", From: from, To: to})
	}
	return out
}
