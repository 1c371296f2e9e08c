package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// The air gap (SPEC §2): `mirror --to oci-layout:PATH` on the connected
// side, `mirror --from oci-layout:PATH` on the other; the lock, committed
// and carried across with the fleet, says what goes. Neither writes it.

// layoutScheme prefixes --to's and --from's value.
const layoutScheme = "oci-layout:"

// layoutPath is the PATH of --to or --from's oci-layout:PATH.
func layoutPath(flag, v string) (string, error) {
	p, ok := strings.CutPrefix(v, layoutScheme)
	if !ok || p == "" {
		return "", problem.Invalid(fmt.Errorf("mirror --%s %q: want oci-layout:PATH (a folder, or a file ending in .tar)", flag, v))
	}
	return p, nil
}

// airGap runs mirror --to or --from for ld: every image the fleet needs,
// as the lock names it. The lock must be whole and verified under the
// policies as they are (validate's rules): what crosses is what was
// reviewed.
func airGap(ctx context.Context, cfg Config, ld *Loaded, o MirrorOptions) (*MirrorResult, error) {
	switch {
	case o.To != "" && o.From != "":
		return nil, problem.Invalid(errors.New("mirror: --to and --from exclude each other: write a layout on one side of the gap, read it on the other"))
	case o.DryRun:
		return nil, problem.Invalid(errors.New("mirror: --dry-run does not apply to --to or --from"))
	case o.NoReferrers:
		return nil, problem.Invalid(errors.New("mirror: --no-referrers does not apply to --to or --from: the lock says which referrers go"))
	}
	if err := ld.check(verifyRules); err != nil {
		return nil, err
	}
	ps, err := ld.Policies()
	if err != nil {
		return nil, err
	}
	f := ld.Fleet
	var images []lock.Image
	for _, u := range ld.Images.Images {
		if img, ok := ld.Lock.Image(u.Ref); ok {
			images = append(images, img)
		}
	}
	log := cfg.logger()
	opts := []mirror.Option{mirror.WithLogger(log), mirror.WithJobs(o.Jobs), registryCredentials(cfg)}
	if len(ps) > 0 {
		opts = append(opts, mirror.WithVerify(ps))
	}
	flag, value, where := "to", o.To, o.To
	if o.From != "" {
		flag, value, where = "from", o.From, f.Spec.Registry.Host
	}
	path, err := layoutPath(flag, value)
	if err != nil {
		return nil, err
	}
	if o.OnProgress != nil {
		o.OnProgress(MirrorUpdate{Start: true, Total: len(images), Registry: where})
		opts = append(opts, mirror.WithProgress(func(e mirror.Event) { o.OnProgress(MirrorUpdate{Event: e}) }))
	}
	var stats mirror.Stats
	if o.To != "" {
		stats, err = mirror.ToLayout(ctx, path, images, append(opts, sourceMirrors(f))...)
	} else {
		_, stats, err = mirror.FromLayout(ctx, path, f.Spec.Registry, images, append(opts, mirror.WithInsecure(f.Spec.Registry.Insecure))...)
	}
	if o.OnProgress != nil {
		o.OnProgress(MirrorUpdate{Finish: true, Total: len(images), Registry: where, Stats: stats, Err: err})
	}
	if err != nil {
		return nil, mirrorFailures(err, len(images))
	}
	level := slog.LevelInfo
	if o.OnProgress != nil {
		level = slog.LevelDebug
	}
	log.Log(ctx, level, MirrorSummary(len(images), where, stats), "copied", stats.Copied, "present", stats.Present, "referrers", stats.Referrers, "bytes", stats.BytesPushed, "elapsed", stats.Elapsed)
	return &MirrorResult{Stats: stats}, nil
}
