// Package mirror is fleetgen's one home of registry access, on
// go-containerregistry: Plan (pure) says where each image goes, Run copies it
// there by digest, Check says whether the registry holds what the lock names;
// every request goes through one Keychain, transport and retry policy.
//
// "Verify" means signature verification only: Run verifies at the source
// (WithVerify), VerifySource in place, Verify and VerifyMirror at the mirror.
// All call pkg/verify's Policy.Image (Run: ImageAmong, among the referrers
// its supply-chain walk lists) and Policy.Signature, nothing else
// (verify.go), and pkg/verify has sigstore-go and notation-go verify.
//
// The air gap (airgap.go) runs the same copier: an OCI image layout is a
// registry to it, served in process (local.go). What any registry returns is
// bounded (bounds.go).
package mirror

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
)

// Stats summarises a Run.
type Stats struct {
	// Copied counts pairs whose target lacked the manifest; Present those the
	// target already had at the source's digest.
	Copied, Present int
	// BytesPushed counts blob bytes uploaded to the target (mounted and
	// already-present blobs cost nothing; a retried upload counts twice).
	BytesPushed int64
	// Referrers counts the artifacts of the images' supply chains (copied
	// or present).
	Referrers int
	Elapsed   time.Duration
}

// Event is one progress report: one when a pair starts (Done false, Bytes 0),
// while it copies one every ProgressInterval that moved bytes (Done false,
// Bytes read for it since its last event), and one when it ends (Done true,
// with Err, all Bytes pushed for it and Present when the target already had
// it).
type Event struct {
	Pair    Pair
	Done    bool
	Present bool
	Bytes   int64
	Err     error
}

type options struct {
	logger    *slog.Logger
	progress  func(Event)
	jobs      int
	insecure  bool
	keychain  authn.Keychain
	user      string
	password  string
	transport http.RoundTripper
	timeouts  Timeouts
	backoff   remote.Backoff
	referrers bool
	sources   []SourceMirror
	policies  verify.Policies
	local     http.Handler // an OCI image layout as a registry (local.go)
	display   func(Pair) Pair
}

// WithReferrers copies each image's supply chain with it (default true):
// see Run. False leaves signatures, attestations and SBOMs behind, for
// registries that refuse artifact manifests.
func WithReferrers(b bool) Option { return func(o *options) error { o.referrers = b; return nil } }

// Option configures Run.
type Option func(*options) error

// WithLogger logs to l (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) error { o.logger = l; return nil } }

// WithProgress calls fn for each progress event, from any goroutine.
func WithProgress(fn func(Event)) Option {
	return func(o *options) error { o.progress = fn; return nil }
}

// WithJobs bounds concurrency (default 8): at most n blobs are uploaded at once
// across all images, and at most 8n images are in flight (resolving, checking,
// waiting on a shared blob or putting manifests).
func WithJobs(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("jobs: %d: want a positive number", n)
		}
		if n > 0 {
			o.jobs = n
		}
		return nil
	}
}

// WithInsecure talks plain HTTP to the target registry (spec.registry.insecure,
// for local registries only). Sources on loopback are reached over plain HTTP
// anyway; every other source over HTTPS.
func WithInsecure(b bool) Option { return func(o *options) error { o.insecure = b; return nil } }

// WithKeychain resolves credentials for every registry (default
// authn.DefaultKeychain: the Docker config and its credential helpers, so that
// `az acr login` works).
func WithKeychain(k authn.Keychain) Option {
	return func(o *options) error { o.keychain = k; return nil }
}

// WithTargetCredentials uses user and password (basic auth, or an ACR token)
// for the target registries, ahead of the keychain, as Keychain scopes them;
// with either empty the keychain alone answers. The CLI passes
// EnvRegistryUsername and EnvRegistryPassword.
func WithTargetCredentials(user, password string) Option {
	return func(o *options) error { o.user, o.password = user, password; return nil }
}

// WithTransport sends every request through t instead of the default (an
// http.Transport like remote.DefaultTransport, bounded by WithTimeouts);
// WithTimeouts does not apply to t.
func WithTransport(t http.RoundTripper) Option {
	return func(o *options) error { o.transport = t; return nil }
}

// Run copies every pair (all platforms of an index, by digest, skipping what the
// target has), checks digests, and returns one lock entry per pair, sorted by
// Source. All failures are collected and returned sorted; on any failure the
// returned entries must not be written to the lock.
//
// For each pair Run resolves the source tag to a digest (HEAD) and asks the
// target for the tag (HEAD): the same digest means present, nothing is pulled.
// Otherwise it copies child manifests, then blobs, then the manifest itself,
// always by digest, and tags it last. A blob already uploaded to another
// repository of the target registry during this run is mounted from there
// instead of being uploaded again.
//
// Unless WithReferrers(false), each image's supply chain travels with it (see
// supplyChain): every artifact that refers to it or to one of its platform
// images, by the referrers API, the referrers tag index or cosign's tags,
// recursively and bounded (MaxReferrerDepth, MaxReferrers), copied by digest
// and listed in the entry's Referrers. WithSourceMirrors reads a registry's
// images from another host; pairs and entries keep naming the source. Every
// response body is bounded by Timeouts.BodyIdle (*StallError).
func Run(ctx context.Context, pairs []Pair, opts ...Option) ([]lock.Image, Stats, error) {
	start := time.Now()
	o, err := newOptions(opts)
	if err != nil {
		return nil, Stats{}, err
	}
	var targets []schema.Registry
	for _, p := range pairs {
		if r, err := name.ParseReference(p.Target, o.nameOpts()...); err == nil {
			targets = append(targets, schema.Registry{Host: r.Context().RegistryStr(), Insecure: o.insecure})
		}
	}
	ropts, pings := o.remote(ctx, slices.Compact(targets)...) // one target registry, in practice
	puller, err := remote.NewPuller(ropts...)
	if err != nil {
		return nil, Stats{}, err
	}
	pusher, err := remote.NewPusher(ropts...)
	if err != nil {
		return nil, Stats{}, err
	}
	r := &runner{
		o:       o,
		puller:  puller,
		pusher:  pusher,
		blobSem: make(chan struct{}, o.jobs),
		blobs:   map[string]*blobState{},
		pings:   pings,
		tags:    map[string]*tagList{},
		probes:  map[string]chan struct{}{},
	}

	var (
		mu      sync.Mutex
		entries []lock.Image
		errs    []error
		stats   Stats
	)
	one := func(p Pair) {
		shown := p
		if o.display != nil {
			shown = o.display(p)
		}
		if o.progress != nil {
			o.progress(Event{Pair: shown})
		}
		var (
			pushed atomic.Int64
			res    pairResult
			err    = ctx.Err()
		)
		if err == nil {
			stop := r.reportBytes(shown, &pushed)
			res, err = r.copyPair(ctx, p, &pushed)
			stop()
		}
		if err != nil {
			err = fmt.Errorf("mirror %s -> %s: %w", shown.Source, shown.Target, err)
		}
		mu.Lock()
		stats.BytesPushed += pushed.Load()
		switch {
		case err != nil:
			errs = append(errs, err)
		case res.present:
			stats.Present++
		default:
			stats.Copied++
		}
		if err == nil {
			stats.Referrers += len(res.referrers)
			entries = append(entries, lock.Image{Source: p.Source, Target: p.Target, Digest: res.digest, Referrers: res.referrers, Verified: res.verified})
		}
		mu.Unlock()
		if err != nil {
			// Debug: the error is returned; logging it too would print it twice.
			o.logger.Debug("mirror", "source", p.Source, "target", p.Target, "err", err)
		} else {
			o.logger.Debug("mirror", "source", p.Source, "target", p.Target, "digest", res.digest, "present", res.present, "referrers", len(res.referrers), "bytes", pushed.Load())
		}
		if o.progress != nil {
			o.progress(Event{Pair: shown, Done: true, Present: res.present, Bytes: pushed.Load(), Err: err})
		}
	}
	// Images in flight wait on each other's shared blobs and on manifest round
	// trips, so more of them than upload slots keep the uploads busy.
	var g errgroup.Group
	g.SetLimit(imagesPerJob * o.jobs)
	fed := 0
	for _, p := range interleave(pairs) {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { one(p); return nil })
		fed++
	}
	_ = g.Wait() // one collects every failure
	if fed < len(pairs) {
		errs = append(errs, fmt.Errorf("mirror: %d image(s) not started: %w", len(pairs)-fed, ctx.Err()))
	}

	sort.Slice(entries, func(i, j int) bool { return entries[i].Source < entries[j].Source })
	stats.Elapsed = time.Since(start)
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return entries, stats, errors.Join(errs...)
	}
	return entries, stats, nil
}

// ProgressInterval is how often Run reports the bytes an image in flight moved.
const ProgressInterval = 250 * time.Millisecond

// reportBytes sends byte events for p from its counter until stop is called.
func (r *runner) reportBytes(p Pair, pushed *atomic.Int64) (stop func()) {
	if r.o.progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(ProgressInterval)
		defer t.Stop()
		var sent int64
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if n := pushed.Load(); n > sent {
					r.o.progress(Event{Pair: p, Bytes: n - sent})
					sent = n
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// imagesPerJob is how many images are in flight per upload slot (WithJobs).
const imagesPerJob = 8

// interleave orders pairs round-robin across target repositories (first tag
// of each, then the second, …), so that the tags of one repository, which
// share most blobs, do not all wait on the same upload while others could run.
func interleave(pairs []Pair) []Pair {
	var repos []string
	byRepo := map[string][]Pair{}
	for _, p := range pairs {
		repo := parseRef(p.Target)
		key := repo.host + "/" + repo.path
		if _, ok := byRepo[key]; !ok {
			repos = append(repos, key)
		}
		byRepo[key] = append(byRepo[key], p)
	}
	out := make([]Pair, 0, len(pairs))
	for round := 0; len(out) < len(pairs); round++ {
		for _, r := range repos {
			if round < len(byRepo[r]) {
				out = append(out, byRepo[r][round])
			}
		}
	}
	return out
}

type runner struct {
	o       *options
	puller  *remote.Puller
	pusher  *remote.Pusher
	blobSem chan struct{}

	pings *pingCache

	mu sync.Mutex
	// blobs maps target registry/blob digest to the blob's upload in this run.
	blobs map[string]*blobState
	// tags maps a source repository to its tag list, read once per run.
	tags map[string]*tagList
	// probes maps a source registry to the first walk's referrers API ask.
	probes map[string]chan struct{}
}

// ErrDigestMismatch is returned (wrapped) when the target does not hold what was
// copied. It is never retried.
var ErrDigestMismatch = errors.New("digest mismatch")

// pairResult is what copyPair found and did.
type pairResult struct {
	digest    string
	present   bool // the target had the image (its referrers may still have been copied)
	referrers []lock.Referrer
	verified  *lock.Verified
}

// copyPair copies one pair and, unless turned off, its supply chain.
func (r *runner) copyPair(ctx context.Context, p Pair, pushed *atomic.Int64) (pairResult, error) {
	var res pairResult
	src, err := r.sourceRef(p.Source)
	if err != nil {
		return res, err
	}
	dst, err := name.ParseReference(p.Target, r.o.nameOpts()...)
	if err != nil {
		return res, err
	}
	// Resolve the source and ask the target at once: on a warm run these two
	// HEADs are all the work there is, but for the referrers.
	var (
		want   v1.Hash
		srcErr error
		have   *v1.Descriptor
		dstErr error
		wg     sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		have, dstErr = r.puller.Head(ctx, dst)
	}()
	if d, ok := src.(name.Digest); ok {
		want, srcErr = v1.NewHash(d.DigestStr())
	} else if desc, err := r.puller.Head(ctx, src); err != nil {
		srcErr = fmt.Errorf("resolve source%s: %w", r.via(src), err)
	} else {
		want = desc.Digest
	}
	wg.Wait()
	if srcErr != nil {
		return res, srcErr
	}
	res.digest = want.String()
	srcRepo, dstRepo := src.Context(), dst.Context()
	// What refers to the image is listed once: verification picks the
	// signatures from it, the walk copies it.
	var listed map[v1.Hash][]artifact
	if pol := r.policy(p); pol != nil {
		as, err := r.referrersOf(ctx, srcRepo, want)
		if err != nil {
			return res, fmt.Errorf("verify signature of %s%s: %w", want, r.via(src), err)
		}
		if res.verified, err = r.verify(ctx, pol, src, want, as); err != nil {
			return res, err
		}
		listed = map[v1.Hash][]artifact{want: as}
	}
	var desc *remote.Descriptor
	switch {
	case dstErr == nil && have.Digest == want:
		res.present = true
	case dstErr != nil && !isNotFound(dstErr):
		return res, fmt.Errorf("check target: %w", dstErr)
	default:
		if desc, err = r.puller.Get(ctx, srcRepo.Digest(want.String())); err != nil {
			return res, fmt.Errorf("get source manifest %s%s: %w", want, r.via(src), err)
		}
	}
	// The image and its supply chain are copied side by side: the walk's
	// round trips then hide behind the image's uploads.
	g, gctx := errgroup.WithContext(ctx)
	if desc != nil {
		g.Go(func() error { return r.copyImage(gctx, srcRepo, dst, desc, want, pushed) })
	}
	if r.o.referrers {
		g.Go(func() error {
			subjects, err := r.subjects(gctx, src, want, desc, have)
			if err != nil {
				return err
			}
			res.referrers, err = r.supplyChain(gctx, srcRepo, dstRepo, subjects, listed, pushed)
			return err
		})
	}
	err = g.Wait()
	return res, err
}

// copyImage copies the manifest desc (digest want) to dst, what it refers to
// first, tags it and checks the target's digest.
func (r *runner) copyImage(ctx context.Context, srcRepo name.Repository, dst name.Reference, desc *remote.Descriptor, want v1.Hash, pushed *atomic.Int64) error {
	if err := r.copyManifest(ctx, srcRepo, dst.Context(), desc.MediaType, desc.Manifest, want, pushed, false, 0); err != nil {
		return err
	}
	if err := r.pusher.Put(ctx, dst, rawManifest{desc.Manifest, desc.MediaType}); err != nil {
		return fmt.Errorf("put manifest: %w", err)
	}
	got, err := r.puller.Head(ctx, dst)
	if err != nil {
		return fmt.Errorf("check digest: %w", err)
	}
	if got.Digest != want {
		return fmt.Errorf("check digest: %w: source %s, target %s", ErrDigestMismatch, want, got.Digest)
	}
	return nil
}

// subjects are what a supply chain refers to: the image want and, for an
// index, each platform image. desc is the source manifest when it was read,
// have the target's descriptor when the target had the image.
func (r *runner) subjects(ctx context.Context, src name.Reference, want v1.Hash, desc *remote.Descriptor, have *v1.Descriptor) ([]v1.Hash, error) {
	subjects := []v1.Hash{want}
	var (
		mt  types.MediaType
		raw []byte
	)
	if desc != nil {
		mt, raw = desc.MediaType, desc.Manifest
	} else if have != nil && have.MediaType.IsIndex() {
		d, err := r.puller.Get(ctx, src.Context().Digest(want.String()))
		if err != nil {
			return nil, fmt.Errorf("get source manifest %s%s: %w", want, r.via(src), err)
		}
		mt, raw = d.MediaType, d.Manifest
	}
	if mt.IsIndex() {
		idx, err := parseIndex(src.Context().RegistryStr(), want, raw)
		if err != nil {
			return nil, err
		}
		for _, c := range idx.Manifests {
			subjects = append(subjects, c.Digest)
		}
	}
	return subjects, nil
}

// parseIndex reads an index a registry served, held to MaxIndexEntries.
func parseIndex(registry string, d v1.Hash, raw []byte) (*v1.IndexManifest, error) {
	idx, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse index %s: %w", d, err)
	}
	if len(idx.Manifests) > MaxIndexEntries {
		return nil, &BoundError{Registry: registry, What: fmt.Sprintf("index %s (%d manifests)", d, len(idx.Manifests)), Bound: fmt.Sprintf("MaxIndexEntries, %d", MaxIndexEntries)}
	}
	return idx, nil
}

// copyManifest copies what manifest raw (digest d) refers to into dst, and, when
// put, the manifest itself by digest. Children of an index are copied
// concurrently; each is skipped when dst already has it. depth counts the
// indexes above raw (MaxIndexDepth).
func (r *runner) copyManifest(ctx context.Context, srcRepo, dstRepo name.Repository, mt types.MediaType, raw []byte, d v1.Hash, pushed *atomic.Int64, put bool, depth int) error {
	switch {
	case mt.IsIndex():
		if depth == MaxIndexDepth {
			return &BoundError{Registry: srcRepo.RegistryStr(), What: fmt.Sprintf("index %s (nested more than %d deep)", d, MaxIndexDepth), Bound: fmt.Sprintf("MaxIndexDepth, %d", MaxIndexDepth)}
		}
		idx, err := parseIndex(srcRepo.RegistryStr(), d, raw)
		if err != nil {
			return err
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(r.o.jobs)
		for _, child := range idx.Manifests {
			g.Go(func() error {
				if _, err := r.puller.Head(gctx, dstRepo.Digest(child.Digest.String())); err == nil {
					return nil
				} else if !isNotFound(err) {
					return fmt.Errorf("check target %s: %w", child.Digest, err)
				}
				cd, err := r.puller.Get(gctx, srcRepo.Digest(child.Digest.String()))
				if err != nil {
					return fmt.Errorf("get source manifest %s: %w", child.Digest, err)
				}
				return r.copyManifest(gctx, srcRepo, dstRepo, cd.MediaType, cd.Manifest, child.Digest, pushed, true, depth+1)
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
	case mt.IsSchema1():
		return fmt.Errorf("manifest %s: schema 1 manifests are not supported", d)
	default:
		m, err := v1.ParseManifest(bytes.NewReader(raw))
		if err != nil {
			return fmt.Errorf("parse manifest %s: %w", d, err)
		}
		descs := append([]v1.Descriptor{m.Config}, m.Layers...)
		g, gctx := errgroup.WithContext(ctx)
		// Uploads take a slot of blobSem; this bounds the goroutines and the
		// mounts, which do not.
		g.SetLimit(r.o.jobs)
		seen := map[v1.Hash]bool{}
		for _, b := range descs {
			if seen[b.Digest] || len(b.URLs) > 0 || !b.MediaType.IsDistributable() {
				continue // foreign layers stay where their URLs say
			}
			seen[b.Digest] = true
			g.Go(func() error { return r.blob(gctx, srcRepo, dstRepo, b, pushed) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	if !put {
		return nil
	}
	if err := r.pusher.Put(ctx, dstRepo.Digest(d.String()), rawManifest{raw, mt}); err != nil {
		return fmt.Errorf("put manifest %s: %w", d, err)
	}
	return nil
}

// rawManifest is manifest bytes with their media type, as remote.Put wants them.
type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mt, nil }

func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}
