package mirror

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// MissingError lists locked images, and artifacts of their supply chains
// (signatures, attestations, SBOMs), the registry lacks at their digest.
type MissingError struct {
	// Images are pinned references (repo@sha256:…) and, for an artifact,
	// "repo@sha256:…: referrer sha256:… (ARTIFACT TYPE)", sorted.
	Images []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("the registry lacks %d locked image(s) or artifact(s) at their digest (run `fleetgen mirror`):\n  %s",
		len(e.Images), strings.Join(e.Images, "\n  "))
}

// StaleLockError refuses a lock whose targets are not where spec.registry
// (host, prefix, layout) mirrors their sources: it was made for another
// registry, and the render rewrites images to where the lock says.
type StaleLockError struct {
	// Registry is spec.registry.host.
	Registry string
	// Images are "source: lock target, want planned target", sorted.
	Images []string
}

func (e *StaleLockError) Error() string {
	return fmt.Sprintf("%s was made for another registry than %s (run `fleetgen mirror`, then `fleetgen render`): %d image(s) locked elsewhere:\n  %s",
		lock.FileName, e.Registry, len(e.Images), strings.Join(e.Images, "\n  "))
}

// Check checks that the registry reg holds every locked image, with its
// supply chain, where reg mirrors it (HEAD requests, in parallel), and
// returns an error naming every stale or missing one: publish runs it before
// it pushes anything.
//
// A lock whose Target is not what Plan gives for its Source under reg is
// refused before any request (*StaleLockError): checking the old registry
// would prove nothing about the one the fleet names. Each image is then
// looked up at its Target repository pinned by Digest, and each artifact of
// its supply chain (lock.Referrer) by digest and, where it has one, by the tag
// cosign looks at; a 404 makes it missing (*MissingError); other failures
// (auth, network) are reported too, all sorted. reg.Insecure (or
// WithInsecure) talks plain HTTP. Requests go as Run's do (Keychain,
// WithTargetCredentials, WithJobs, WithTimeouts).
func Check(ctx context.Context, reg schema.Registry, images []lock.Image, opts ...Option) error {
	o, err := newOptions(opts)
	if err != nil {
		return err
	}
	o.insecure = o.insecure || reg.Insecure
	if err := checkTargets(reg, images); err != nil {
		return err
	}
	ropts, _ := o.remote(ctx, schema.Registry{Host: reg.Host, Insecure: o.insecure})
	// One check per image and per artifact of its supply chain.
	type check struct {
		img  lock.Image
		ref  *lock.Referrer // nil: the image itself
		what string         // what a missing entry says
	}
	var checks []check
	for _, img := range images {
		// The lock comes from pull requests: its strings are quoted.
		checks = append(checks, check{img: img, what: inert.Quote(img.Pinned())})
		for i := range img.Referrers {
			r := &img.Referrers[i]
			checks = append(checks, check{img: img, ref: r,
				what: fmt.Sprintf("%s: referrer %s (%s)", inert.Quote(img.Pinned()), r.Digest, inert.Quote(r.ArtifactType))})
		}
	}
	err = fanOut(len(checks), o.jobs, func(missing []string) error { return &MissingError{Images: missing} }, func(i int) (string, error) {
		c := checks[i]
		digest, pinned := c.img.Digest, c.img.Pinned()
		if c.ref != nil {
			digest, pinned = c.ref.Digest, c.img.Repository()+"@"+c.ref.Digest
		}
		d, err := name.NewDigest(pinned, o.nameOpts()...)
		if err != nil {
			return "", fmt.Errorf("lock entry %s: %w", inert.Quote(c.img.Source), err)
		}
		desc, err := remote.Head(d, ropts...)
		switch {
		case isNotFound(err):
			return c.what, nil
		case err != nil:
			return "", fmt.Errorf("head %s: %w", pinned, err)
		case desc.Digest.String() != digest:
			return "", fmt.Errorf("head %s: registry answered digest %s", pinned, desc.Digest)
		}
		if c.ref != nil && c.ref.Tag != "" {
			// Where cosign looks: the tag must name the same artifact.
			t, err := name.NewTag(c.img.Repository()+":"+c.ref.Tag, o.nameOpts()...)
			if err != nil {
				return "", fmt.Errorf("lock entry %s: %w", inert.Quote(c.img.Source), err)
			}
			desc, err := remote.Head(t, ropts...)
			switch {
			case isNotFound(err), err == nil && desc.Digest.String() != digest:
				return c.what, nil
			case err != nil:
				return "", fmt.Errorf("head %s: %w", t, err)
			}
			return "", nil
		}
		o.logger.Debug("present", "ref", pinned)
		return "", nil
	})
	if err != nil {
		return fmt.Errorf("check registry %s: %w", reg.Host, err)
	}
	o.logger.Info("the registry holds every locked image at its digest", "registry", reg.Host, "images", len(images))
	return nil
}

// checkTargets refuses images whose lock Target is not where reg mirrors
// their Source.
func checkTargets(reg schema.Registry, images []lock.Image) error {
	if len(images) == 0 {
		return nil
	}
	sources := make([]string, len(images))
	for i, img := range images {
		sources[i] = img.Source
	}
	pairs, err := Plan(reg, sources)
	if err != nil {
		return fmt.Errorf("check registry %s: %w", reg.Host, err)
	}
	planned := make(map[string]string, len(pairs))
	for _, p := range pairs {
		planned[p.Source] = p.Target
	}
	var stale []string
	for _, img := range images {
		src, err := lock.Normalize(img.Source)
		if err != nil {
			return fmt.Errorf("check registry %s: lock entry %s: %w", reg.Host, inert.Quote(img.Source), err)
		}
		if want := planned[src]; img.Target != want {
			stale = append(stale, fmt.Sprintf("%s: locked at %s, want %s", inert.Quote(img.Source), inert.Quote(img.Target), want))
		}
	}
	if len(stale) == 0 {
		return nil
	}
	sort.Strings(stale)
	return &StaleLockError{Registry: reg.Host, Images: stale}
}
