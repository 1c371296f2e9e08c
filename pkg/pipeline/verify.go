package pipeline

import (
	"context"
	"fmt"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/review"
	"fleetgen.dev/fleetgen/pkg/verify"
)

// Signature policies (spec.verify, SPEC §4): compiled once per load, their
// input rules run with the others (validate reports them), mirror verifies
// at the source (mirror.WithVerify) and publish at the mirror (mirror.Verify);
// `fleetgen verify` and `mirror --dry-run` check either in place.

// Verdict is one signature check of `fleetgen verify` (and mirror
// --dry-run): an image a policy covers, where its signatures were read, and
// what was found (-o json prints these keys).
type Verdict = mirror.Verdict

// VerifyAt says where Verify reads signatures.
type VerifyAt string

// Where signatures are verified.
const (
	AtSource VerifyAt = "source" // each image's source registry: what mirror checks
	AtMirror VerifyAt = "mirror" // spec.registry, the signature the lock names: what publish checks
)

// VerifyOptions are the options of Verify.
type VerifyOptions struct {
	// At is AtSource (default) or AtMirror.
	At VerifyAt
	// Jobs bounds how many images are checked at once; 0 means the default.
	Jobs int
}

// VerifyError is Verify's failure when a covered image has no verifying
// signature (or its registry failed): the verdicts say which.
type VerifyError struct {
	Refused, Total int
	At             VerifyAt
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("%d of %d image(s) a spec.verify policy covers have no signature that verifies at the %s", e.Refused, e.Total, e.At)
}

// Verify checks, in place and copying nothing, the signature of every image
// a spec.verify policy covers: at the source, as mirror does before it copies
// (resolving each tag), or at the mirror, the signature fleet.lock.yaml names
// for each, as publish does before it pushes. It returns one Verdict per
// covered image, sorted by image, and a *VerifyError when one does not
// verify; input problems are input errors (exit 2) as mirror's and
// publish's.
func Verify(ctx context.Context, cfg Config, o VerifyOptions) ([]Verdict, error) {
	if o.At == "" {
		o.At = AtSource
	}
	if o.At != AtSource && o.At != AtMirror {
		return nil, problem.Invalid(fmt.Errorf("verify: --at %q: want source or mirror", o.At))
	}
	ld, err := Load(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r := inputRules
	if o.At == AtMirror {
		r = allRules // the lock names what is verified: it must be whole
	}
	if err := ld.check(r); err != nil {
		return nil, err
	}
	ps, err := ld.Policies()
	if err != nil {
		return nil, err
	}
	f := ld.Fleet
	opts := []mirror.Option{mirror.WithLogger(cfg.logger()), mirror.WithJobs(o.Jobs), registryCredentials(cfg)}
	var vs []Verdict
	if o.At == AtSource {
		pairs, err := mirror.Plan(f.Spec.Registry, ld.Images.Refs())
		if err != nil {
			return nil, err
		}
		vs, err = mirror.VerifySource(ctx, pairs, ps, append(opts, sourceMirrors(f))...)
		if err != nil {
			return nil, err
		}
	} else {
		var images []lock.Image
		for _, u := range ld.Images.Images {
			if img, ok := ld.Lock.Image(u.Ref); ok {
				images = append(images, img)
			}
		}
		if vs, err = mirror.VerifyMirror(ctx, f.Spec.Registry, images, ps, opts...); err != nil {
			return nil, err
		}
	}
	if n := mirror.Refused(vs); n > 0 {
		return vs, &VerifyError{Refused: n, Total: len(vs), At: o.At}
	}
	return vs, nil
}

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
			re, err := verify.CompileGlob(g)
			if err != nil {
				continue // reported by schema.Validate
			}
			matched := false
			for _, r := range repos {
				if re.MatchString(verify.CanonicalRepo(r)) {
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
