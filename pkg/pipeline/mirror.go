package pipeline

import (
	"context"
	"io"
)

// Images writes the fleet's images to w, one per line, sorted; with why, each
// followed by who asked for it.
//
// SKELETON: mirror owner (issue 3) implements.
func Images(ctx context.Context, cfg Config, w io.Writer, why bool) error {
	return nil
}

// Mirror plans and copies every image, then writes fleet.lock.yaml atomically,
// only if everything succeeded. dryRun prints the plan to w and copies nothing.
//
// SKELETON: mirror owner implements.
func Mirror(ctx context.Context, cfg Config, w io.Writer, dryRun bool) error {
	return nil
}
