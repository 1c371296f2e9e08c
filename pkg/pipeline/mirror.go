package pipeline

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
)

// Environment variables with the target registry's credentials (CI). The
// Docker config and its credential helpers serve everything else.
const (
	EnvRegistryUsername = "FLEETGEN_REGISTRY_USERNAME"
	EnvRegistryPassword = "FLEETGEN_REGISTRY_PASSWORD"
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
		b.WriteString(u.Ref)
		if why {
			b.WriteString("\t")
			b.WriteString(strings.Join(u.Why, ", "))
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
// from FLEETGEN_REGISTRY_USERNAME and FLEETGEN_REGISTRY_PASSWORD when set, and
// from the Docker config and credential helpers otherwise.
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
			fmt.Fprintf(&b, "%s -> %s\n", p.Source, p.Target)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}

	log := cfg.logger()
	opts := []mirror.Option{
		mirror.WithLogger(log),
		mirror.WithJobs(cfg.Jobs),
		mirror.WithInsecure(f.Spec.Registry.Insecure),
	}
	if user, ok := cfg.lookupEnv(EnvRegistryUsername); ok && user != "" {
		pass, _ := cfg.lookupEnv(EnvRegistryPassword)
		opts = append(opts, mirror.WithTargetCredentials(user, pass))
	}
	if cfg.Progress != nil {
		opts = append(opts, mirror.WithProgress(mirrorProgress(cfg.Progress, len(pairs))))
	}
	entries, stats, err := mirror.Run(ctx, pairs, opts...)
	if err != nil {
		return err
	}
	l := ld.Lock.Clone()
	l.SetImages(entries)
	if err := lock.Write(ld.LockPath, l); err != nil {
		return err
	}
	ld.Lock, ld.LockBytes = l, l.Marshal()
	log.Info(fmt.Sprintf("mirrored %d images to %s: %d copied, %d already present, %s pushed in %s",
		len(pairs), f.Spec.Registry.Host, stats.Copied, stats.Present, mirrorBytes(stats.BytesPushed), stats.Elapsed.Round(10*time.Millisecond)),
		"copied", stats.Copied, "present", stats.Present, "bytes", stats.BytesPushed, "elapsed", stats.Elapsed)
	return nil
}

// mirrorProgress writes one line per finished image: "[3/126] copied src -> dst (12.0 MiB)".
func mirrorProgress(w io.Writer, total int) func(mirror.Event) {
	var (
		mu   sync.Mutex
		done int
	)
	return func(e mirror.Event) {
		if !e.Done {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done++
		switch {
		case e.Err != nil:
			fmt.Fprintf(w, "[%d/%d] failed %s -> %s\n", done, total, e.Pair.Source, e.Pair.Target)
		case e.Present:
			fmt.Fprintf(w, "[%d/%d] present %s\n", done, total, e.Pair.Target)
		default:
			fmt.Fprintf(w, "[%d/%d] copied %s -> %s (%s)\n", done, total, e.Pair.Source, e.Pair.Target, mirrorBytes(e.Bytes))
		}
	}
}

func mirrorBytes(n int64) string {
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
