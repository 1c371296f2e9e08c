package schema

// Agent schedules a cluster's fleet-agent (spec.clusters[].agent). Fleet
// reads it from the Cluster (agentTolerations, agentAffinity,
// agentResources, hostNetwork, agentSchedulingCustomization) whenever it
// deploys the agent; for mode agent the fleet-agent chart's values carry
// what the chart can set (fleetAgent.tolerations, fleetAgent.hostNetwork),
// so that the agent helm installs first schedules where the one Fleet
// redeploys will.
//
// The types below are the Kubernetes ones (k8s.io/api/core/v1 Toleration,
// Affinity, ResourceRequirements; Fleet's AgentSchedulingCustomization) as
// small local structs with the same field names: pkg/generate writes them
// as they are, and a test proves they decode strictly into the upstream
// types.
type Agent struct {
	Tolerations []Toleration `json:"tolerations,omitempty"`
	Affinity    *Affinity    `json:"affinity,omitempty"`
	Resources   *Resources   `json:"resources,omitempty"`
	// HostNetwork runs the agent in the host's network (a cluster without
	// CNI yet).
	HostNetwork *bool `json:"hostNetwork,omitempty"`
	// SchedulingCustomization makes Fleet create a PriorityClass and a
	// PodDisruptionBudget for the agent (Fleet v0.14 and later).
	SchedulingCustomization *SchedulingCustomization `json:"schedulingCustomization,omitempty"`
}

// Toleration is a core/v1 Toleration.
type Toleration struct {
	Key               string `json:"key,omitempty"`
	Operator          string `json:"operator,omitempty"`
	Value             string `json:"value,omitempty"`
	Effect            string `json:"effect,omitempty"`
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// Affinity is a core/v1 Affinity.
type Affinity struct {
	NodeAffinity    *NodeAffinity `json:"nodeAffinity,omitempty"`
	PodAffinity     *PodAffinity  `json:"podAffinity,omitempty"`
	PodAntiAffinity *PodAffinity  `json:"podAntiAffinity,omitempty"`
}

// NodeAffinity is a core/v1 NodeAffinity.
type NodeAffinity struct {
	Required  *NodeSelector             `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	Preferred []PreferredSchedulingTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// NodeSelector is a core/v1 NodeSelector.
type NodeSelector struct {
	NodeSelectorTerms []NodeSelectorTerm `json:"nodeSelectorTerms"`
}

// NodeSelectorTerm is a core/v1 NodeSelectorTerm.
type NodeSelectorTerm struct {
	MatchExpressions []Requirement `json:"matchExpressions,omitempty"`
	MatchFields      []Requirement `json:"matchFields,omitempty"`
}

// Requirement is a core/v1 NodeSelectorRequirement or a metav1
// LabelSelectorRequirement (the same fields).
type Requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// PreferredSchedulingTerm is a core/v1 PreferredSchedulingTerm.
type PreferredSchedulingTerm struct {
	Weight     int32            `json:"weight"`
	Preference NodeSelectorTerm `json:"preference"`
}

// PodAffinity is a core/v1 PodAffinity or PodAntiAffinity (the same fields).
type PodAffinity struct {
	Required  []PodAffinityTerm         `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	Preferred []WeightedPodAffinityTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// PodAffinityTerm is a core/v1 PodAffinityTerm.
type PodAffinityTerm struct {
	LabelSelector     *LabelSelector `json:"labelSelector,omitempty"`
	Namespaces        []string       `json:"namespaces,omitempty"`
	TopologyKey       string         `json:"topologyKey"`
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
}

// WeightedPodAffinityTerm is a core/v1 WeightedPodAffinityTerm.
type WeightedPodAffinityTerm struct {
	Weight          int32           `json:"weight"`
	PodAffinityTerm PodAffinityTerm `json:"podAffinityTerm"`
}

// LabelSelector is a metav1 LabelSelector.
type LabelSelector struct {
	MatchLabels      map[string]string `json:"matchLabels,omitempty"`
	MatchExpressions []Requirement     `json:"matchExpressions,omitempty"`
}

// Resources is a core/v1 ResourceRequirements: quantities by resource name.
type Resources struct {
	Limits   map[string]string `json:"limits,omitempty"`
	Requests map[string]string `json:"requests,omitempty"`
}

// SchedulingCustomization is Fleet's AgentSchedulingCustomization.
type SchedulingCustomization struct {
	PriorityClass       *PriorityClass       `json:"priorityClass,omitempty"`
	PodDisruptionBudget *PodDisruptionBudget `json:"podDisruptionBudget,omitempty"`
}

// PriorityClass is Fleet's PriorityClassSpec.
type PriorityClass struct {
	Value            int    `json:"value,omitempty"`
	PreemptionPolicy string `json:"preemptionPolicy,omitempty"`
}

// PodDisruptionBudget is Fleet's PodDisruptionBudgetSpec: an integer or a
// percentage, one of the two.
type PodDisruptionBudget struct {
	MinAvailable   string `json:"minAvailable,omitempty"`
	MaxUnavailable string `json:"maxUnavailable,omitempty"`
}
