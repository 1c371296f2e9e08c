// Package publish delivers a rendered tree to where Flux reads it: a Git branch
// (go-git) or an OCI artifact in the layout `flux push artifact` makes.
package publish

import (
	"context"
	"log/slog"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Result says what a publish did.
type Result struct {
	// Changed is false when the target already held this tree (no commit, no push).
	Changed bool
	// Revision is the commit hash (git) or manifest digest (oci).
	Revision string
}

type options struct {
	logger   *slog.Logger
	pushURL  string
	author   string
	retries  int
	insecure bool
}

// Option configures Git, OCI and Verify.
type Option func(*options) error

// WithLogger logs to l (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) error { o.logger = l; return nil } }

// WithPushURL pushes to url instead of spec.source.url.
func WithPushURL(url string) Option { return func(o *options) error { o.pushURL = url; return nil } }

// Verify checks that every image is present in the registry at its digest (HEAD
// requests, in parallel) and returns an error naming every missing one.
//
// SKELETON: publish owner (issue 5) implements.
func Verify(ctx context.Context, reg schema.Registry, images []lock.Image, opts ...Option) error {
	return nil
}

// Git commits the rendered tree in outDir at spec.source.path, plus every layer
// folder of the source root at its own path, to spec.source's branch and pushes
// without force, retrying on a moved head a bounded number of times.
//
// SKELETON: publish owner implements.
func Git(ctx context.Context, f *schema.Fleet, l *lock.Lock, outDir string, opts ...Option) (Result, error) {
	return Result{}, nil
}

// OCI pushes the same tree as Git as a Flux artifact tagged spec.source.ref.
//
// SKELETON: publish owner implements.
func OCI(ctx context.Context, f *schema.Fleet, l *lock.Lock, outDir string, opts ...Option) (Result, error) {
	return Result{}, nil
}
