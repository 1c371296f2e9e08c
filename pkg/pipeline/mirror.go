package pipeline

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Environment variables with the target registry's credentials (CI). The
// Docker config and its credential helpers serve everything else.
const (
	EnvRegistryUsername = "FLEETGEN_REGISTRY_USERNAME"
	EnvRegistryPassword = "FLEETGEN_REGISTRY_PASSWORD"
)

// discoverImages loads fleet.yaml and finds its images.
func discoverImages(cfg Config) (*schema.Fleet, *images.Result, error) {
	f, err := load(cfg)
	if err != nil {
		return nil, nil, err
	}
	res, err := images.Discover(f)
	if err != nil {
		return nil, nil, err
	}
	return f, res, nil
}

// Images writes the fleet's images to w, one per line, sorted; with why, each
// followed by a tab and who asked for it ("spec.images[0], layer apps (apps)").
func Images(ctx context.Context, cfg Config, w io.Writer, why bool) error {
	_, res, err := discoverImages(cfg)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, u := range res.Images {
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
func Mirror(ctx context.Context, cfg Config, w io.Writer, dryRun bool) error {
	f, res, err := discoverImages(cfg)
	if err != nil {
		return err
	}
	pairs, err := mirror.Plan(f.Spec.Registry, res.Refs())
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
	lockPath := filepath.Join(f.Dir, lock.FileName)
	l, _, err := loadLock(f)
	if err != nil {
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
	l.SetImages(entries)
	if err := lock.Write(lockPath, l); err != nil {
		return err
	}
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
