package mirror

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/lock"
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
