package schema

import (
	"fmt"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// output checks the fields that shape the output tree beyond single values:
// how each cluster's Flux was bootstrapped, the names that bootstrap owns, and
// the fleet-agent image that agent values pin.
func (v *validator) output() {
	v.agentImage()
	s := &v.f.Spec.Source
	// A layer called flux-system is refused with the other reserved layer
	// names, whatever the bootstrap (validate.go).
	switch s.Bootstrap {
	case BootstrapFlux, BootstrapNone:
	default:
		v.add(problem.NotSupported("spec.source.bootstrap", "unsupported value %q: want flux (clusters bootstrapped with `flux bootstrap --path %s`) or none (fleetgen writes each cluster's source)", s.Bootstrap, layout.ClusterDir("<name>")))
	}
}

// agentImage requires exactly one fleet-agent image in spec.images when any
// cluster registers in mode agent: agents/<name>/values.yaml pins it to the
// mirror, and without it the agent would pull from the public registry the
// mirror exists to avoid.
func (v *validator) agentImage() {
	first := -1
	for i, ref := range v.f.Spec.Images {
		if !IsFleetAgentImage(ref) {
			continue
		}
		if first >= 0 {
			v.add(problem.Other(fmt.Sprintf("spec.images[%d]", i), "a second fleet-agent image (spec.images[%d] is one): agent values pin one image; want one", first))
			continue
		}
		first = i
	}
	if first >= 0 {
		return
	}
	var agents []string
	for _, c := range v.f.Spec.Clusters {
		if m := c.ModeOf(); m != nil && m.Agent {
			agents = append(agents, c.Name)
		}
	}
	if len(agents) == 0 {
		return
	}
	who := "cluster " + agents[0] + " registers"
	if len(agents) > 1 {
		who = fmt.Sprintf("clusters %s and %d more register", agents[0], len(agents)-1)
	}
	v.add(problem.Other("spec.images", "%s in mode agent but spec.images lists no fleet-agent image: add %s, which %s pins to the mirror", who, FleetAgentImage, layout.AgentValues))
}
