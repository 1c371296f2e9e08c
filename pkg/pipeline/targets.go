package pipeline

import (
	"context"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// Reach is what Targets returns (schema.Reach): what reaches each cluster.
type Reach = schema.Reach

// Targets loads fleet.yaml and returns what reaches each of its clusters:
// the layers selected for it and the deliveries whose targets select it
// (Fleet's matching, package fleetmatch), and every delivery target that
// reaches no cluster (`fleetgen targets`, SPEC §2). It reads neither the
// lock nor the layer folders, and writes nothing.
func Targets(ctx context.Context, cfg Config) (*Reach, error) {
	f, err := load(cfg)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.Reach(), nil
}
