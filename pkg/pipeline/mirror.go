package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// Images writes the fleet's images to w, one per line, sorted; with why, each
// followed by a tab and who asked for it ("spec.images[0], layer apps (apps)").
func Images(ctx context.Context, cfg Config, w io.Writer, why bool) error {
	ld, err := Load(ctx, cfg)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, u := range ld.Images.Images {
		b.WriteString(inert.Text(u.Ref))
		if why {
			b.WriteString("\t")
			// Layer paths come from fleet.yaml: written inert.
			b.WriteString(inert.Text(strings.Join(u.Why, ", ")))
		}
		b.WriteString("\n")
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// Mirror plans and copies every image, then writes fleet.lock.yaml atomically,
// only if everything succeeded. dryRun prints the plan to w and copies nothing.
//
// The lock's image entries are replaced by this run's (one per image the fleet
// needs now); its client IDs are kept. The target registry's credentials come
// from FLEETGEN_REGISTRY_USERNAME and FLEETGEN_REGISTRY_PASSWORD when both are
// set, and from the Docker config and credential helpers otherwise
// (mirror.Keychain).
//
// It runs every input check but the lock's (Validate), the lock being what it
// brings up to date.
func Mirror(ctx context.Context, cfg Config, w io.Writer, dryRun bool) error {
	ld, err := Load(ctx, cfg)
	if err != nil {
		return err
	}
	if err := ld.check(inputRules); err != nil {
		return err
	}
	return mirrorLoaded(ctx, cfg, ld, w, dryRun)
}

// registryCredentials are spec.registry's from the environment
// (mirror.Keychain scopes them).
func registryCredentials(cfg Config) mirror.Option {
	user, _ := cfg.lookupEnv(mirror.EnvRegistryUsername)
	pass, _ := cfg.lookupEnv(mirror.EnvRegistryPassword)
	return mirror.WithTargetCredentials(user, pass)
}

// mirrorLoaded mirrors ld's images and, unless dryRun, writes the lock and
// makes it ld's.
func mirrorLoaded(ctx context.Context, cfg Config, ld *Loaded, w io.Writer, dryRun bool) error {
	f := ld.Fleet
	pairs, err := mirror.Plan(f.Spec.Registry, ld.Images.Refs())
	if err != nil {
		return err
	}
	if dryRun {
		var b strings.Builder
		for _, p := range pairs {
			fmt.Fprintf(&b, "%s -> %s\n", inert.Text(p.Source), inert.Text(p.Target))
		}
		_, err := io.WriteString(w, b.String())
		return err
	}

	log := cfg.logger()
	opts := []mirror.Option{
		mirror.WithLogger(log),
		mirror.WithJobs(cfg.Jobs),
		mirror.WithInsecure(f.Spec.Registry.Insecure),
		registryCredentials(cfg),
		mirror.WithReferrers(!cfg.NoReferrers),
	}
	if ps, err := ld.Policies(); err != nil {
		return err
	} else if len(ps) > 0 {
		if cfg.NoReferrers {
			return problem.Invalid(errors.New("mirror: --no-referrers would leave behind the signatures spec.verify needs at the mirror: drop the flag, or spec.verify"))
		}
		opts = append(opts, mirror.WithVerify(ps))
	}
	if len(f.Spec.SourceMirrors) > 0 {
		ms := make([]mirror.SourceMirror, len(f.Spec.SourceMirrors))
		for i, m := range f.Spec.SourceMirrors {
			ms[i] = mirror.SourceMirror{Host: m.Host, Mirror: m.Mirror, Insecure: m.Insecure}
		}
		opts = append(opts, mirror.WithSourceMirrors(ms))
	}
	if cfg.OnMirror != nil {
		cfg.OnMirror(MirrorUpdate{Start: true, Total: len(pairs), Registry: f.Spec.Registry.Host})
		opts = append(opts, mirror.WithProgress(func(e mirror.Event) { cfg.OnMirror(MirrorUpdate{Event: e}) }))
	}
	entries, stats, err := mirror.Run(ctx, pairs, opts...)
	if cfg.OnMirror != nil {
		cfg.OnMirror(MirrorUpdate{Finish: true, Total: len(pairs), Registry: f.Spec.Registry.Host, Stats: stats, Err: err})
	}
	if err != nil {
		return mirrorFailures(err, len(pairs))
	}
	l := ld.Lock.Clone()
	l.SetImages(entries)
	if cfg.Locked {
		if err := lockedImages(ld.Lock, l); err != nil {
			return err
		}
	}
	if err := lock.Write(ld.LockPath, l); err != nil {
		return err
	}
	ld.Lock, ld.LockBytes = l, l.Marshal()
	// With a display (OnMirror) the summary is its last line; the log has
	// it at Debug then, so that it is not printed twice.
	level := slog.LevelInfo
	if cfg.OnMirror != nil {
		level = slog.LevelDebug
	}
	log.Log(ctx, level, MirrorSummary(len(pairs), f.Spec.Registry.Host, stats),
		"copied", stats.Copied, "present", stats.Present, "referrers", stats.Referrers, "bytes", stats.BytesPushed, "elapsed", stats.Elapsed)
	return nil
}

// MirrorUpdate is one report of a mirror in progress (Config.OnMirror):
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
