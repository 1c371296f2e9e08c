package publish

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"golang.org/x/sync/errgroup"
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

// Verify checks that every image is locked where reg mirrors it and present
// in the registry at its digest (HEAD requests, in parallel), and returns an
// error naming every stale or missing one.
//
// A lock whose Target is not what mirror.Plan gives for its Source under reg
// is refused before any request (*StaleLockError): checking the old registry
// would prove nothing about the one the fleet names. Each image is then
// looked up at its Target repository pinned by Digest; a 404 makes it missing
// (*MissingError); other failures (auth, network) are reported too, all
// sorted. reg.Insecure (or WithInsecure) talks plain HTTP. Credentials come
// from FLEETGEN_REGISTRY_USERNAME/PASSWORD, then the Docker config and
// credential helpers.
func Verify(ctx context.Context, reg schema.Registry, images []lock.Image, opts ...Option) error {
	o, err := newOptions(opts)
	if err != nil {
		return err
	}
	if err := checkTargets(reg, images); err != nil {
		return err
	}
	insecure := reg.Insecure || o.insecure
	var nopts []name.Option
	if insecure {
		nopts = append(nopts, name.Insecure)
	}
	// One check per image and per artifact of its supply chain, at most jobs
	// at a time; every failure is collected (none stops the others).
	type check struct {
		img  lock.Image
		ref  *lock.Referrer // nil: the image itself
		what string         // what a missing entry says
	}
	var checks []check
	for _, img := range images {
		checks = append(checks, check{img: img, what: img.Pinned()})
		for i := range img.Referrers {
			r := &img.Referrers[i]
			checks = append(checks, check{img: img, ref: r,
				what: fmt.Sprintf("%s: referrer %s (%s)", img.Pinned(), r.Digest, r.ArtifactType)})
		}
	}
	type result struct {
		missing bool
		err     error
	}
	results := make([]result, len(checks))
	var g errgroup.Group
	g.SetLimit(o.jobs)
	for i, c := range checks {
		g.Go(func() error {
			digest, pinned := c.img.Digest, c.img.Pinned()
			if c.ref != nil {
				digest, pinned = c.ref.Digest, c.img.Repository()+"@"+c.ref.Digest
			}
			d, err := name.NewDigest(pinned, nopts...)
			if err != nil {
				results[i].err = fmt.Errorf("lock entry %s: %w", c.img.Source, err)
				return nil
			}
			ropts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(o.keychain(reg))}
			desc, err := remote.Head(d, ropts...)
			var terr *transport.Error
			switch {
			case errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound:
				results[i].missing = true
				return nil
			case err != nil:
				results[i].err = fmt.Errorf("head %s: %w", pinned, err)
				return nil
			case desc.Digest.String() != digest:
				results[i].err = fmt.Errorf("head %s: registry answered digest %s", pinned, desc.Digest)
				return nil
			}
			if c.ref != nil && c.ref.Tag != "" {
				// Where cosign looks: the tag must name the same artifact.
				t, err := name.NewTag(c.img.Repository()+":"+c.ref.Tag, nopts...)
				if err != nil {
					results[i].err = fmt.Errorf("lock entry %s: %w", c.img.Source, err)
					return nil
				}
				desc, err := remote.Head(t, ropts...)
				switch {
				case errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound, err == nil && desc.Digest.String() != digest:
					results[i].missing = true
				case err != nil:
					results[i].err = fmt.Errorf("head %s: %w", t, err)
				}
				return nil
			}
			o.logger.Debug("present", "ref", pinned)
			return nil
		})
	}
	_ = g.Wait() // failures are in results

	var missing []string
	var errs []error
	for i, r := range results {
		switch {
		case r.missing:
			missing = append(missing, checks[i].what)
		case r.err != nil:
			errs = append(errs, r.err)
		}
	}
	sort.Strings(missing)
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	if len(missing) > 0 {
		errs = append([]error{&MissingError{Images: missing}}, errs...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("verify registry %s: %w", reg.Host, errors.Join(errs...))
	}
	o.logger.Info("verified locked images at their digest", "registry", reg.Host, "images", len(images))
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
	pairs, err := mirror.Plan(reg, sources)
	if err != nil {
		return fmt.Errorf("verify registry %s: %w", reg.Host, err)
	}
	planned := make(map[string]string, len(pairs))
	for _, p := range pairs {
		planned[p.Source] = p.Target
	}
	var stale []string
	for _, img := range images {
		src, err := lock.Normalize(img.Source)
		if err != nil {
			return fmt.Errorf("verify registry %s: lock entry %s: %w", reg.Host, img.Source, err)
		}
		if want := planned[src]; img.Target != want {
			stale = append(stale, fmt.Sprintf("%s: locked at %s, want %s", img.Source, img.Target, want))
		}
	}
	if len(stale) == 0 {
		return nil
	}
	sort.Strings(stale)
	return &StaleLockError{Registry: reg.Host, Images: stale}
}

// keychain is FLEETGEN_REGISTRY_USERNAME/PASSWORD (when both are set) for
// reg's host, reached as reg says (HTTPS, or plain HTTP when insecure or on
// loopback), then the Docker config and its credential helpers (so `az acr
// login` works). The variables belong to spec.registry.host alone (SPEC §4):
// an OCI source on another host, or the registry's host reached another way,
// never gets them.
func (o *options) keychain(reg schema.Registry) authn.Keychain {
	return authn.NewMultiKeychain(envKeychain{o: o, reg: reg}, authn.DefaultKeychain)
}

type envKeychain struct {
	o   *options
	reg schema.Registry
}

func (k envKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	user, pass := k.o.env(EnvRegistryUsername), k.o.env(EnvRegistryPassword)
	if user == "" || pass == "" || !k.ours(r) {
		return authn.Anonymous, nil
	}
	return &authn.Basic{Username: user, Password: pass}, nil
}

// ours reports whether r is spec.registry's host reached by its own scheme.
func (k envKeychain) ours(r authn.Resource) bool {
	var opts []name.Option
	if k.reg.Insecure || k.o.insecure {
		opts = append(opts, name.Insecure)
	}
	reg, err := name.NewRegistry(k.reg.Host, opts...)
	if err != nil || r.RegistryStr() != reg.RegistryStr() {
		return false
	}
	s, ok := r.(interface{ Scheme() string })
	return ok && s.Scheme() == reg.Scheme()
}
