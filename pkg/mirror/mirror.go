// Package mirror copies images into the private registry, by digest, on
// go-containerregistry. Plan is pure; Run does the copying.
package mirror

import (
	"context"
	"log/slog"
	"time"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Pair is one copy: a normalised source reference and its mirror target.
type Pair struct {
	Source string // e.g. ghcr.io/kubereboot/kured:1.12.0
	Target string // e.g. contoso.azurecr.io/kubereboot/kured:1.12.0
}

// Plan maps refs (normalised or not) to targets in reg per its layout and
// prefix, deduplicated and sorted by Source. Two sources that land on one target
// repository are an input error.
//
// SKELETON: mirror owner implements.
func Plan(reg schema.Registry, refs []string) ([]Pair, error) {
	return nil, nil
}

// Stats summarises a Run.
type Stats struct {
	Copied, Present int
	BytesPushed     int64
	Elapsed         time.Duration
}

// Event is one progress report.
type Event struct {
	Pair  Pair
	Done  bool
	Bytes int64
	Err   error
}

type options struct {
	logger   *slog.Logger
	progress func(Event)
	jobs     int
	insecure bool
}

// Option configures Run.
type Option func(*options) error

// WithLogger logs to l (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) error { o.logger = l; return nil } }

// WithProgress calls fn for each progress event, from any goroutine.
func WithProgress(fn func(Event)) Option { return func(o *options) error { o.progress = fn; return nil } }

// WithJobs bounds concurrency (default 8).
func WithJobs(n int) Option { return func(o *options) error { o.jobs = n; return nil } }

// WithInsecure talks plain HTTP to the target (and source) registries.
func WithInsecure(b bool) Option { return func(o *options) error { o.insecure = b; return nil } }

// Run copies every pair (all platforms of an index, by digest, skipping what the
// target has), verifies digests, and returns one lock entry per pair, sorted by
// Source. All failures are collected and returned sorted; on any failure the
// returned entries must not be written to the lock.
//
// SKELETON: mirror owner implements.
func Run(ctx context.Context, pairs []Pair, opts ...Option) ([]lock.Image, Stats, error) {
	return nil, Stats{}, nil
}
