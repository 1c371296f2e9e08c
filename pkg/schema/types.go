// Package schema holds the fleetgen.dev/v1alpha1 Fleet type: the parsed form of
// fleet.yaml, its defaults and its validation.
//
// Load is the only function here that does I/O: it reads fleet.yaml and every file
// or environment variable the fleet refers to. Default and Validate are pure.
//
// Parsing is strict: unknown fields, duplicate keys, wrong kinds of YAML node
// and YAML aliases are errors. Every problem is a *FieldError with file, line,
// column and field path; Load and Validate return all of them at once, in
// document order, as Errors.
package schema

import "fleetgen.dev/fleetgen/internal/strictyaml"

// APIVersion and Kind identify a fleet.yaml document.
const (
	APIVersion = "fleetgen.dev/v1alpha1"
	Kind       = "Fleet"
)

// Registration modes (spec.clusters[].registration.mode).
const (
	ModeAgent      = "agent"
	ModeManager    = "manager"
	ModeCAPI       = "capi"
	ModeVerrazzano = "verrazzano"
)

// Registry layouts (spec.registry.layout).
const (
	LayoutStripHost    = "strip-host"
	LayoutPreserveHost = "preserve-host"
)

// Source kinds (spec.source.kind).
const (
	SourceGit = "git"
	SourceOCI = "oci"
)

// Bootstrap kinds (spec.source.bootstrap): how each cluster's Flux came to read
// clusters/<name>/.
const (
	// BootstrapFlux: `flux bootstrap --path clusters/<name>` (or a FluxInstance
	// syncing that folder) made the source flux-system and wrote
	// clusters/<name>/flux-system/; fleetgen's Kustomizations read that source
	// and the folder has no kustomization.yaml, so Flux's generated one takes
	// in flux-system/ too.
	BootstrapFlux = "flux"
	// BootstrapNone: fleetgen writes each cluster's own source.yaml and
	// kustomization.yaml.
	BootstrapNone = "none"
)

// Fleet is one fleet.yaml document.
type Fleet struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`

	// File is the path fleet.yaml was loaded from, as given to Load; Dir is its
	// folder, the source root that layer paths and {file: …} references are
	// relative to. Both are set by Load and empty for a Fleet built in Go.
	File string `json:"-"`
	Dir  string `json:"-"`

	// pos maps a field path (spec.clusters[3].registration.mode) to where it
	// stands in File; filled by Load, used by Validate for line and column,
	// nil after DropPositions (src then finds them again).
	pos map[string]Pos
	src *posSource
}

// Pos is a line and column (both 1-based) in fleet.yaml.
type Pos = strictyaml.Pos

// Metadata names the fleet.
type Metadata struct {
	Name string `json:"name"`
}

// Spec is the fleet's desired state.
type Spec struct {
	Manager    Manager     `json:"manager"`
	Registry   Registry    `json:"registry"`
	Source     Source      `json:"source"`
	Encryption *Encryption `json:"encryption,omitempty"`
	Images     []string    `json:"images,omitempty"`
	Layers     []Layer     `json:"layers,omitempty"`
	Groups     []Group     `json:"groups,omitempty"`
	Defaults   Defaults    `json:"defaults,omitempty"`
	Clusters   []Cluster   `json:"clusters"`

	// SourceMirrors reads source registries' images from other hosts.
	SourceMirrors []SourceMirror `json:"sourceMirrors,omitempty"`

	// Deliveries are Fleet GitRepos that deliver bundles to these clusters
	// (delivery.go).
	Deliveries []Delivery `json:"deliveries,omitempty"`
	// ArgoCD registers the clusters with Argo CD as cluster Secrets
	// (argocd.go).
	ArgoCD *ArgoCD `json:"argocd,omitempty"`
	// KubeFleet, Sveltos and OCM register the clusters with those managers
	// (managers.go).
	KubeFleet *KubeFleet `json:"kubefleet,omitempty"`
	Sveltos   *Sveltos   `json:"sveltos,omitempty"`
	OCM       *OCM       `json:"ocm,omitempty"`
	// Verify holds the signature policies images must satisfy before they
	// are mirrored and published (validate_verify.go).
	Verify []VerifyPolicy `json:"verify,omitempty"`
	// Shards declares the managers' controller shards (shards.go).
	Shards *Shards `json:"shards,omitempty"`
}

// Manager is the management ("upstream") cluster.
type Manager struct {
	// Name is the manager's name; its Flux entry point is clusters/<Name>/.
	// Default "manager".
	Name string `json:"name,omitempty"`
	// Namespace is the Fleet workspace for Cluster, token and Secret objects.
	// Default "fleet-default".
	Namespace string `json:"namespace,omitempty"`
	// APIServerURL is required when any cluster uses mode agent or verrazzano.
	APIServerURL string   `json:"apiServerURL,omitempty"`
	APIServerCA  *FileRef `json:"apiServerCA,omitempty"`
}

// FileRef is content given inline ({value: …}), from a file relative to
// fleet.yaml ({file: …}) or from an environment variable ({env: …}); exactly one
// is set. Load reads it into Data.
type FileRef struct {
	File  string `json:"file,omitempty"`
	Value string `json:"value,omitempty"`
	Env   string `json:"env,omitempty"`

	// Data is the content, filled by Load. It may be a credential: never log it.
	Data []byte `json:"-"`
}

// Registry is the private mirror every image is copied to.
type Registry struct {
	Host   string `json:"host"`
	Prefix string `json:"prefix,omitempty"`
	// Layout is strip-host (default, az acr import naming) or preserve-host.
	Layout   string `json:"layout,omitempty"`
	Insecure bool   `json:"insecure,omitempty"`
}

// Source is where every cluster's Flux reads the rendered tree.
type Source struct {
	Kind      string `json:"kind"`
	URL       string `json:"url"`
	Ref       string `json:"ref,omitempty"`
	SecretRef string `json:"secretRef,omitempty"`
	Interval  string `json:"interval,omitempty"`
	Insecure  bool   `json:"insecure,omitempty"`
	// Path is where the rendered tree sits inside the source; default its root.
	Path string `json:"path,omitempty"`
	// Bootstrap is BootstrapFlux (default) or BootstrapNone.
	Bootstrap string `json:"bootstrap,omitempty"`
}

// Encryption says how Secrets are written.
type Encryption struct {
	SOPS *SOPS `json:"sops,omitempty"`
}

// SOPS encrypts Secret data for age recipients, as Flux's kustomize-controller
// decrypts it.
type SOPS struct {
	AgeRecipients []string `json:"ageRecipients"`
	// SecretRef names the Secret in flux-system that holds the age key.
	// Default "sops-age".
	SecretRef string `json:"secretRef,omitempty"`
}

// Layer is a Flux Kustomization rendered for each selected cluster.
type Layer struct {
	Name string `json:"name"`
	// Path is relative to the source root; ${label} and ${cluster} are
	// substituted per cluster.
	Path       string            `json:"path"`
	Interval   string            `json:"interval,omitempty"`
	Prune      *bool             `json:"prune,omitempty"`
	Wait       bool              `json:"wait,omitempty"`
	Timeout    string            `json:"timeout,omitempty"`
	DependsOn  []string          `json:"dependsOn,omitempty"`
	Selector   map[string]string `json:"selector,omitempty"`
	Substitute map[string]string `json:"substitute,omitempty"`
}

// Group is a Fleet ClusterGroup.
type Group struct {
	Name     string            `json:"name"`
	Selector map[string]string `json:"selector,omitempty"`
}

// Defaults apply to every cluster that does not say otherwise.
type Defaults struct {
	Labels       map[string]string `json:"labels,omitempty"`
	Registration string            `json:"registration,omitempty"`
	TokenTTL     string            `json:"tokenTTL,omitempty"`
}

// Cluster is one downstream cluster.
type Cluster struct {
	Name         string            `json:"name"`
	Labels       map[string]string `json:"labels,omitempty"`
	Registration Registration      `json:"registration,omitempty"`
	// APIServer is how managers other than Fleet (Argo CD, OCM) reach the
	// cluster; mode manager reads it from its kubeconfig instead.
	APIServer *APIServer `json:"apiServer,omitempty"`
	// Agent schedules the cluster's fleet-agent (agentspec.go).
	Agent *Agent `json:"agent,omitempty"`
	// Identity is the cluster's own identity, which KubeFleet's member
	// agent authenticates to the hub as (managers.go).
	Identity *Identity `json:"identity,omitempty"`
	// KubernetesVersion is what the Helm charts of the HelmReleases the
	// cluster receives render against (.Capabilities.KubeVersion): "1.33"
	// or "v1.33.4"; empty means pkg/charts' default (docs/mirroring.md).
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Shard pins the cluster's controller shards (shards.go); unpinned
	// ones are assigned and kept in fleet.lock.yaml.
	Shard *ClusterShard `json:"shard,omitempty"`
}

// Registration says how a cluster registers with its manager.
type Registration struct {
	Mode string `json:"mode,omitempty"`
	// Kubeconfig is mode manager's credential ({file: …} or {env: …}).
	Kubeconfig *FileRef `json:"kubeconfig,omitempty"`
	// ClientID is mode agent's client ID; "auto" (default) is generated once and
	// kept in fleet.lock.yaml.
	ClientID string `json:"clientID,omitempty"`
	TokenTTL string `json:"tokenTTL,omitempty"`
	// CACert is mode verrazzano's managed-cluster CA; empty means a well-known CA.
	CACert *FileRef `json:"caCert,omitempty"`
}
