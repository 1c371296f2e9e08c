package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
	"fleetgen.dev/fleetgen/test/testenv"
)

// The air gap's rows.
const (
	airGapDirect = "direct mirror (best of 3)"
	airGapTo     = "mirror --to (best of 3)"
	airGapFrom   = "mirror --from (best of 3)"
)

// airGap times, three times interleaved, a cold direct mirror of refs into a
// fresh registry, mirror --to a fresh layout folder of its lock, and mirror
// --from that layout into a fresh registry (all with spec.verify on, the key
// signing every reference), and returns the best of each.
func airGap(ctx context.Context, tmp string, refs []string, key *testenv.Key, jobs int, logf func(string, ...any)) ([]result, error) {
	f := &schema.Fleet{Spec: schema.Spec{Verify: []schema.VerifyPolicy{{Cosign: &schema.CosignVerify{Keys: []schema.FileRef{{File: "cosign.pub", Data: key.PublicPEM}}}}}}}
	ps, err := verify.Compile(f, nil)
	if err != nil {
		return nil, err
	}
	best := map[string]time.Duration{}
	note := func(name string, d time.Duration) {
		if b, ok := best[name]; !ok || d < b {
			best[name] = d
		}
		logf("%s: %.2f s", name, d.Seconds())
	}
	for round := range 3 {
		// The direct mirror; its entries are the lock the layout carries.
		p, stop, err := registry(tmp, "direct")
		if err != nil {
			return nil, err
		}
		reg := schema.Registry{Host: p.Host}
		pairs, err := mirror.Plan(reg, refs)
		if err != nil {
			stop()
			return nil, err
		}
		entries, stats, err := mirror.Run(ctx, pairs, mirror.WithJobs(jobs), mirror.WithVerify(ps))
		stop()
		if err != nil {
			return nil, fmt.Errorf("direct mirror: %w", err)
		}
		note(airGapDirect, stats.Elapsed)

		layout := filepath.Join(tmp, "layout-"+strconv.Itoa(round))
		start := time.Now()
		if _, err := mirror.ToLayout(ctx, layout, entries, mirror.WithJobs(jobs), mirror.WithVerify(ps)); err != nil {
			return nil, fmt.Errorf("mirror --to: %w", err)
		}
		note(airGapTo, time.Since(start))

		p, stop, err = registry(tmp, "from")
		if err != nil {
			return nil, err
		}
		reg = schema.Registry{Host: p.Host}
		planned, err := mirror.Plan(reg, refs)
		if err != nil {
			stop()
			return nil, err
		}
		target := map[string]string{}
		for _, pr := range planned {
			target[pr.Source] = pr.Target
		}
		for i := range entries {
			entries[i].Target = target[entries[i].Source]
		}
		start = time.Now()
		_, _, err = mirror.FromLayout(ctx, layout, reg, entries, mirror.WithJobs(jobs), mirror.WithVerify(ps))
		elapsed := time.Since(start)
		stop()
		os.RemoveAll(layout)
		if err != nil {
			return nil, fmt.Errorf("mirror --from: %w", err)
		}
		note(airGapFrom, elapsed)
	}
	return []result{{airGapDirect, best[airGapDirect], 0}, {airGapTo, best[airGapTo], 0}, {airGapFrom, best[airGapFrom], 0}}, nil
}
