package generate

// The objects fleetgen writes, as small local structs that carry only what
// fleetgen sets (so no status, creationTimestamp or other zero-value noise).
// Field names and shapes are the upstream ones; TestObjectsDecodeStrictly
// proves each struct, fully populated, decodes strictly into its upstream Go
// type (Fleet's pkg/apis, Flux's api modules, k8s.io/api, kustomize's
// api/types), and the golden tests validate every rendered object against the
// upstream CRDs.

import (
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// API versions and kinds.
const (
	fleetAPIVersion      = "fleet.cattle.io/v1alpha1"
	sourceAPIVersion     = "source.toolkit.fluxcd.io/v1"
	kustomizeAPIVersion  = "kustomize.toolkit.fluxcd.io/v1"
	verrazzanoAPIVersion = "clusters.verrazzano.io/v1alpha1"
	kustomizeConfigAPI   = "kustomize.config.k8s.io/v1beta1"
	kubeFleetAPIVersion  = "cluster.kubernetes-fleet.io/v1"
	sveltosAPIVersion    = "lib.projectsveltos.io/v1beta1"
	ocmClusterAPIVersion = "cluster.open-cluster-management.io/v1"
	rbacAPIGroup         = "rbac.authorization.k8s.io"

	fluxNamespace      = layout.FluxNamespace
	fluxSystem         = "flux-system" // the source `flux bootstrap` makes
	adminConfigMapName = "verrazzano-admin-cluster"
	managerEntryName   = layout.ManagerKustomizationName

	// pruneDisabled keeps Flux from ever deleting a namespace fleetgen
	// declares (fleet-default holds objects fleetgen does not own).
	pruneAnnotation = "kustomize.toolkit.fluxcd.io/prune"
	pruneDisabled   = "disabled"

	capiSecretType  = "cluster.x-k8s.io/secret"
	capiClusterName = "cluster.x-k8s.io/cluster-name"
)

type objectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// namespace is a core/v1 Namespace.
type namespace struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
}

// secret is a core/v1 Secret; Data values are base64.
type secret struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   objectMeta        `json:"metadata"`
	Type       string            `json:"type,omitempty"`
	Data       map[string]string `json:"data"`
}

// configMap is a core/v1 ConfigMap.
type configMap struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   objectMeta        `json:"metadata"`
	Data       map[string]string `json:"data"`
}

// fleetCluster is a fleet.cattle.io/v1alpha1 Cluster.
type fleetCluster struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   objectMeta       `json:"metadata"`
	Spec       fleetClusterSpec `json:"spec"`
}

type fleetClusterSpec struct {
	ClientID         string `json:"clientID,omitempty"`
	KubeConfigSecret string `json:"kubeConfigSecret,omitempty"`
	// The agent's scheduling (spec.clusters[].agent, agent.go): the
	// Kubernetes types as schema's local structs.
	AgentTolerations             []schema.Toleration             `json:"agentTolerations,omitempty"`
	AgentAffinity                *schema.Affinity                `json:"agentAffinity,omitempty"`
	AgentResources               *schema.Resources               `json:"agentResources,omitempty"`
	HostNetwork                  *bool                           `json:"hostNetwork,omitempty"`
	AgentSchedulingCustomization *schema.SchedulingCustomization `json:"agentSchedulingCustomization,omitempty"`
}

// registrationToken is a fleet.cattle.io/v1alpha1 ClusterRegistrationToken.
type registrationToken struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Metadata   objectMeta            `json:"metadata"`
	Spec       registrationTokenSpec `json:"spec"`
}

type registrationTokenSpec struct {
	TTL string `json:"ttl,omitempty"`
}

// clusterGroup is a fleet.cattle.io/v1alpha1 ClusterGroup.
type clusterGroup struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   objectMeta       `json:"metadata"`
	Spec       clusterGroupSpec `json:"spec"`
}

type clusterGroupSpec struct {
	Selector labelSelector `json:"selector"`
}

// labelSelector is a metav1.LabelSelector with matchLabels only. An empty
// one ({}) selects every cluster, as Kubernetes label selectors do.
type labelSelector struct {
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// managedCluster is a clusters.verrazzano.io/v1alpha1 VerrazzanoManagedCluster.
type managedCluster struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   objectMeta         `json:"metadata"`
	Spec       managedClusterSpec `json:"spec"`
}

type managedClusterSpec struct {
	CASecret string `json:"caSecret,omitempty"`
}

// gitRepository is a source.toolkit.fluxcd.io/v1 GitRepository.
type gitRepository struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   objectMeta        `json:"metadata"`
	Spec       gitRepositorySpec `json:"spec"`
}

type gitRepositorySpec struct {
	Interval  string          `json:"interval"`
	URL       string          `json:"url"`
	Ref       gitRef          `json:"ref"`
	SecretRef *localObjectRef `json:"secretRef,omitempty"`
}

type gitRef struct {
	Branch string `json:"branch"`
}

// ociRepository is a source.toolkit.fluxcd.io/v1 OCIRepository.
type ociRepository struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   objectMeta        `json:"metadata"`
	Spec       ociRepositorySpec `json:"spec"`
}

type ociRepositorySpec struct {
	Interval  string          `json:"interval"`
	URL       string          `json:"url"`
	Ref       ociRef          `json:"ref"`
	SecretRef *localObjectRef `json:"secretRef,omitempty"`
	Insecure  bool            `json:"insecure,omitempty"`
}

type ociRef struct {
	Tag string `json:"tag"`
}

type localObjectRef struct {
	Name string `json:"name"`
}

// kustomization is a kustomize.toolkit.fluxcd.io/v1 Kustomization.
type kustomization struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   objectMeta        `json:"metadata"`
	Spec       kustomizationSpec `json:"spec"`
}

type kustomizationSpec struct {
	Interval   string           `json:"interval"`
	Path       string           `json:"path"`
	Prune      bool             `json:"prune"` // required by the CRD, so never omitted
	Wait       bool             `json:"wait,omitempty"`
	Timeout    string           `json:"timeout,omitempty"`
	SourceRef  sourceRef        `json:"sourceRef"`
	DependsOn  []dependency     `json:"dependsOn,omitempty"`
	PostBuild  *postBuild       `json:"postBuild,omitempty"`
	Decryption *decryption      `json:"decryption,omitempty"`
	Images     []kustomizeImage `json:"images,omitempty"`
	Patches    []patch          `json:"patches,omitempty"`
}

type sourceRef struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

type dependency struct {
	Name string `json:"name"`
}

type postBuild struct {
	Substitute map[string]string `json:"substitute,omitempty"`
}

type decryption struct {
	Provider  string          `json:"provider"`
	SecretRef *localObjectRef `json:"secretRef,omitempty"`
}

// kustomizeImage is a kustomize image override (Flux spec.images).
type kustomizeImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// kustomizeFile is a kustomization.yaml (kustomize.config.k8s.io/v1beta1).
type kustomizeFile struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

// agentValues are the fleet-agent Helm chart values fleetgen writes (chart
// fleet-agent of Fleet v0.16: values.yaml and templates/validate.yaml, which
// requires apiServerURL and tokenName). Labels are not among them: the agent
// applies them once, at registration, so they live on the Cluster.
type agentValues struct {
	APIServerURL     string      `json:"apiServerURL"`
	APIServerCA      string      `json:"apiServerCA,omitempty"`
	ClientID         string      `json:"clientID"`
	ClusterNamespace string      `json:"clusterNamespace"`
	TokenName        string      `json:"tokenName"`
	Image            *agentImage `json:"image"`
	// FleetAgent schedules the agent (spec.clusters[].agent, agent.go).
	FleetAgent *fleetAgentValues `json:"fleetAgent,omitempty"`
}

type agentImage struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
}

// memberCluster is a KubeFleet cluster.kubernetes-fleet.io/v1 MemberCluster.
type memberCluster struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   objectMeta        `json:"metadata"`
	Spec       memberClusterSpec `json:"spec"`
}

type memberClusterSpec struct {
	Identity subject `json:"identity"`
}

// subject is an rbac/v1 Subject.
type subject struct {
	APIGroup string `json:"apiGroup,omitempty"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// sveltosCluster is a lib.projectsveltos.io/v1beta1 SveltosCluster.
type sveltosCluster struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   objectMeta         `json:"metadata"`
	Spec       sveltosClusterSpec `json:"spec"`
}

type sveltosClusterSpec struct {
	KubeconfigName    string `json:"kubeconfigName"`
	KubeconfigKeyName string `json:"kubeconfigKeyName"`
}

// ocmManagedCluster is an OCM cluster.open-cluster-management.io/v1
// ManagedCluster (cluster-scoped).
type ocmManagedCluster struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Metadata   objectMeta            `json:"metadata"`
	Spec       ocmManagedClusterSpec `json:"spec"`
}

type ocmManagedClusterSpec struct {
	HubAcceptsClient bool        `json:"hubAcceptsClient"`
	ClientConfigs    []serverURL `json:"managedClusterClientConfigs,omitempty"`
}

// serverURL is OCM's ClientConfig and ServerURL: an API server and its CA
// bundle (base64 PEM; empty for a well-known CA).
type serverURL struct {
	URL      string `json:"url"`
	CABundle string `json:"caBundle,omitempty"`
}

// klusterletValues are the values fleetgen writes for OCM's klusterlet
// chart (open-cluster-management.io/ocm deploy/klusterlet/chart, v1.3):
// everything but the bootstrap token.
type klusterletValues struct {
	Klusterlet             klusterletSettings `json:"klusterlet"`
	BootstrapHubKubeConfig string             `json:"bootstrapHubKubeConfig"`
}

type klusterletSettings struct {
	ClusterName        string      `json:"clusterName"`
	ExternalServerURLs []serverURL `json:"externalServerURLs,omitempty"`
}

// kubeconfigFile is a client-go kubeconfig (clientcmd/api/v1 Config).
type kubeconfigFile struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	Clusters       []namedCluster `json:"clusters"`
	Contexts       []namedContext `json:"contexts"`
	CurrentContext string         `json:"current-context"`
	Users          []namedUser    `json:"users"`
}

type namedCluster struct {
	Name    string            `json:"name"`
	Cluster kubeconfigCluster `json:"cluster"`
}

type kubeconfigCluster struct {
	Server                   string `json:"server"`
	CertificateAuthorityData string `json:"certificate-authority-data,omitempty"`
}

type namedContext struct {
	Name    string            `json:"name"`
	Context kubeconfigContext `json:"context"`
}

type kubeconfigContext struct {
	Cluster string `json:"cluster"`
	User    string `json:"user"`
}

type namedUser struct {
	Name string            `json:"name"`
	User map[string]string `json:"user"`
}
