package pipeline

import "context"

// Publish verifies that every locked image is in the registry at its digest and
// that OutDir matches a fresh render, then publishes OutDir to spec.source.
//
// SKELETON: publish owner (issue 5) implements.
func Publish(ctx context.Context, cfg Config) error {
	return nil
}
