package pipeline

import "context"

// Validate loads and validates fleet.yaml and the files it refers to; it writes
// nothing.
//
// SKELETON: CLI owner implements.
func Validate(ctx context.Context, cfg Config) error {
	return nil
}

// Render loads fleet.yaml and its lock, adds client IDs the lock lacks (the only
// lock change a render makes), finds each layer's images, renders, seals
// secrets, scans the result and writes it to OutDir. Nothing is written when any
// step fails.
//
// SKELETON: CLI owner implements.
func Render(ctx context.Context, cfg Config) error {
	return nil
}

// Check renders in memory and returns the diff from OutDir ("" when none).
// It writes nothing, not even the lock.
//
// SKELETON: CLI owner implements.
func Check(ctx context.Context, cfg Config) (string, error) {
	return "", nil
}

// Build runs validate, mirror, render and, with publish, publish, stopping at
// the first failure.
//
// SKELETON: CLI owner implements.
func Build(ctx context.Context, cfg Config, publish bool) error {
	return nil
}
