package generate

import "fleetgen.dev/fleetgen/pkg/schema"

// withAgent sets spec's agent scheduling from c.Agent (spec.clusters[].agent):
// Fleet deploys and redeploys the cluster's fleet-agent with these.
func withAgent(spec fleetClusterSpec, c *schema.Cluster) fleetClusterSpec {
	if a := c.Agent; a != nil {
		spec.AgentTolerations = a.Tolerations
		spec.AgentAffinity = a.Affinity
		spec.AgentResources = a.Resources
		spec.HostNetwork = a.HostNetwork
		spec.AgentSchedulingCustomization = a.SchedulingCustomization
	}
	return spec
}

// agentChartValues are the fleet-agent chart's scheduling values
// (fleetAgent.tolerations, fleetAgent.hostNetwork: the chart has none for
// affinity, resources or a priority class), so that the agent helm installs
// schedules where the one Fleet redeploys from the Cluster will. nil when c
// sets none of them.
func agentChartValues(c *schema.Cluster) *fleetAgentValues {
	a := c.Agent
	if a == nil || (len(a.Tolerations) == 0 && (a.HostNetwork == nil || !*a.HostNetwork)) {
		return nil
	}
	return &fleetAgentValues{Tolerations: a.Tolerations, HostNetwork: a.HostNetwork != nil && *a.HostNetwork}
}

// fleetAgentValues is the fleetAgent block of the fleet-agent chart's values.
type fleetAgentValues struct {
	Tolerations []schema.Toleration `json:"tolerations,omitempty"`
	HostNetwork bool                `json:"hostNetwork,omitempty"`
}
