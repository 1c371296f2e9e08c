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

// verify checks the signatures of the source image want (read from src's
// repository, a source mirror's when one serves it) when a policy covers
// the pair's source repository; nil, nil when none does.
func (r *runner) verify(ctx context.Context, p Pair, src name.Reference, want v1.Hash) (*lock.Verified, error) {
	repo, _ := lock.SplitRef(p.Source)
	pol := r.o.policies.For(repo)
	if pol == nil {
		return nil, nil
	}
	v, err := pol.Image(ctx, src.Context(), want, remote.Reuse(r.puller))
	if err != nil {
		return nil, fmt.Errorf("verify signature of %s%s: %w", want, r.via(src), err)
	}
	return &lock.Verified{Policy: v.Policy, PolicyDigest: v.PolicyDigest, Signature: v.Signature.String()}, nil
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

// Verify verifies, at the mirror reg (what clusters pull), the signature
// each image's lock entry names (lock.Verified) under the policy of ps that
// covers its source now: the manifest must be in the image's target
// repository and verify for the image's digest, offline. An image whose
// entry records no verification under that policy, or a refused signature,
// makes an *UnsignedError listing every one; registry failures are reported
// too. Requests go as Check's do. Run verifies at the source (WithVerify).
func Verify(ctx context.Context, reg schema.Registry, images []lock.Image, ps verify.Policies, opts ...Option) error {
	policy := func(img lock.Image) *verify.Policy {
		repo, _ := lock.SplitRef(img.Source)
		return ps.For(repo)
	}
	covered := slices.DeleteFunc(slices.Clone(images), func(img lock.Image) bool { return policy(img) == nil })
	if len(covered) == 0 {
		return nil
	}
	o, err := newOptions(opts)
	if err != nil {
		return err
	}
	o.insecure = o.insecure || reg.Insecure
	ropts, _ := o.remote(ctx, schema.Registry{Host: reg.Host, Insecure: o.insecure})
	err = fanOut(len(covered), o.jobs, func(refused []string) error { return &UnsignedError{Images: refused} }, func(i int) (string, error) {
		img, p := covered[i], policy(covered[i])
		what := img.Pinned() + ": policy " + p.Name + ": "
		v := img.Verified
		if v == nil || v.Policy != p.Name || v.PolicyDigest != p.Digest {
			return what + "locked without a signature verified under the policy", nil
		}
		repo, err := name.NewRepository(img.Repository(), o.nameOpts()...)
		if err != nil {
			return "", fmt.Errorf("lock entry %s: %w", img.Source, err)
		}
		d, err1 := v1.NewHash(img.Digest)
		sig, err2 := v1.NewHash(v.Signature)
		if err1 != nil || err2 != nil {
			return what + "malformed digest in the lock", nil
		}
		err = p.Signature(ctx, repo, d, sig, ropts...)
		var ve *verify.Error
		switch {
		case errors.As(err, &ve):
			return what + string(ve.Reason) + ": " + ve.Detail, nil
		case err != nil:
			return "", fmt.Errorf("verify signature of %s: %w", img.Pinned(), err)
		}
		o.logger.Debug("signature verified at the mirror", "image", img.Pinned(), "policy", p.Name, "signature", v.Signature)
		return "", nil
	})
	if err != nil {
		return fmt.Errorf("verify signatures in %s: %w", reg.Host, err)
	}
	o.logger.Info("verified the locked images' signatures at the mirror", "registry", reg.Host, "images", len(covered))
	return nil
}
