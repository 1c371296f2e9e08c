package pipeline

import (
	"context"
	"slices"
	"strings"

	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Reach is what Targets returns: what reaches each cluster (schema.Reach:
// its layers, deliveries and managers) and, for the cluster that runs Argo
// CD, every ApplicationSet it receives with the Applications it would
// create, which each cluster's entry lists too.
type Reach struct {
	*schema.Reach
	ApplicationSets []ApplicationSetPreview `json:"applicationSets"`
}

// Targets loads fleet.yaml and returns what reaches each of its clusters:
// the layers selected for it, the deliveries whose targets select it
// (Fleet's matching, package fleetmatch) and the managers that register it,
// every delivery target that reaches no cluster (`fleetgen targets`, SPEC
// §2), and, when a cluster of the fleet runs Argo CD (spec.argocd.cluster),
// the Applications each ApplicationSet it receives would create there,
// per cluster. It reads neither the lock nor the layer folders of other
// clusters, and writes nothing.
func Targets(ctx context.Context, cfg Config) (*Reach, error) {
	f, err := load(cfg)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := &Reach{Reach: f.Reach(), ApplicationSets: []ApplicationSetPreview{}}
	if f.Spec.ArgoCD == nil {
		return out, nil
	}
	host := schema.LookupRegistrar("argocd").Host(f)
	var m *layers.Model
	if host != f.Spec.Manager.Name {
		if m, err = layers.LoadCluster(f, host); err != nil {
			return nil, err
		}
	}
	regs, err := registrationFiles(f)
	if err != nil {
		return nil, err
	}
	v := argoCDSees(f, m, regs)
	out.ApplicationSets = v.preview()
	apps := v.byDestination(out.ApplicationSets)
	for i := range out.Clusters {
		c := &out.Clusters[i]
		c.Applications = append(c.Applications, apps[c.Name]...)
		slices.SortStableFunc(c.Applications, func(a, b schema.ApplicationReach) int {
			if d := strings.Compare(a.ApplicationSet, b.ApplicationSet); d != 0 {
				return d
			}
			return strings.Compare(a.Name, b.Name)
		})
	}
	return out, nil
}
