package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"

	"fleetgen.dev/fleetgen/pkg/lock"
)

// The supply chain of one image is bounded, as oras-go's ExtendedCopy
// bounds its graph by depth and regsync by count: an artifact may refer to an
// artifact (a signature on an SBOM) at most MaxReferrerDepth levels below the
// image, and at most MaxReferrers artifacts refer to one image in all. A
// source past either bound fails the image rather than copy part of it.
const (
	MaxReferrerDepth = 4
	MaxReferrers     = 256
)

// cosignSuffixes are cosign's tags beside an image: sha256-<hex>.sig, .att
// and .sbom.
var cosignSuffixes = []string{".sig", ".att", ".sbom"}

// ErrArtifactRefused is returned (wrapped) when the target registry refuses
// an artifact manifest (a signature, attestation or SBOM).
var ErrArtifactRefused = errors.New("refused an artifact manifest")

// artifact is one manifest that refers to a subject.
type artifact struct {
	desc    v1.Descriptor
	subject v1.Hash
	tag     string // cosign's tag, when found by it
}

// supplyChain copies into dstRepo every artifact that refers to one of
// subjects in srcRepo, recursively, by digest, and returns them as the lock
// records them. Referrers of one subject are written one after the other, so
// that go-containerregistry's update of a target's referrers tag index (on a
// registry without the referrers API) never races with itself.
func (r *runner) supplyChain(ctx context.Context, srcRepo, dstRepo name.Repository, subjects []v1.Hash, pushed *atomic.Int64) ([]lock.Referrer, error) {
	var (
		mu   sync.Mutex
		seen = map[v1.Hash]bool{}
		out  []lock.Referrer
	)
	for _, s := range subjects {
		seen[s] = true
	}
	level := subjects
	for depth := 1; len(level) > 0; depth++ {
		var next []v1.Hash
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(r.o.jobs)
		for _, s := range level {
			g.Go(func() error {
				as, err := r.referrersOf(gctx, srcRepo, s)
				if err != nil {
					return err
				}
				for _, a := range as {
					mu.Lock()
					dup := seen[a.desc.Digest]
					seen[a.desc.Digest] = true
					n := len(out)
					mu.Unlock()
					switch {
					case dup:
						continue
					case depth > MaxReferrerDepth:
						return fmt.Errorf("artifact %s refers to %s more than %d levels below the image: want at most %d (or --no-referrers)", a.desc.Digest, s, MaxReferrerDepth, MaxReferrerDepth)
					case n >= MaxReferrers:
						return fmt.Errorf("more than %d artifacts refer to the image: want at most %d (or --no-referrers)", MaxReferrers, MaxReferrers)
					}
					ref, err := r.copyArtifact(gctx, srcRepo, dstRepo, a, pushed)
					if err != nil {
						return err
					}
					mu.Lock()
					out = append(out, ref)
					next = append(next, a.desc.Digest)
					mu.Unlock()
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		level = next
	}
	lock.SortReferrers(out)
	return out, nil
}

// referrersOf lists what refers to d in repo, sorted by digest: the referrers
// API or, where the registry has none, its referrers tag index sha256-<hex>
// (go-containerregistry's remote.Referrers does both), and cosign's tags.
func (r *runner) referrersOf(ctx context.Context, repo name.Repository, d v1.Hash) ([]artifact, error) {
	var (
		mu  sync.Mutex
		out = map[v1.Hash]*artifact{}
	)
	add := func(a artifact) {
		mu.Lock()
		defer mu.Unlock()
		if have, ok := out[a.desc.Digest]; ok {
			if have.tag == "" {
				have.tag = a.tag
			}
			if have.desc.ArtifactType == "" {
				have.desc.ArtifactType = a.desc.ArtifactType
			}
			return
		}
		out[a.desc.Digest] = &a
	}
	// A registry without the referrers API keeps them in the tag index
	// sha256-<hex>, and cosign keeps its artifacts under tags too: where the
	// repository's tag list is known, only the tags it has are read, so an
	// image without artifacts costs no request at all.
	tags, listed := r.tagList(ctx, repo)
	fallback := "sha256-" + d.Hex
	has, known := r.pings.referrersAPI(repo.RegistryStr())
	g, gctx := errgroup.WithContext(ctx)
	switch {
	case known && !has && listed && !tags[fallback]:
		// Nothing refers to d by the tag index.
	case known && !has && listed:
		g.Go(func() error {
			desc, err := r.puller.Get(gctx, repo.Tag(fallback))
			if err != nil {
				return fmt.Errorf("referrers of %s in %s: %w", d, repo.RegistryStr(), err)
			}
			im, err := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
			if err != nil {
				return fmt.Errorf("referrers of %s in %s: tag index: %w", d, repo.RegistryStr(), err)
			}
			for _, m := range im.Manifests {
				add(artifact{desc: m, subject: d})
			}
			return nil
		})
	default:
		g.Go(func() error {
			idx, err := remote.Referrers(repo.Digest(d.String()), remote.Reuse(r.puller), remote.WithContext(gctx))
			if err != nil {
				return fmt.Errorf("referrers of %s in %s: %w", d, repo.RegistryStr(), err)
			}
			im, err := idx.IndexManifest()
			if err != nil {
				return fmt.Errorf("referrers of %s in %s: %w", d, repo.RegistryStr(), err)
			}
			for _, m := range im.Manifests {
				add(artifact{desc: m, subject: d})
			}
			return nil
		})
	}
	for _, suffix := range cosignSuffixes {
		tag := fallback + suffix
		if listed && !tags[tag] {
			continue
		}
		g.Go(func() error {
			desc, err := r.puller.Head(gctx, repo.Tag(tag))
			switch {
			case isNotFound(err):
				return nil
			case err != nil:
				return fmt.Errorf("check tag %s in %s: %w", tag, repo.RegistryStr(), err)
			}
			add(artifact{desc: *desc, subject: d, tag: tag})
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	as := make([]artifact, 0, len(out))
	for _, a := range out {
		as = append(as, *a)
	}
	sort.Slice(as, func(i, j int) bool { return as[i].desc.Digest.String() < as[j].desc.Digest.String() })
	return as, nil
}

// tagList is one repository's tags, listed once per run.
type tagList struct {
	once sync.Once
	tags map[string]bool
	ok   bool
}

// maxListedTags bounds the tag list read per repository: past it (a public
// repository with thousands of tags) the walk asks for cosign's tags one by
// one instead.
const maxListedTags = 10_000

// tagList returns repo's tags, and false when they could not be listed (the
// registry refuses, or there are too many): then every tag is asked for.
func (r *runner) tagList(ctx context.Context, repo name.Repository) (map[string]bool, bool) {
	r.mu.Lock()
	tl, ok := r.tags[repo.String()]
	if !ok {
		tl = &tagList{}
		r.tags[repo.String()] = tl
	}
	r.mu.Unlock()
	tl.once.Do(func() {
		tags, err := r.puller.List(ctx, repo)
		if err != nil || len(tags) > maxListedTags {
			return
		}
		tl.tags, tl.ok = make(map[string]bool, len(tags)), true
		for _, t := range tags {
			tl.tags[t] = true
		}
	})
	return tl.tags, tl.ok
}

// copyArtifact copies artifact a (its blobs, children and manifest, by
// digest; and its cosign tag) unless the target has it, and returns its lock
// entry.
func (r *runner) copyArtifact(ctx context.Context, srcRepo, dstRepo name.Repository, a artifact, pushed *atomic.Int64) (lock.Referrer, error) {
	d := a.desc.Digest
	desc, err := r.puller.Get(ctx, srcRepo.Digest(d.String()))
	if err != nil {
		return lock.Referrer{}, fmt.Errorf("get artifact %s from %s: %w", d, srcRepo.RegistryStr(), err)
	}
	if desc.Digest != d {
		return lock.Referrer{}, fmt.Errorf("artifact %s: %w: %s served %s", d, ErrDigestMismatch, srcRepo.RegistryStr(), desc.Digest)
	}
	ref := lock.Referrer{Digest: d.String(), ArtifactType: artifactType(desc.MediaType, desc.Manifest), Tag: a.tag}
	have, err := r.puller.Head(ctx, dstRepo.Digest(d.String()))
	switch {
	case err == nil && have.Digest == d:
	case err != nil && !isNotFound(err):
		return ref, fmt.Errorf("check target artifact %s: %w", d, err)
	default:
		if err := r.copyManifest(ctx, srcRepo, dstRepo, desc.MediaType, desc.Manifest, d, pushed, true); err != nil {
			return ref, r.refused(dstRepo, ref, err)
		}
	}
	if a.tag == "" {
		return ref, nil
	}
	if t, err := r.puller.Head(ctx, dstRepo.Tag(a.tag)); err == nil && t.Digest == d {
		return ref, nil
	} else if err != nil && !isNotFound(err) {
		return ref, fmt.Errorf("check target tag %s: %w", a.tag, err)
	}
	if err := r.pusher.Put(ctx, dstRepo.Tag(a.tag), rawManifest{desc.Manifest, desc.MediaType}); err != nil {
		return ref, r.refused(dstRepo, ref, fmt.Errorf("put tag %s: %w", a.tag, err))
	}
	return ref, nil
}

// refused explains a target's refusal of an artifact manifest: the registry,
// what was refused, and the way out.
func (r *runner) refused(dstRepo name.Repository, ref lock.Referrer, err error) error {
	var te *transport.Error
	if !errors.As(err, &te) {
		return err
	}
	switch te.StatusCode {
	case http.StatusBadRequest, http.StatusUnsupportedMediaType, http.StatusNotAcceptable, http.StatusMethodNotAllowed, http.StatusForbidden:
	default:
		return err
	}
	return fmt.Errorf("registry %s %w (%s %s): mirror without signatures, attestations and SBOMs with --no-referrers, or use a registry that stores OCI artifacts: %w",
		dstRepo.RegistryStr(), ErrArtifactRefused, ref.ArtifactType, ref.Digest, err)
}

// artifactType says what an artifact is, from its manifest alone (so that
// the lock says the same whichever way it was found): the manifest's
// artifactType, else its config media type unless that is a generic one (as
// the referrers API reports it), else its first layer's (cosign's signatures
// and attestations), else its own media type.
func artifactType(mt types.MediaType, raw []byte) string {
	if mt.IsIndex() {
		if im, err := v1.ParseIndexManifest(bytes.NewReader(raw)); err == nil && im.ArtifactType != "" {
			return im.ArtifactType
		}
		return string(mt)
	}
	mf, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return string(mt)
	}
	switch c := mf.Config.MediaType; {
	case mf.ArtifactType != "":
		return mf.ArtifactType
	case c != "" && c != types.OCIConfigJSON && c != types.DockerConfigJSON && !strings.HasPrefix(string(c), "application/vnd.oci.empty"):
		return string(c)
	case len(mf.Layers) > 0:
		return string(mf.Layers[0].MediaType)
	}
	return string(mt)
}
