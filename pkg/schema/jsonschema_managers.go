package schema

import (
	"reflect"
	"strings"

	"fleetgen.dev/fleetgen/internal/strictyaml"
	"fleetgen.dev/fleetgen/pkg/layout"
)

// The JSON Schema's documentation of spec.deliveries, spec.argocd,
// spec.kubefleet, spec.sveltos, spec.ocm and spec.clusters[].apiServer,
// .identity and .agent, merged into fieldDocs. The fields
// below agent are the Kubernetes types': each is described by its name
// (kubeDocs), wherever it stands.
func init() {
	for k, d := range managerDocs {
		fieldDocs[k] = d
	}
	var walk func(path string, t reflect.Type)
	walk = func(path string, t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			if t.Kind() == reflect.Slice {
				path += "[]"
			}
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for _, f := range strictyaml.Fields(t) {
			p := strictyaml.Join(path, f.Name)
			if _, ok := fieldDocs[p]; !ok {
				d := fieldDoc{desc: kubeDocs[f.Name], example: kubeExamples[f.Name]}
				if f.Name == "limits" || f.Name == "requests" {
					// Quantities: 1 and 0.5 are numbers in YAML, 100m a string.
					d.extra = map[string]any{"additionalProperties": map[string]any{"type": []string{"string", "number"}}}
				}
				fieldDocs[p] = d
			}
			walk(p, t.Field(f.Index).Type)
		}
	}
	walk("spec.clusters[].agent", reflect.TypeOf(Agent{}))
	walk("spec.deliveries[].correctDrift", reflect.TypeOf(CorrectDrift{}))
}

// hostDoc describes the field naming the cluster that runs a manager.
func hostDoc(what, dir, example string) fieldDoc {
	return fieldDoc{desc: "The fleet cluster that " + what + ": the manager (default; its objects go under " + layout.ManagerDir + "/" + dir + "/) or a cluster of spec.clusters (into its Flux folder, " + layout.ClusterDir("<name>") + "/" + dir + "/). Default: spec.manager.name.",
		pattern: dnsLabelRE.String(), maxLen: 63, example: example}
}

// kubeDocs describe the fields of the Kubernetes and Fleet types by name.
var kubeDocs = map[string]string{
	"key":               "A label (or taint) key.",
	"operator":          "How key relates to the values: " + strings.Join([]string{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt (node selectors)", "Equal or Exists (tolerations)"}, ", ") + ".",
	"value":             "The value to match.",
	"values":            "The values to match (In, NotIn; one integer for Gt, Lt).",
	"effect":            "The taint effect to tolerate: NoSchedule, PreferNoSchedule or NoExecute; none for all.",
	"tolerationSeconds": "NoExecute only: how long the agent stays on a node after the taint appears.",
	"nodeAffinity":      "Node affinity (core/v1 NodeAffinity).",
	"podAffinity":       "Pod affinity (core/v1 PodAffinity).",
	"podAntiAffinity":   "Pod anti-affinity (core/v1 PodAntiAffinity).",
	"requiredDuringSchedulingIgnoredDuringExecution":  "Rules the scheduler must follow.",
	"preferredDuringSchedulingIgnoredDuringExecution": "Rules the scheduler prefers, by weight.",
	"nodeSelectorTerms":   "Node selector terms; any one matching is enough.",
	"matchExpressions":    "Requirements, all of which must hold.",
	"matchFields":         "Requirements on node fields, all of which must hold.",
	"matchLabels":         "Labels, all of which must match.",
	"weight":              "The preference's weight, 1 to 100.",
	"preference":          "The node selector term preferred.",
	"podAffinityTerm":     "The pod affinity term preferred.",
	"labelSelector":       "The pods to be near (or away from).",
	"namespaceSelector":   "The namespaces whose pods count.",
	"namespaces":          "The namespaces whose pods count.",
	"topologyKey":         "The node label whose value makes the domain, e.g. kubernetes.io/hostname.",
	"limits":              "Resource limits by name (cpu, memory): quantities such as 500m or 256Mi.",
	"requests":            "Resource requests by name (cpu, memory): quantities such as 100m or 128Mi.",
	"priorityClass":       "A PriorityClass Fleet creates for the agent.",
	"podDisruptionBudget": "A PodDisruptionBudget Fleet creates for the agent.",
	"preemptionPolicy":    "PreemptLowerPriority (default) or Never.",
	"minAvailable":        "Pods that must stay available: a number or a percentage; not with maxUnavailable.",
	"maxUnavailable":      "Pods that may be unavailable: a number or a percentage; not with minAvailable.",
	"enabled":             "Correct drift: undo changes made on the clusters.",
	"force":               "Roll back with helm --force, recreating resources.",
	"keepFailHistory":     "Keep failed rollbacks in the Helm history.",
}

// kubeExamples are examples of the fields of kubeDocs, by name; the
// objects among them compose theirs from their fields (Explain).
var kubeExamples = map[string]any{
	"key":               "kubernetes.io/os",
	"operator":          "In",
	"value":             "true",
	"values":            []any{"linux"},
	"effect":            "NoSchedule",
	"tolerationSeconds": 300,
	"matchLabels":       map[string]any{"app": "fleet-agent"},
	"weight":            50,
	"namespaces":        []any{"cattle-fleet-system"},
	"topologyKey":       "kubernetes.io/hostname",
	"limits":            map[string]any{"memory": "256Mi"},
	"requests":          map[string]any{"cpu": "100m", "memory": "128Mi"},
	"preemptionPolicy":  "Never",
	"minAvailable":      "1",
	"maxUnavailable":    "25%",
	"enabled":           true,
	"force":             true,
	"keepFailHistory":   true,
}

var managerDocs = map[string]fieldDoc{
	"spec.deliveries":                                  {desc: "Fleet GitRepos that deliver bundles to these clusters: one GitRepo each in the manager's workspace, and one Policy admitting exactly their repos, service accounts and client secrets.", example: []any{map[string]any{"name": "monitoring", "repo": "https://github.com/contoso/platform.git", "branch": "main", "paths": []any{"monitoring"}, "targets": []any{map[string]any{"name": "prod", "clusterSelector": map[string]any{"env": "prod"}}}}}},
	"spec.deliveries[].name":                           nameDoc("The GitRepo's name, unique.", "monitoring"),
	"spec.deliveries[].repo":                           {desc: "The Git URL Fleet clones: https://, http://, ssh://, git:// or user@host:path.", required: true, example: "https://github.com/contoso/platform.git"},
	"spec.deliveries[].branch":                         {desc: "The branch to follow; not with revision (neither: Fleet follows master).", example: "main"},
	"spec.deliveries[].revision":                       {desc: "A tag or commit to deploy; not with branch.", example: "v1.4.0"},
	"spec.deliveries[].bundles":                        {desc: "A driven scan (Fleet v0.13+): each base folder is one bundle; not with paths.", example: []any{map[string]any{"base": "monitoring", "options": "fleet-prod.yaml"}}},
	"spec.deliveries[].bundles[].base":                 {desc: "The bundle's folder, relative to the repository's root.", required: true, example: "monitoring"},
	"spec.deliveries[].bundles[].options":              {desc: "The bundle's options file (a Fleet fleet.yaml), relative to base.", example: "fleet-prod.yaml"},
	"spec.deliveries[].paths":                          {desc: "A classic scan of these folders (globs allowed); not with bundles. Neither: the repository's root.", example: []any{"monitoring"}},
	"spec.deliveries[].targets":                        {desc: "The clusters to deploy to, tried in order: the first target that matches a cluster wins. At least one.", required: true, extra: map[string]any{"minItems": 1}, example: []any{map[string]any{"name": "prod", "clusterSelector": map[string]any{"env": "prod"}}}},
	"spec.deliveries[].targets[].name":                 nameDoc("The target's name, unique in the delivery.", "prod"),
	"spec.deliveries[].targets[].clusterName":          {desc: "A cluster's name (or Rancher display name). Every criterion set must hold; a target with none selects nothing.", example: "prod-eu-1"},
	"spec.deliveries[].targets[].clusterSelector":      labelsDoc("matchLabels over the Cluster's labels; {} selects every cluster.", map[string]any{"env": "prod"}),
	"spec.deliveries[].targets[].clusterGroup":         {desc: "The name of one of spec.groups.", example: "production"},
	"spec.deliveries[].targets[].clusterGroupSelector": labelsDoc("matchLabels over the labels of the cluster's ClusterGroups (fleetgen's carry none: only {} selects).", map[string]any{}),
	"spec.deliveries[].helmSecretName":                 {desc: "The Secret with the Helm credentials; Fleet uses them only for chart URLs helmRepoURLRegex matches.", example: "acr-helm"},
	"spec.deliveries[].helmRepoURLRegex":               {desc: "The chart URLs that get the Helm credentials; default the mirror, ^oci://<registry.host>/.", example: "^oci://contoso\\.azurecr\\.io/charts/"},
	"spec.deliveries[].clientSecretName":               {desc: "The Secret with the Git credentials (basic-auth or ssh-auth).", example: "platform-repo"},
	"spec.deliveries[].serviceAccount":                 {desc: "The service account that deploys the bundles on the clusters.", example: "fleet-deployer"},
	"spec.deliveries[].pollingInterval":                durationDoc("How often Fleet polls the repository.", nil, "1m"),
	"spec.deliveries[].correctDrift":                   {desc: "Fleet's drift correction: {enabled, force, keepFailHistory}.", example: map[string]any{"enabled": true}},
	"spec.deliveries[].targetNamespace":                {desc: "Deploy every resource into this namespace.", example: "monitoring"},
	"spec.deliveries[].paused":                         {desc: "Stop propagating changes to the clusters.", def: false},

	"spec.argocd":                                     {desc: "Argo CD cluster Secrets for the same clusters, in Argo CD's namespace on the cluster that runs it; no static credential goes to Git, so they are written readable, never sealed.", example: map[string]any{"namespace": "argocd", "auth": map[string]any{"azureWorkloadIdentity": map[string]any{"clientID": "00000000-0000-0000-0000-000000000000"}}}},
	"spec.argocd.namespace":                           {desc: "Argo CD's namespace.", def: "argocd", pattern: dnsLabelRE.String(), maxLen: 63, example: "argocd"},
	"spec.argocd.cluster":                             hostDoc("runs this Argo CD", "argocd", "gitops-1"),
	"spec.argocd.selector":                            labelsDoc("Which clusters get a Secret (matchLabels); none means every cluster.", map[string]any{"env": "prod"}),
	"spec.argocd.auth":                                {desc: "How Argo CD authenticates to each cluster.", required: true, example: map[string]any{"azureWorkloadIdentity": map[string]any{"clientID": "00000000-0000-0000-0000-000000000000"}}},
	"spec.argocd.auth.azureWorkloadIdentity":          {desc: "argocd-k8s-auth azure with Entra workload identity: the identity Argo CD's service accounts are federated with.", example: map[string]any{"clientID": "00000000-0000-0000-0000-000000000000", "tenantID": "00000000-0000-0000-0000-000000000000"}},
	"spec.argocd.auth.azureWorkloadIdentity.clientID": {desc: "The identity's client ID (a GUID).", required: true, pattern: guidRE.String(), example: "00000000-0000-0000-0000-000000000000"},
	"spec.argocd.auth.azureWorkloadIdentity.tenantID": {desc: "The tenant ID (a GUID); optional, the workload identity webhook injects it.", pattern: guidRE.String(), example: "00000000-0000-0000-0000-000000000000"},

	"spec.kubefleet":          {desc: "KubeFleet (Azure Kubernetes Fleet Manager) MemberClusters for the same clusters, on the hub; each selected cluster needs identity (its member agent's Entra identity): no token goes to Git.", example: map[string]any{"selector": map[string]any{"cloud": "azure"}}},
	"spec.kubefleet.hub":      hostDoc("is the KubeFleet hub", "kubefleet", "hub-1"),
	"spec.kubefleet.selector": labelsDoc("Which clusters get a MemberCluster (matchLabels); none means every cluster.", map[string]any{"cloud": "azure"}),
	"spec.sveltos":            {desc: "Sveltos SveltosClusters for the same clusters, each with its kubeconfig Secret (sealed like every credential), in namespace " + SveltosNamespace + " on the cluster that runs Sveltos; only mode manager clusters, whose kubeconfig fleetgen holds.", example: map[string]any{"selector": map[string]any{"sveltos": "enabled"}}},
	"spec.sveltos.cluster":    hostDoc("runs Sveltos", "sveltos", "mgmt-1"),
	"spec.sveltos.selector":   labelsDoc("Which clusters get a SveltosCluster (matchLabels); none means every cluster.", map[string]any{"sveltos": "enabled"}),
	"spec.ocm":                {desc: "Open Cluster Management ManagedClusters (hubAcceptsClient: true) for the same clusters, on the hub, and each cluster's klusterlet Helm values, everything but the token, in " + string(layout.KlusterletValues) + ".", example: map[string]any{"selector": map[string]any{"env": "prod"}}},
	"spec.ocm.hub":            hostDoc("is the OCM hub", "ocm", "hub-1"),
	"spec.ocm.selector":       labelsDoc("Which clusters get a ManagedCluster (matchLabels); none means every cluster.", map[string]any{"env": "prod"}),

	"spec.clusters[].identity":                                          {desc: "The cluster's own identity, which KubeFleet's member agent authenticates to the hub as (the MemberCluster's spec.identity); required on clusters spec.kubefleet selects.", example: map[string]any{"azure": map[string]any{"principalID": "00000000-0000-0000-0000-000000000000"}}},
	"spec.clusters[].identity.azure":                                    {desc: "An Entra ID identity (the member agent's managed identity).", required: true, example: map[string]any{"principalID": "00000000-0000-0000-0000-000000000000"}},
	"spec.clusters[].identity.azure.principalID":                        {desc: "The identity's object (principal) ID, a GUID: the user name the hub's API server sees.", required: true, pattern: guidRE.String(), example: "00000000-0000-0000-0000-000000000000"},
	"spec.clusters[].apiServer":                                         {desc: "How managers other than Fleet (Argo CD, OCM) reach the cluster; not for mode manager, whose kubeconfig says it.", example: map[string]any{"url": "https://capi-1.contoso.example:6443", "ca": map[string]any{"file": "certs/capi-1-ca.pem"}}},
	"spec.clusters[].apiServer.url":                                     {desc: "The cluster's API server, https://HOST[:PORT].", required: true, pattern: `^https://`, example: "https://capi-1.contoso.example:6443"},
	"spec.clusters[].apiServer.ca":                                      {desc: "The API server's CA (PEM), {file: PATH} or {value: PEM}; none means a well-known CA.", forms: formFile | formValue, example: map[string]any{"file": "certs/capi-1-ca.pem"}},
	"spec.clusters[].agent":                                             {desc: "fleet-agent scheduling (modes agent, manager, capi), set on the Cluster (agentTolerations, agentAffinity, agentResources, hostNetwork, agentSchedulingCustomization) and, for mode agent, what the chart takes in " + string(layout.AgentValues) + ".", example: map[string]any{"tolerations": []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}}}},
	"spec.clusters[].agent.tolerations":                                 {desc: "Tolerations of the agent's Pod (core/v1 Toleration).", example: []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}}},
	"spec.clusters[].agent.affinity":                                    {desc: "The agent's affinity (core/v1 Affinity); replaces Fleet's default.", example: map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "kubernetes.io/os", "operator": "In", "values": []any{"linux"}}}}}}}}},
	"spec.clusters[].agent.resources":                                   {desc: "The agent's resources (limits, requests).", example: map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "256Mi"}}},
	"spec.clusters[].agent.hostNetwork":                                 {desc: "Run the agent in the host's network."},
	"spec.clusters[].agent.schedulingCustomization.priorityClass.value": {desc: "The PriorityClass's value: the agent's priority, at most 1000000000.", example: 1000000},
	"spec.clusters[].agent.tolerations[].key":                           {desc: kubeDocs["key"], example: "node-role.kubernetes.io/control-plane"},
	"spec.clusters[].agent.tolerations[].operator":                      {desc: kubeDocs["operator"], example: "Exists"},
	"spec.clusters[].agent.tolerations[].value":                         {desc: kubeDocs["value"], example: "true"},
	"spec.clusters[].agent.schedulingCustomization.podDisruptionBudget": {desc: kubeDocs["podDisruptionBudget"], example: map[string]any{"maxUnavailable": "1"}},
	"spec.clusters[].agent.schedulingCustomization":                     {desc: "A PriorityClass and PodDisruptionBudget Fleet creates for the agent (Fleet v0.14+).", example: map[string]any{"priorityClass": map[string]any{"value": 1000000}, "podDisruptionBudget": map[string]any{"maxUnavailable": "1"}}},
}
