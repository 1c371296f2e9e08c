package pipeline

import (
	"context"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// Reach is what Targets returns (schema.Reach): what reaches each cluster.
type Reach = schema.Reach

// TargetsOptions are Targets'.
type TargetsOptions struct {
	// Clusters limits the clusters listed to these (`--cluster`: names of
	// spec.clusters or the manager's); nil means all. The targets and layer
	// selectors that select nothing are listed whatever it holds.
	Clusters []string
}

// Targets loads fleet.yaml and returns what reaches each of its clusters:
// the layers selected for it and the deliveries whose targets select it
// (Fleet's matching, package fleetmatch), and every delivery target and
// layer selector that reaches no cluster, with the label values that exist
// (`fleetgen targets`, SPEC §2). It writes nothing.
//
// It explains a fleet that validate refuses too: whenever fleet.yaml holds a
// Fleet it returns its Reach, with validate's problems as the error (what
// Validate would return), so that a target that selects nothing is
// explained before the command exits 2. Names in the Reach then are
// fleet.yaml's, unchecked: print them inert.
func Targets(ctx context.Context, cfg Config, o TargetsOptions) (*Reach, error) {
	ld, _, err := validateAll(ctx, cfg)
	if ld == nil {
		return nil, err
	}
	keep, _, serr := ld.Fleet.SelectClusters(o.Clusters)
	if serr != nil {
		return nil, serr
	}
	r := ld.Fleet.Reach()
	if keep != nil {
		cs := []schema.ClusterReach{}
		for _, c := range r.Clusters {
			if keep[c.Name] {
				cs = append(cs, c)
			}
		}
		r.Clusters = cs
	}
	return r, err
}
