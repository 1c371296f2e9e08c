package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Image is one image the fleet needs (`fleetgen images`; -o json prints
// these keys). Its strings come from fleet.yaml, the layers and the lock.
type Image struct {
	// Ref is the image, normalised as fleet.lock.yaml keys it.
	Ref string `json:"image"`
	// NeededBy says who asks for it: "spec.images[0]", "layer apps (apps)".
	NeededBy []string `json:"neededBy"`
	// Locked is the lock's mirror reference pinned by digest; nil when the
	// lock lacks the image.
	Locked *string `json:"locked"`
	// Policy is the spec.verify policy that covers the image; nil when none
	// does (or without ImagesOptions.Policies).
	Policy *string `json:"policy"`
}

// ImagesOptions are the options of Images.
type ImagesOptions struct {
	// Policies fills Image.Policy: spec.verify is compiled (its trusted
	// roots read), and an error there fails Images.
	Policies bool
}

// Images returns every image the fleet needs, sorted by Ref.
func Images(ctx context.Context, cfg Config, o ImagesOptions) ([]Image, error) {
	ld, err := Load(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var ps verify.Policies
	if o.Policies {
		if ps, err = ld.Policies(); err != nil {
			return nil, err
		}
	}
	out := make([]Image, 0, len(ld.Images.Images))
	for _, u := range ld.Images.Images {
		img := Image{Ref: u.Ref, NeededBy: append([]string{}, u.Why...)}
		if l, ok := ld.Lock.Image(u.Ref); ok {
			pinned := l.Pinned()
			img.Locked = &pinned
		}
		if repo, _ := lock.SplitRef(u.Ref); ps.For(repo) != nil {
			img.Policy = &ps.For(repo).Name
		}
		out = append(out, img)
	}
	return out, nil
}

// MirrorOptions are the options of Mirror.
type MirrorOptions struct {
	// DryRun plans and copies nothing: the result holds the plan only.
	DryRun bool
	// Jobs bounds mirror concurrency; 0 means the default.
	Jobs int
	// NoReferrers mirrors images without their signatures, attestations and
	// SBOMs, for registries that refuse artifact manifests.
	NoReferrers bool
	// OnProgress, when non-nil, gets the mirror's progress (cmd/fleetgen
	// draws it): one MirrorUpdate at the start, one per mirror.Event, one at
	// the end.
	OnProgress func(MirrorUpdate)
	// To writes the locked images into an OCI image layout,
	// "oci-layout:PATH" (a folder, or a tar when PATH ends in .tar), instead
	// of copying them to spec.registry; From pushes them from one into
	// spec.registry. Neither writes the lock (airgap.go).
	To, From string
}

// MirrorResult is what a mirror did, or with DryRun would do.
type MirrorResult struct {
	// Plan is every image's source -> target pair, sorted by source.
	Plan []mirror.Pair
	// Stats counts what the copy did; zero with DryRun.
	Stats mirror.Stats
	// Verdicts are, with DryRun, the signature checks at the source of the
	// images spec.verify covers (as `fleetgen verify`): a refused one makes
	// the dry run fail with a *VerifyError, as the mirror would.
	Verdicts []Verdict
}

// Mirror plans and copies every image, then writes fleet.lock.yaml atomically,
// only if everything succeeded. o.DryRun copies nothing.
//
// The lock's image entries are replaced by this run's (one per image the fleet
// needs now); its client IDs are kept. The target registry's credentials come
// from FLEETGEN_REGISTRY_USERNAME and FLEETGEN_REGISTRY_PASSWORD when both are
// set, and from the Docker config and credential helpers otherwise
// (mirror.Keychain).
//
// It runs every input check but the lock's (Validate), the lock being what it
// brings up to date.
func Mirror(ctx context.Context, cfg Config, o MirrorOptions) (*MirrorResult, error) {
	// The air gap carries what the lock names, charts rendered from the
	// chart cache: it brings nothing up to date.
	ld, err := loadPending(ctx, cfg, o.To == "" && o.From == "")
	if err != nil {
		return nil, err
	}
	if err := ld.check(inputRules); err != nil {
		return nil, err
	}
	return mirrorLoaded(ctx, cfg, ld, o)
}

// registryCredentials are spec.registry's from the environment
// (mirror.Keychain scopes them).
func registryCredentials(cfg Config) mirror.Option {
	user, _ := cfg.lookupEnv(mirror.EnvRegistryUsername)
	pass, _ := cfg.lookupEnv(mirror.EnvRegistryPassword)
	return mirror.WithTargetCredentials(user, pass)
}

// sourceMirrors is spec.sourceMirrors as mirror takes it.
func sourceMirrors(f *schema.Fleet) mirror.Option {
	ms := make([]mirror.SourceMirror, len(f.Spec.SourceMirrors))
	for i, m := range f.Spec.SourceMirrors {
		ms[i] = mirror.SourceMirror{Host: m.Host, Mirror: m.Mirror, Insecure: m.Insecure}
	}
	return mirror.WithSourceMirrors(ms)
}

// mirrorLoaded mirrors ld's charts and images and, unless o.DryRun, writes
// the lock and makes it ld's.
func mirrorLoaded(ctx context.Context, cfg Config, ld *Loaded, o MirrorOptions) (*MirrorResult, error) {
	if o.To != "" || o.From != "" {
		return airGap(ctx, cfg, ld, o)
	}
	f := ld.Fleet
	log := cfg.logger()
	runOpts := func() ([]mirror.Option, error) {
		opts := []mirror.Option{
			mirror.WithLogger(log),
			mirror.WithJobs(o.Jobs),
			mirror.WithInsecure(f.Spec.Registry.Insecure),
			registryCredentials(cfg),
			mirror.WithReferrers(!o.NoReferrers),
		}
		if ps, err := ld.Policies(); err != nil {
			return nil, err
		} else if len(ps) > 0 {
			if o.NoReferrers {
				return nil, problem.Invalid(errors.New("mirror: --no-referrers would leave behind the signatures spec.verify needs at the mirror: drop the flag, or spec.verify"))
			}
			opts = append(opts, mirror.WithVerify(ps))
		}
		return append(opts, sourceMirrors(f)), nil
	}
	// The charts first: their images are known once they render.
	old := ld.Lock
	chartLock, err := ld.mirrorCharts(ctx, cfg, o, runOpts)
	if err != nil {
		ld.Lock = old
		return nil, err
	}
	pairs, err := mirror.Plan(f.Spec.Registry, ld.Images.Refs())
	if err != nil {
		return nil, err
	}
	if o.DryRun {
		ld.Lock = old
		res := &MirrorResult{Plan: pairs}
		ps, err := ld.Policies()
		if err != nil || len(ps) == 0 {
			return res, err
		}
		res.Verdicts, err = mirror.VerifySource(ctx, pairs, ps, mirror.WithLogger(log), mirror.WithJobs(o.Jobs), registryCredentials(cfg), sourceMirrors(f))
		if err != nil {
			return nil, err
		}
		if n := mirror.Refused(res.Verdicts); n > 0 {
			return res, &VerifyError{Refused: n, Total: len(res.Verdicts), At: AtSource}
		}
		return res, nil
	}

	opts, err := runOpts()
	if err != nil {
		return nil, err
	}
	if o.OnProgress != nil {
		o.OnProgress(MirrorUpdate{Start: true, Total: len(pairs), Registry: f.Spec.Registry.Host})
		opts = append(opts, mirror.WithProgress(func(e mirror.Event) { o.OnProgress(MirrorUpdate{Event: e}) }))
	}
	entries, stats, err := mirror.Run(ctx, pairs, opts...)
	if o.OnProgress != nil {
		o.OnProgress(MirrorUpdate{Finish: true, Total: len(pairs), Registry: f.Spec.Registry.Host, Stats: stats, Err: err})
	}
	if err != nil {
		return nil, mirrorFailures(err, len(pairs))
	}
	for _, c := range chartLock.Images {
		if e, ok := (&lock.Lock{Images: entries}).Image(c.Source); ok && e.Digest != c.Digest {
			return nil, fmt.Errorf("chart %s moved from %s to %s while it was mirrored: run `fleetgen mirror` again", c.Source, c.Digest, e.Digest)
		}
	}
	l := old.Clone()
	l.SetImages(entries)
	l.SetCharts(chartLock.Charts)
	if cfg.Locked {
		if err := lockedImages(old, l); err != nil {
			return nil, err
		}
	}
	if err := lock.Write(ld.LockPath, l); err != nil {
		return nil, err
	}
	ld.Lock, ld.LockBytes = l, l.Marshal()
	ld.charts.lock, ld.patchesDone = l, false
	// With a display (OnProgress) the summary is its last line; the log has
	// it at Debug then, so that it is not printed twice.
	level := slog.LevelInfo
	if o.OnProgress != nil {
		level = slog.LevelDebug
	}
	log.Log(ctx, level, MirrorSummary(len(pairs), f.Spec.Registry.Host, stats),
		"copied", stats.Copied, "present", stats.Present, "referrers", stats.Referrers, "bytes", stats.BytesPushed, "elapsed", stats.Elapsed)
	return &MirrorResult{Plan: pairs, Stats: stats}, nil
}

// MirrorUpdate is one report of a mirror in progress (MirrorOptions.OnProgress):
// Start with Total images to the registry Registry, then one per image
// event (Event), then Finish with the run's Stats and its error, if any.
type MirrorUpdate struct {
	Start, Finish bool
	Total         int
	Registry      string
	Event         mirror.Event
	Stats         mirror.Stats
	Err           error
}

// mirrorFailures turns mirror.Run's joined errors into one line per failing
// image that names the registry and the reason once. go-containerregistry
// tries a loopback or insecure registry over https:// and then http:// and
// reports both attempts; the first is the same failure.
func mirrorFailures(err error, total int) error {
	multi, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	errs := multi.Unwrap()
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = failureLine(e)
	}
	return &mirrorError{msg: fmt.Sprintf("%d of %d images not mirrored:\n  %s", len(errs), total, strings.Join(lines, "\n  ")), errs: errs}
}

// mirrorError keeps the failures for errors.Is and errors.As.
type mirrorError struct {
	msg  string
	errs []error
}

func (e *mirrorError) Error() string   { return e.msg }
func (e *mirrorError) Unwrap() []error { return e.errs }

// failureLine shortens a network failure to "mirror SRC -> DST: registry
// HOST: REASON"; other errors keep their text.
func failureLine(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return oneLine(err.Error())
	}
	host := ue.URL
	if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
		host = u.Host
	}
	reason := ue.Err.Error()
	var oe *net.OpError
	if errors.As(ue.Err, &oe) && oe.Err != nil {
		reason = oe.Err.Error()
	}
	// The text before go-containerregistry's first attempt: "mirror SRC -> DST".
	msg := err.Error()
	prefix := msg
	if i := strings.Index(msg, ue.Op+` "`); i > 0 {
		prefix = strings.TrimSuffix(msg[:i], ": ")
	}
	return fmt.Sprintf("%s: registry %s: %s", prefix, host, oneLine(reason))
}

func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

// MirrorSummary is the one line that ends a mirror: "mirrored 126 images to
// HOST: 3 copied, 123 already present, 40 referrers, 1.2 GiB pushed in 9.1s".
func MirrorSummary(total int, registry string, s mirror.Stats) string {
	return fmt.Sprintf("mirrored %d images to %s: %d copied, %d already present, %d referrers, %s pushed in %s",
		total, registry, s.Copied, s.Present, s.Referrers, MirrorBytes(s.BytesPushed), s.Elapsed.Round(10*time.Millisecond))
}

// MirrorBytes is n in B, KiB, MiB or GiB with one decimal.
func MirrorBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// mirrorCharts brings the charts of ld's HelmReleases into the chart cache
// and the mirror (mirrorcharts.go), then builds ld's model again with them
// rendered, so that ld.Images holds their images. It returns the lock it
// rendered with: ld's, its charts and OCI charts as this run found them;
// ld.Lock is that lock until the caller sets the one it writes. Nothing is
// done when no HelmRelease names a chart.
func (ld *Loaded) mirrorCharts(ctx context.Context, cfg Config, o MirrorOptions, runOpts func() ([]mirror.Option, error)) (*lock.Lock, error) {
	if len(ld.charts.sources) == 0 {
		return &lock.Lock{}, nil
	}
	httpCharts, err := ld.httpCharts(ctx, cfg, o.DryRun)
	if err != nil {
		return nil, err
	}
	var entries []lock.Image
	if refs := ld.charts.ociCharts(); len(refs) > 0 {
		if o.DryRun {
			entries, err = resolveCharts(ctx, cfg, ld, refs)
		} else {
			var pairs []mirror.Pair
			var opts []mirror.Option
			if pairs, err = mirror.Plan(ld.Fleet.Spec.Registry, refs); err == nil {
				opts, err = runOpts()
			}
			if err == nil {
				entries, _, err = mirror.Run(ctx, pairs, opts...)
				if err != nil {
					err = mirrorFailures(err, len(pairs))
				}
			}
		}
		if err != nil {
			return nil, err
		}
		if err := ld.cacheOCICharts(ctx, cfg, entries, o.DryRun); err != nil {
			return nil, err
		}
	}
	tmp := ld.Lock.Clone()
	tmp.SetCharts(httpCharts)
	imgs := append([]lock.Image(nil), entries...)
	for _, img := range tmp.Images {
		if _, ok := (&lock.Lock{Images: entries}).Image(img.Source); !ok {
			imgs = append(imgs, img)
		}
	}
	tmp.SetImages(imgs)
	ld.Lock = tmp
	if err := ld.remodel(ctx, cfg); err != nil {
		return nil, err
	}
	if err := ld.check(inputRules); err != nil {
		return nil, err
	}
	return &lock.Lock{Images: entries, Charts: httpCharts}, nil
}

// resolveCharts returns lock entries of the OCI charts refs at their source
// (a dry run's: nothing is copied): each tag resolved to its digest.
func resolveCharts(ctx context.Context, cfg Config, ld *Loaded, refs []string) ([]lock.Image, error) {
	ro, err := mirror.Remote(ctx, ld.Fleet.Spec.Registry, registryCredentials(cfg))
	if err != nil {
		return nil, err
	}
	pairs, err := mirror.Plan(ld.Fleet.Spec.Registry, refs)
	if err != nil {
		return nil, err
	}
	var out []lock.Image
	for _, p := range pairs {
		ref, err := name.ParseReference(p.Source)
		if err != nil {
			return nil, problem.Invalid(fmt.Errorf("chart %s: %w", p.Source, err))
		}
		d, err := remote.Head(ref, ro...)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", p.Source, err)
		}
		out = append(out, lock.Image{Source: p.Source, Target: p.Target, Digest: d.Digest.String()})
	}
	return out, nil
}
