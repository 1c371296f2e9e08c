package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
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
	raw     []byte // the manifest, when it was read to find it
}

// supplyChain copies into dstRepo every artifact that refers to one of
// subjects in srcRepo, recursively, by digest, and returns them as the lock
// records them; listed holds what referrersOf already found of some
// subjects. Referrers of one subject are written one after the other, so
// that go-containerregistry's update of a target's referrers tag index (on a
// registry without the referrers API) never races with itself.
func (r *runner) supplyChain(ctx context.Context, srcRepo, dstRepo name.Repository, subjects []v1.Hash, listed map[v1.Hash][]artifact, pushed *atomic.Int64) ([]lock.Referrer, error) {
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
				as, ok := listed[s]
				if !ok {
					var err error
					if as, err = r.referrersOf(gctx, srcRepo, s); err != nil {
						return err
					}
				}
				var claimed []artifact
				for _, a := range as {
					mu.Lock()
					dup := seen[a.desc.Digest]
					seen[a.desc.Digest] = true
					n := len(seen) - len(subjects)
					mu.Unlock()
					switch {
					case dup:
						continue
					case depth > MaxReferrerDepth:
						return fmt.Errorf("artifact %s refers to %s more than %d levels below the image: want at most %d (or --no-referrers)", a.desc.Digest, s, MaxReferrerDepth, MaxReferrerDepth)
					case n > MaxReferrers:
						return fmt.Errorf("more than %d artifacts refer to the image: want at most %d (or --no-referrers)", MaxReferrers, MaxReferrers)
					}
					claimed = append(claimed, a)
				}
				// What the target lacks is looked up at once; the writes
				// follow one by one (see above).
				plans := make([]artifactPlan, len(claimed))
				cg, cctx := errgroup.WithContext(gctx)
				for i, a := range claimed {
					cg.Go(func() error {
						var err error
						plans[i], err = r.checkArtifact(cctx, srcRepo, dstRepo, a)
						return err
					})
				}
				if err := cg.Wait(); err != nil {
					return err
				}
				for _, p := range plans {
					if err := r.putArtifact(gctx, srcRepo, dstRepo, p, pushed); err != nil {
						return err
					}
					mu.Lock()
					out = append(out, p.ref)
					next = append(next, p.a.desc.Digest)
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
			if have.raw == nil {
				have.raw = a.raw
			}
			return
		}
		out[a.desc.Digest] = &a
	}
	// A registry without the referrers API keeps them in the tag index
	// sha256-<hex>, and cosign keeps its artifacts under tags too: where the
	// repository's tag list is known, only the tags it has are read, so an
	// image without artifacts costs no request at all.
	tags, listed, err := r.tagList(ctx, repo)
	if err != nil {
		return nil, err
	}
	fallback := "sha256-" + d.Hex
	has, known := r.pings.referrersAPI(repo.RegistryStr())
	if !known {
		// One walk per registry asks the referrers API first; the others
		// wait for its answer rather than all asking at once.
		probe, first := r.probe(repo.RegistryStr())
		if first {
			defer close(probe)
		} else {
			select {
			case <-probe:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			has, known = r.pings.referrersAPI(repo.RegistryStr())
		}
	}
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
			im, err := parseIndex(repo.RegistryStr(), d, desc.Manifest)
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
			if len(im.Manifests) > MaxIndexEntries {
				return &BoundError{Registry: repo.RegistryStr(), What: fmt.Sprintf("the referrers list of %s (%d manifests)", d, len(im.Manifests)), Bound: fmt.Sprintf("MaxIndexEntries, %d", MaxIndexEntries)}
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
			// GET, not HEAD: the same round trip, and the manifest is needed.
			desc, err := r.puller.Get(gctx, repo.Tag(tag))
			switch {
			case isNotFound(err):
				return nil
			case err != nil:
				return fmt.Errorf("check tag %s in %s: %w", tag, repo.RegistryStr(), err)
			}
			add(artifact{desc: desc.Descriptor, subject: d, tag: tag, raw: desc.Manifest})
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

// probe returns the channel closed once the first walk on registry host has
// asked its referrers API, and whether the caller is that walk.
func (r *runner) probe(host string) (chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch, ok := r.probes[host]; ok {
		return ch, false
	}
	ch := make(chan struct{})
	r.probes[host] = ch
	return ch, true
}

// tagList is one repository's tags, listed once per run.
type tagList struct {
	once sync.Once
	tags map[string]bool
	ok   bool
	err  error // a bound the listing went past
}

// maxListedTags bounds the tag list read per repository: past it (a public
// repository with thousands of tags) the walk asks for cosign's tags one by
// one instead.
const maxListedTags = 10_000

// tagList returns repo's tags, and false when they could not be listed (the
// registry refuses, or there are more than maxListedTags): then every tag is
// asked for. A listing past MaxTagPages pages, or a page past MaxListBytes,
// is a *BoundError: the walk fails rather than read on.
func (r *runner) tagList(ctx context.Context, repo name.Repository) (map[string]bool, bool, error) {
	r.mu.Lock()
	tl, ok := r.tags[repo.String()]
	if !ok {
		tl = &tagList{}
		r.tags[repo.String()] = tl
	}
	r.mu.Unlock()
	tl.once.Do(func() {
		lister, err := r.puller.Lister(ctx, repo)
		if err != nil {
			tl.err = boundOf(err)
			return
		}
		tags := map[string]bool{}
		for pages := 0; lister.HasNext(); pages++ {
			if pages == MaxTagPages {
				tl.err = &BoundError{Registry: repo.RegistryStr(), What: "the tag list of " + repo.RepositoryStr() + " (more than " + strconv.Itoa(MaxTagPages) + " pages)", Bound: "MaxTagPages, " + strconv.Itoa(MaxTagPages)}
				return
			}
			page, err := lister.Next(ctx)
			if err != nil {
				tl.err = boundOf(err)
				return
			}
			for _, t := range page.Tags {
				tags[t] = true
			}
			if len(tags) > maxListedTags {
				return // too many to be worth it: ask tag by tag
			}
		}
		tl.tags, tl.ok = tags, true
	})
	return tl.tags, tl.ok, tl.err
}

// boundOf returns err's *BoundError, nil when it has none.
func boundOf(err error) error {
	var be *BoundError
	if errors.As(err, &be) {
		return be
	}
	return nil
}

// artifactPlan is what one artifact needs at the target.
type artifactPlan struct {
	a         artifact
	ref       lock.Referrer
	raw       []byte
	mt        types.MediaType
	copy, tag bool // copy the manifest (and what it refers to); set the tag
}

// checkArtifact finds out what the target lacks of artifact a and what the
// lock says of it. The source manifest is read only when it is needed: to
// copy it, or to learn its type when the referrers list gave a generic one.
func (r *runner) checkArtifact(ctx context.Context, srcRepo, dstRepo name.Repository, a artifact) (artifactPlan, error) {
	p := artifactPlan{a: a, raw: a.raw, mt: a.desc.MediaType}
	d := a.desc.Digest
	var (
		have, tagged       *v1.Descriptor
		haveErr, taggedErr error
		g, gctx            = errgroup.WithContext(ctx)
	)
	g.Go(func() error { have, haveErr = r.puller.Head(gctx, dstRepo.Digest(d.String())); return nil })
	if a.tag != "" {
		g.Go(func() error { tagged, taggedErr = r.puller.Head(gctx, dstRepo.Tag(a.tag)); return nil })
	}
	get := func(ctx context.Context) error {
		desc, err := r.puller.Get(ctx, srcRepo.Digest(d.String()))
		if err != nil {
			return fmt.Errorf("get artifact %s from %s: %w", d, srcRepo.RegistryStr(), err)
		}
		p.raw, p.mt = desc.Manifest, desc.MediaType
		return nil
	}
	if p.raw == nil && !specificType(a.desc.ArtifactType) {
		g.Go(func() error { return get(gctx) })
	}
	if err := g.Wait(); err != nil {
		return p, err
	}
	switch {
	case haveErr == nil && have.Digest == d:
	case haveErr != nil && !isNotFound(haveErr):
		return p, fmt.Errorf("check target artifact %s: %w", d, haveErr)
	default:
		p.copy = true
	}
	if a.tag != "" {
		switch {
		case taggedErr == nil && tagged.Digest == d:
		case taggedErr != nil && !isNotFound(taggedErr):
			return p, fmt.Errorf("check target tag %s: %w", a.tag, taggedErr)
		default:
			p.tag = true
		}
	}
	if p.raw == nil && (p.copy || p.tag) {
		if err := get(ctx); err != nil {
			return p, err
		}
	}
	p.ref = lock.Referrer{Digest: d.String(), ArtifactType: a.desc.ArtifactType, Tag: a.tag}
	if p.raw != nil {
		if h, _, err := v1.SHA256(bytes.NewReader(p.raw)); err != nil || h != d {
			return p, fmt.Errorf("artifact %s: %w: %s served other bytes", d, ErrDigestMismatch, srcRepo.RegistryStr())
		}
		// The same whether or not the manifest was read (cold or warm run).
		if !specificType(a.desc.ArtifactType) {
			p.ref.ArtifactType = artifactType(p.mt, p.raw)
		}
	}
	return p, nil
}

// specificType reports whether t, an artifact type from a referrers list,
// is what artifactType would say of the manifest: set, and not a generic
// config type (for which the manifest's layers tell more).
func specificType(t string) bool {
	return t != "" && t != string(types.OCIConfigJSON) && t != string(types.DockerConfigJSON) && !strings.HasPrefix(t, "application/vnd.oci.empty")
}

// putArtifact writes what checkArtifact found missing: the artifact (its
// blobs, children and manifest, by digest) and its cosign tag.
func (r *runner) putArtifact(ctx context.Context, srcRepo, dstRepo name.Repository, p artifactPlan, pushed *atomic.Int64) error {
	d := p.a.desc.Digest
	if p.copy {
		if err := r.copyManifest(ctx, srcRepo, dstRepo, p.mt, p.raw, d, pushed, true, 0); err != nil {
			return r.refused(dstRepo, p.ref, err)
		}
	}
	if p.tag {
		if err := r.pusher.Put(ctx, dstRepo.Tag(p.a.tag), rawManifest{p.raw, p.mt}); err != nil {
			return r.refused(dstRepo, p.ref, fmt.Errorf("put tag %s: %w", p.a.tag, err))
		}
	}
	return nil
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
