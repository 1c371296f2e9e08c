package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sync/errgroup"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
)

// WithVerify checks each image a policy of ps covers at its source before
// anything of it is copied (spec.verify, SPEC §4): a signature that verifies
// under the policy must be there, as a Sigstore bundle referrer or cosign's
// sha256-<hex>.sig. An image that fails is not copied and its pair fails
// with a *verify.Error naming the policy and the reason; the lock entry of
// one that passes records the policy and the signature (lock.Verified),
// which the supply chain walk copies with the image.
func WithVerify(ps verify.Policies) Option {
	return func(o *options) error { o.policies = ps; return nil }
}

// policy returns the policy that covers the pair's source repository, nil
// when none does.
func (r *runner) policy(p Pair) *verify.Policy {
	repo, _ := lock.SplitRef(p.Source)
	return r.o.policies.For(repo)
}

// verify checks the signatures of the source image want (read from src's
// repository, a source mirror's when one serves it) under pol, among as:
// what refers to want there, as the supply-chain walk lists it (referrersOf),
// which then copies it without listing it again.
func (r *runner) verify(ctx context.Context, pol *verify.Policy, src name.Reference, want v1.Hash, as []artifact) (*lock.Verified, error) {
	var (
		referrers []v1.Descriptor
		legacy    *v1.Descriptor
	)
	for _, a := range as {
		if a.tag == "sha256-"+want.Hex+".sig" {
			legacy = &a.desc
			continue
		}
		referrers = append(referrers, a.desc)
	}
	v, err := pol.ImageAmong(ctx, src.Context(), want, referrers, legacy, remote.Reuse(r.puller))
	if err != nil {
		return nil, fmt.Errorf("verify signature of %s%s: %w", want, r.via(src), err)
	}
	return &lock.Verified{Policy: v.Policy, PolicyDigest: v.PolicyDigest, Signature: v.Signature.String()}, nil
}

// Verdict is what a signature check found for one image a policy covers.
type Verdict struct {
	// Image is the normalised source reference.
	Image string `json:"image"`
	// At is where the signatures were read: repository@digest (the source,
	// or its source mirror, or the target).
	At string `json:"at"`
	// Policy is the covering policy, spec.verify[N].
	Policy string `json:"policy"`
	// Signature is the verifying signature's manifest digest, "" when none.
	Signature string `json:"signature,omitempty"`
	// Reason is "" when a signature verified, else a verify.Reason or
	// ReasonRegistry; Detail says more.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// ReasonRegistry is a Verdict's reason when the registry failed (auth,
// network, a bound): nothing was verified either way.
const ReasonRegistry = "registry error"

// Refused counts the verdicts with a reason.
func Refused(vs []Verdict) int {
	n := 0
	for _, v := range vs {
		if v.Reason != "" {
			n++
		}
	}
	return n
}

// verdict fills v from a verification's outcome.
func verdict(v Verdict, sig string, err error) Verdict {
	var ve *verify.Error
	switch {
	case err == nil:
		v.Signature = sig
	case errors.As(err, &ve):
		v.Reason, v.Detail = string(ve.Reason), ve.Detail
	default:
		v.Reason, v.Detail = ReasonRegistry, oneLine(err.Error())
	}
	return v
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// VerifySource verifies, in place and copying nothing, the signature of
// each pair's source image that a policy of ps covers, as Run would before
// copying it: the source tag resolved to its digest (through a source
// mirror when WithSourceMirrors names one) and a signature found there that
// verifies. It returns one Verdict per covered pair, sorted by image;
// registry failures are verdicts too (ReasonRegistry). Requests go as Run's
// do.
func VerifySource(ctx context.Context, pairs []Pair, ps verify.Policies, opts ...Option) ([]Verdict, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	var covered []Pair
	for _, p := range pairs {
		if repo, _ := lock.SplitRef(p.Source); ps.For(repo) != nil {
			covered = append(covered, p)
		}
	}
	ropts, _ := o.remote(ctx)
	puller, err := remote.NewPuller(ropts...)
	if err != nil {
		return nil, err
	}
	r := &runner{o: o, puller: puller}
	out := make([]Verdict, len(covered))
	var g errgroup.Group
	g.SetLimit(o.jobs)
	for i, p := range covered {
		g.Go(func() error {
			repo, _ := lock.SplitRef(p.Source)
			pol := ps.For(repo)
			v := Verdict{Image: p.Source, At: p.Source, Policy: pol.Name}
			src, err := r.sourceRef(p.Source)
			if err != nil {
				out[i] = verdict(v, "", err)
				return nil
			}
			want, err := r.resolve(ctx, src)
			if err != nil {
				out[i] = verdict(v, "", err)
				return nil
			}
			v.At = src.Context().Digest(want.String()).String()
			got, err := pol.Image(ctx, src.Context(), want, remote.Reuse(puller))
			out[i] = verdict(v, got.Signature.String(), err)
			return nil
		})
	}
	_ = g.Wait()
	slices.SortFunc(out, func(a, b Verdict) int { return strings.Compare(a.Image, b.Image) })
	return out, nil
}

// resolve returns the digest src names (HEAD for a tag).
func (r *runner) resolve(ctx context.Context, src name.Reference) (v1.Hash, error) {
	if d, ok := src.(name.Digest); ok {
		return v1.NewHash(d.DigestStr())
	}
	desc, err := r.puller.Head(ctx, src)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("resolve source%s: %w", r.via(src), err)
	}
	return desc.Digest, nil
}

// VerifyMirror verifies, at the mirror reg (what clusters pull), the
// signature each covered image's lock entry names (lock.Verified) under the
// policy of ps that covers its source now: the manifest must be in the
// image's target repository and verify for the image's digest, offline. An
// entry that records no verification under that policy is refused
// (verify.NoSignature). One Verdict per covered image, sorted by image.
// Requests go as Check's do.
func VerifyMirror(ctx context.Context, reg schema.Registry, images []lock.Image, ps verify.Policies, opts ...Option) ([]Verdict, error) {
	policy := func(img lock.Image) *verify.Policy {
		repo, _ := lock.SplitRef(img.Source)
		return ps.For(repo)
	}
	covered := slices.DeleteFunc(slices.Clone(images), func(img lock.Image) bool { return policy(img) == nil })
	if len(covered) == 0 {
		return nil, nil
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	o.insecure = o.insecure || reg.Insecure
	ropts, _ := o.remote(ctx, schema.Registry{Host: reg.Host, Insecure: o.insecure})
	out := make([]Verdict, len(covered))
	var g errgroup.Group
	g.SetLimit(o.jobs)
	for i, img := range covered {
		g.Go(func() error {
			p := policy(img)
			v := Verdict{Image: img.Source, At: img.Pinned(), Policy: p.Name}
			lv := img.Verified
			if lv == nil || lv.Policy != p.Name || lv.PolicyDigest != p.Digest {
				v.Reason, v.Detail = string(verify.NoSignature), "locked without a signature verified under the policy (run `fleetgen mirror`)"
				out[i] = v
				return nil
			}
			repo, err := name.NewRepository(img.Repository(), o.nameOpts()...)
			if err != nil {
				out[i] = verdict(v, "", fmt.Errorf("lock entry %s: %w", inert.Quote(img.Source), err))
				return nil
			}
			d, err1 := v1.NewHash(img.Digest)
			sig, err2 := v1.NewHash(lv.Signature)
			if err1 != nil || err2 != nil {
				v.Reason, v.Detail = string(verify.Malformed), "malformed digest in the lock"
				out[i] = v
				return nil
			}
			err = p.Signature(ctx, repo, d, sig, ropts...)
			out[i] = verdict(v, lv.Signature, err)
			if err == nil {
				o.logger.Debug("signature verified at the mirror", "image", img.Pinned(), "policy", p.Name, "signature", lv.Signature)
			}
			return nil
		})
	}
	_ = g.Wait()
	slices.SortFunc(out, func(a, b Verdict) int { return strings.Compare(a.Image, b.Image) })
	return out, nil
}

// UnsignedError lists the locked images a spec.verify policy covers that
// have no verifying signature at the mirror: what clusters would pull.
type UnsignedError struct {
	// Images are "repo@sha256:…: policy spec.verify[N]: REASON: detail", sorted.
	Images []string
}

func (e *UnsignedError) Error() string {
	return fmt.Sprintf("%d locked image(s) have no verifying signature in the registry (run `fleetgen mirror`):\n  %s",
		len(e.Images), strings.Join(e.Images, "\n  "))
}

// Verify verifies, at the mirror reg, the signatures of the locked images
// a policy of ps covers (VerifyMirror): a refused signature makes an
// *UnsignedError listing every one, registry failures are errors. Publish
// runs it before it pushes anything; Run verifies at the source
// (WithVerify).
func Verify(ctx context.Context, reg schema.Registry, images []lock.Image, ps verify.Policies, opts ...Option) error {
	vs, err := VerifyMirror(ctx, reg, images, ps, opts...)
	if err != nil {
		return err
	}
	var refused []string
	var errs []error
	for _, v := range vs {
		switch {
		case v.Reason == ReasonRegistry:
			errs = append(errs, fmt.Errorf("verify signature of %s: %s", inert.Quote(v.At), v.Detail))
		case v.Reason != "":
			refused = append(refused, inert.Quote(v.At)+": policy "+v.Policy+": "+v.Reason+": "+v.Detail)
		}
	}
	if len(refused) > 0 {
		errs = append([]error{&UnsignedError{Images: refused}}, errs...)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("verify signatures in %s: %w", reg.Host, err)
	}
	if len(vs) > 0 {
		newOpts, _ := newOptions(opts)
		if newOpts != nil {
			newOpts.logger.Info("verified the locked images' signatures at the mirror", "registry", reg.Host, "images", len(vs))
		}
	}
	return nil
}
