package publish

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sync/errgroup"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
)

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

// VerifySignatures checks, at the mirror, the signature each covered image's
// lock entry names (lock.Verified) under the policy that covers it now
// (policies maps a lock Source to it): the manifest must be in the image's
// target repository and verify for the image's digest, offline. An image
// whose entry records no verification, or a refused signature, makes an
// *UnsignedError listing every one; registry failures are reported too.
// Credentials and transport are Verify's.
func VerifySignatures(ctx context.Context, reg schema.Registry, images []lock.Image, policies map[string]*verify.Policy, opts ...Option) error {
	if len(policies) == 0 {
		return nil
	}
	o, err := newOptions(opts)
	if err != nil {
		return err
	}
	var nopts []name.Option
	if reg.Insecure || o.insecure {
		nopts = append(nopts, name.Insecure)
	}
	ropts := []remote.Option{remote.WithAuthFromKeychain(o.keychain(reg))}
	type result struct {
		refused string
		err     error
	}
	results := make([]result, len(images))
	var g errgroup.Group
	g.SetLimit(o.jobs)
	for i, img := range images {
		p := policies[img.Source]
		if p == nil {
			continue
		}
		g.Go(func() error {
			what := img.Pinned() + ": policy " + p.Name + ": "
			v := img.Verified
			if v == nil || v.Policy != p.Name || v.PolicyDigest != p.Digest {
				results[i].refused = what + "locked without a signature verified under the policy"
				return nil
			}
			repo, err := name.NewRepository(img.Repository(), nopts...)
			if err != nil {
				results[i].err = fmt.Errorf("lock entry %s: %w", img.Source, err)
				return nil
			}
			d, err1 := v1.NewHash(img.Digest)
			sig, err2 := v1.NewHash(v.Signature)
			if err1 != nil || err2 != nil {
				results[i].refused = what + "malformed digest in the lock"
				return nil
			}
			err = p.Signature(ctx, repo, d, sig, ropts...)
			var ve *verify.Error
			switch {
			case errors.As(err, &ve):
				results[i].refused = what + string(ve.Reason) + ": " + ve.Detail
			case err != nil:
				results[i].err = fmt.Errorf("verify signature of %s: %w", img.Pinned(), err)
			default:
				o.logger.Debug("signature verified at the mirror", "image", img.Pinned(), "policy", p.Name, "signature", v.Signature)
			}
			return nil
		})
	}
	_ = g.Wait() // failures are in results
	var refused []string
	var errs []error
	for _, r := range results {
		switch {
		case r.refused != "":
			refused = append(refused, r.refused)
		case r.err != nil:
			errs = append(errs, r.err)
		}
	}
	sort.Strings(refused)
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	if len(refused) > 0 {
		errs = append([]error{&UnsignedError{Images: refused}}, errs...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("verify signatures in %s: %w", reg.Host, errors.Join(errs...))
	}
	o.logger.Info("verified the locked images' signatures at the mirror", "registry", reg.Host, "images", len(policies))
	return nil
}
