package schema

import "strings"

// FleetAgentImage is the fleet-agent image of the Fleet release whose CRDs
// fleetgen renders for (v0.16.1): the one to list in spec.images when a
// cluster registers in mode agent.
const FleetAgentImage = "docker.io/rancher/fleet-agent:v0.16.1"

// fleetAgentRepo is the fleet-agent image's repository path on Docker Hub,
// and its tail on any mirror.
const fleetAgentRepo = "rancher/fleet-agent"

// IsFleetAgentImage reports whether ref names the fleet-agent image: the
// repository rancher/fleet-agent on any registry, under any prefix
// (docker.io/rancher/fleet-agent:v0.16.1, rancher/fleet-agent@sha256:…,
// contoso.azurecr.io/mirror/rancher/fleet-agent:v0.16.1).
func IsFleetAgentImage(ref string) bool {
	name, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	return name == fleetAgentRepo || strings.HasSuffix(name, "/"+fleetAgentRepo)
}

// AgentImage returns the index in spec.images of the fleet-agent image that
// agent values pin, and false when spec.images lists none. Validate rejects
// more than one.
func (f *Fleet) AgentImage() (int, bool) {
	for i, ref := range f.Spec.Images {
		if IsFleetAgentImage(ref) {
			return i, true
		}
	}
	return 0, false
}
