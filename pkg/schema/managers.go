package schema

// KubeFleet registers the fleet's clusters with KubeFleet (Azure
// Kubernetes Fleet Manager): a MemberCluster on the hub per selected
// cluster, whose identity is the member agent's Entra identity
// (clusters[].identity), so registration needs no token in Git.
type KubeFleet struct {
	// Hub is the fleet cluster that is the hub. Default the manager.
	Hub string `json:"hub,omitempty"`
	// Selector picks the clusters (matchLabels); none means every cluster.
	Selector map[string]string `json:"selector,omitempty"`
}

// Sveltos registers the fleet's clusters with Sveltos (projectsveltos.io):
// a SveltosCluster and its kubeconfig Secret per selected cluster, in
// SveltosNamespace on the cluster that runs Sveltos.
type Sveltos struct {
	// Cluster is the fleet cluster that runs Sveltos. Default the manager.
	Cluster string `json:"cluster,omitempty"`
	// Selector picks the clusters (matchLabels); none means every cluster.
	Selector map[string]string `json:"selector,omitempty"`
}

// OCM registers the fleet's clusters with Open Cluster Management: an
// accepted ManagedCluster on the hub per selected cluster, and the
// klusterlet's Helm values (everything but the token) in agents/.
type OCM struct {
	// Hub is the fleet cluster that is the hub. Default the manager.
	Hub string `json:"hub,omitempty"`
	// Selector picks the clusters (matchLabels); none means every cluster.
	Selector map[string]string `json:"selector,omitempty"`
}

// Identity is a cluster's own identity (spec.clusters[].identity): what its
// agents authenticate to a hub as.
type Identity struct {
	Azure *AzureIdentity `json:"azure,omitempty"`
}

// AzureIdentity is an Entra ID identity, such as the managed identity of
// an AKS cluster's KubeFleet member agent.
type AzureIdentity struct {
	// PrincipalID is the identity's object (principal) ID, a GUID: the user
	// name the hub's API server sees.
	PrincipalID string `json:"principalID"`
}

// SveltosNamespace is where fleetgen puts SveltosClusters and their
// kubeconfig Secrets: the namespace Sveltos is installed in, which exists
// wherever it runs.
const SveltosNamespace = "projectsveltos"

// The names of the objects that register a cluster, one home for the
// renderer and for the check that no two of them collide.

// FleetKubeconfigSecret is the kubeconfig Secret of a mode manager or capi
// cluster in the Fleet workspace (cluster-api's name for it).
func FleetKubeconfigSecret(cluster string) string { return cluster + "-kubeconfig" }

// FleetToken is a mode agent cluster's ClusterRegistrationToken, and the
// Secret the Fleet controller mints for it.
func FleetToken(cluster string) string { return cluster + "-token" }

// VerrazzanoCASecret is a mode verrazzano cluster's CA Secret.
func VerrazzanoCASecret(cluster string) string { return "ca-secret-" + cluster }

// ArgoCDSecret is a cluster's Argo CD cluster Secret.
func ArgoCDSecret(cluster string) string { return "cluster-" + cluster }

// SveltosKubeconfigSecret is the kubeconfig Secret of a cluster's
// SveltosCluster: Sveltos's own convention, <cluster>-sveltos-kubeconfig.
func SveltosKubeconfigSecret(cluster string) string { return cluster + "-sveltos-kubeconfig" }

// Registrar is a manager that registers the fleet's clusters besides their
// registration mode: Argo CD, KubeFleet, Sveltos, OCM. Registrars is the
// one table of them; Default, Validate, Warnings, the JSON Schema, targets
// and pkg/generate (which renders each one's objects, keyed by Name) read
// it. Adding one is an entry here, its spec type, its render function in
// pkg/generate and its golden case.
type Registrar struct {
	// Name is its field under spec (spec.argocd), its folder in the output
	// tree (manager/argocd/) and its name in `fleetgen targets`.
	Name string
	// Title names it in messages: Argo CD.
	Title string
	// HostField is the field of spec.<Name> naming the cluster that runs
	// it: cluster or hub.
	HostField string
	// Object is what it makes of each cluster it registers, for messages.
	Object string
	// Namespace is where its objects go on its host, "" for cluster-scoped
	// objects; on the manager, manager/namespace.yaml declares it.
	Namespace func(s *Spec) string
	// placement returns its host field (for Default to fill in) and
	// selector; nil when the fleet does not use it.
	placement func(s *Spec) (host *string, selector map[string]string)
	// objects are the names of what registering c puts on the host,
	// besides the registration files (namespaces it makes there, Secrets):
	// for the collision check.
	objects func(f *Fleet, c *Cluster) []Object
}

// Registrars lists every Registrar, in the order targets names them.
var Registrars = []Registrar{
	{Name: "argocd", Title: "Argo CD", HostField: "cluster", Object: "cluster Secret",
		Namespace: func(s *Spec) string { return s.ArgoCD.Namespace },
		placement: func(s *Spec) (*string, map[string]string) {
			if s.ArgoCD == nil {
				return nil, nil
			}
			return &s.ArgoCD.Cluster, s.ArgoCD.Selector
		},
		objects: func(f *Fleet, c *Cluster) []Object {
			return []Object{{Kind: "Secret", Namespace: f.Spec.ArgoCD.Namespace, Name: ArgoCDSecret(c.Name), What: "Argo CD's cluster Secret"}}
		}},
	{Name: "kubefleet", Title: "KubeFleet", HostField: "hub", Object: "MemberCluster",
		Namespace: func(*Spec) string { return "" },
		placement: func(s *Spec) (*string, map[string]string) {
			if s.KubeFleet == nil {
				return nil, nil
			}
			return &s.KubeFleet.Hub, s.KubeFleet.Selector
		},
		objects: func(_ *Fleet, c *Cluster) []Object {
			return []Object{
				{Kind: "MemberCluster", Name: c.Name, What: "KubeFleet's MemberCluster"},
				{Kind: "Namespace", Name: "fleet-member-" + c.Name, What: "the namespace KubeFleet's hub makes", Made: true},
			}
		}},
	{Name: "sveltos", Title: "Sveltos", HostField: "cluster", Object: "SveltosCluster",
		Namespace: func(*Spec) string { return SveltosNamespace },
		placement: func(s *Spec) (*string, map[string]string) {
			if s.Sveltos == nil {
				return nil, nil
			}
			return &s.Sveltos.Cluster, s.Sveltos.Selector
		},
		objects: func(_ *Fleet, c *Cluster) []Object {
			return []Object{
				{Kind: "SveltosCluster", Namespace: SveltosNamespace, Name: c.Name, What: "Sveltos's SveltosCluster"},
				{Kind: "Secret", Namespace: SveltosNamespace, Name: SveltosKubeconfigSecret(c.Name), What: "Sveltos's kubeconfig Secret"},
			}
		}},
	{Name: "ocm", Title: "OCM", HostField: "hub", Object: "ManagedCluster",
		Namespace: func(*Spec) string { return "" },
		placement: func(s *Spec) (*string, map[string]string) {
			if s.OCM == nil {
				return nil, nil
			}
			return &s.OCM.Hub, s.OCM.Selector
		},
		objects: func(_ *Fleet, c *Cluster) []Object {
			return []Object{
				{Kind: "ManagedCluster", Name: c.Name, What: "OCM's ManagedCluster"},
				{Kind: "Namespace", Name: c.Name, What: "the namespace OCM's hub makes (and deletes with the ManagedCluster)", Made: true},
			}
		}},
}

// LookupRegistrar returns the Registrar called name, or nil.
func LookupRegistrar(name string) *Registrar {
	for i := range Registrars {
		if Registrars[i].Name == name {
			return &Registrars[i]
		}
	}
	return nil
}

// Used reports whether f sets spec.<r.Name>.
func (r *Registrar) Used(f *Fleet) bool {
	host, _ := r.placement(&f.Spec)
	return host != nil
}

// Host returns the cluster that runs r in f (the manager's name or a
// cluster's), "" when f does not use r.
func (r *Registrar) Host(f *Fleet) string {
	host, _ := r.placement(&f.Spec)
	if host == nil {
		return ""
	}
	return *host
}

// OnManager reports whether r runs on the management cluster, whose
// objects go under manager/; otherwise they go to the Flux folder of the
// cluster Host names.
func (r *Registrar) OnManager(f *Fleet) bool {
	return r.Host(f) == f.Spec.Manager.Name
}

// Selector returns spec.<r.Name>.selector (nil selects every cluster).
func (r *Registrar) Selector(f *Fleet) map[string]string {
	_, sel := r.placement(&f.Spec)
	return sel
}

// Clusters returns the indexes in spec.clusters of the clusters r
// registers, in input order; nil when f does not use r.
func (r *Registrar) Clusters(f *Fleet) []int {
	host, sel := r.placement(&f.Spec)
	if host == nil {
		return nil
	}
	var out []int
	for i := range f.Spec.Clusters {
		if Selects(sel, f.Spec.Clusters[i].Labels) {
			out = append(out, i)
		}
	}
	return out
}

// Field is the field path of r's spec: spec.argocd.
func (r *Registrar) Field() string { return "spec." + r.Name }

// Why says which selector selected the clusters r registers, for targets.
func (r *Registrar) Why(f *Fleet) string {
	if sel := r.Selector(f); len(sel) > 0 {
		return "selector " + labelList(sel)
	}
	return "every cluster"
}

func defaultRegistrars(s *Spec) {
	for i := range Registrars {
		if host, _ := Registrars[i].placement(s); host != nil && *host == "" {
			*host = s.Manager.Name // the management cluster runs it, as spec.argocd always assumed
		}
	}
}

// Object names one Kubernetes object that registering a cluster puts on the
// cluster that runs its manager: rendered by fleetgen, or made there by a
// controller (Made), for the check that no two collide.
type Object struct {
	Kind, Namespace, Name string
	// What says whose object it is: "Argo CD's cluster Secret".
	What string
	// Made: a controller makes it (a hub's per-cluster namespace, the
	// token Secret Fleet mints); fleetgen does not render it.
	Made bool
}

// ref is the object's namespace/name, or its name when it has no
// namespace.
func (o Object) ref() string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// emptyManager is a manager of f whose selector selects no cluster.
type emptyManager struct {
	EmptyManager
	path, field, title, object string
}

// emptyManagers lists, in Registrars order, the managers f uses whose
// selector selects no cluster, each with the label values that exist
// (LabelHint).
func (f *Fleet) emptyManagers() []emptyManager {
	var out []emptyManager
	if len(f.Spec.Clusters) == 0 {
		return out
	}
	all := make([]*Cluster, len(f.Spec.Clusters))
	for i := range f.Spec.Clusters {
		all[i] = &f.Spec.Clusters[i]
	}
	for i := range Registrars {
		r := &Registrars[i]
		if !r.Used(f) || len(r.Clusters(f)) > 0 {
			continue
		}
		out = append(out, emptyManager{EmptyManager: EmptyManager{Manager: r.Name, Why: LabelHint(r.Selector(f), all)},
			path: r.Field() + ".selector", field: r.Field(), title: r.Title, object: r.Object})
	}
	return out
}
