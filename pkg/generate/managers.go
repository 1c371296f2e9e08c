package generate

import (
	"encoding/base64"
	"encoding/json"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// registrar is what one entry of schema.Registrars renders for a cluster it
// registers: the files, at their paths under manager/ (place puts them in
// the Flux folder of the cluster that runs the manager when that is not the
// management cluster).
type registrar func(r *renderer, c *schema.Cluster, place func(layout.Kind, string) string) []layout.File

// registrars renders each entry of schema.Registrars, keyed by its name.
var registrars = map[string]registrar{
	"argocd":    (*renderer).argoCD,
	"kubefleet": (*renderer).kubeFleet,
	"sveltos":   (*renderer).sveltos,
	"ocm":       (*renderer).ocm,
}

// registrations renders every manager's registrations (schema.Registrars)
// and returns them with, per cluster of the fleet that runs a manager, the
// paths of the files in its Flux folder relative to that folder (for its
// kustomization.yaml with source.bootstrap none).
func (r *renderer) registrations() ([]layout.File, map[string][]string) {
	f := r.f
	var files []layout.File
	hosted := map[string][]string{}
	for i := range schema.Registrars {
		reg := &schema.Registrars[i]
		host, onManager := reg.Host(f), reg.OnManager(f)
		place := func(k layout.Kind, member string) string { return k.Placed(host, member, onManager) }
		for _, ci := range reg.Clusters(f) {
			for _, fl := range registrars[reg.Name](r, &f.Spec.Clusters[ci], place) {
				files = append(files, fl)
				if rel, ok := strings.CutPrefix(fl.Path, layout.ClusterDir(host)+"/"); ok && !onManager {
					hosted[host] = append(hosted[host], rel)
				}
			}
		}
	}
	for _, rels := range hosted {
		sort.Strings(rels)
	}
	return files, hosted
}

// argoCD renders the Argo CD cluster Secret cluster-<name> in Argo CD's
// namespace with name, server and config, and every label of the cluster
// (the ApplicationSet cluster generator selects by them). It holds no
// credential, so it is written readable, never sealed (SPEC §1): a reviewer
// sees which server and labels each one carries, and pkg/secrets' guard
// lets exactly this shape through (secrets.PublicArgoCDCluster).
func (r *renderer) argoCD(c *schema.Cluster, place func(layout.Kind, string) string) []layout.File {
	a := r.f.Spec.ArgoCD
	server, ca, ok := c.Server()
	if !ok {
		return nil // Validate refuses a selected cluster without a server
	}
	cfg := argoClusterConfig{
		ExecProviderConfig: argoExecProviderConfig{
			Command: argoCDAuthCommand, Args: []string{"azure"}, APIVersion: execAPIVersion,
			Env: map[string]string{"AAD_LOGIN_METHOD": "workloadidentity"},
		},
		TLSClientConfig: argoTLSClientConfig{CAData: ca},
	}
	if w := a.Auth.AzureWorkloadIdentity; w != nil {
		cfg.ExecProviderConfig.Env["AZURE_CLIENT_ID"] = w.ClientID
		if w.TenantID != "" {
			cfg.ExecProviderConfig.Env["AZURE_TENANT_ID"] = w.TenantID
		}
	}
	config, err := json.Marshal(cfg)
	if err != nil {
		r.encodeMu.Lock()
		if r.encodeErr == nil {
			r.encodeErr = err
		}
		r.encodeMu.Unlock()
		return nil
	}
	labels := make(map[string]string, len(c.Labels)+1)
	for k, v := range c.Labels {
		labels[k] = v
	}
	labels[schema.ArgoCDSecretTypeLabel] = "cluster"
	b64 := base64.StdEncoding.EncodeToString
	data := map[string]string{"name": b64([]byte(c.Name)), "server": b64([]byte(server)), "config": b64(config)}
	if shard, ok := r.argoCDShard(c.Name); ok {
		data["shard"] = b64([]byte(shard)) // the application-controller replica (shards.go)
	}
	return []layout.File{r.file(place(layout.ArgoCDCluster, c.Name), &secret{
		APIVersion: "v1", Kind: "Secret",
		Metadata: objectMeta{Name: schema.ArgoCDSecret(c.Name), Namespace: a.Namespace, Labels: labels},
		Type:     "Opaque",
		Data:     data,
	}, false)}
}

// kubeFleet renders the cluster's MemberCluster on the hub: its labels
// (placements select by them) and, as spec.identity, the member agent's
// Entra identity as the User the hub's API server sees, so that the hub
// agent grants that identity what the member agent needs: no token in Git.
func (r *renderer) kubeFleet(c *schema.Cluster, place func(layout.Kind, string) string) []layout.File {
	if c.Identity == nil || c.Identity.Azure == nil {
		return nil // Validate refuses a selected cluster without identity
	}
	return []layout.File{r.file(place(layout.KubeFleetMember, c.Name), &memberCluster{
		APIVersion: kubeFleetAPIVersion, Kind: "MemberCluster",
		Metadata: objectMeta{Name: c.Name, Labels: c.Labels},
		Spec: memberClusterSpec{Identity: subject{
			APIGroup: rbacAPIGroup, Kind: "User", Name: c.Identity.Azure.PrincipalID,
		}},
	}, false)}
}

// sveltosKubeconfigKey is the key of the kubeconfig in a SveltosCluster's
// Secret, named in the SveltosCluster so that Sveltos does not guess.
const sveltosKubeconfigKey = "kubeconfig"

// sveltos renders the cluster's SveltosCluster with its labels (Sveltos's
// ClusterProfiles select by them) and its kubeconfig Secret, a credential
// sealed like every other (SPEC §5), in SveltosNamespace. Only mode
// manager clusters get here: Validate refuses the others.
func (r *renderer) sveltos(c *schema.Cluster, place func(layout.Kind, string) string) []layout.File {
	if m := c.ModeOf(); m == nil || !m.Kubeconfig || c.Registration.Kubeconfig == nil {
		return nil
	}
	secretName := schema.SveltosKubeconfigSecret(c.Name)
	return []layout.File{
		r.file(place(layout.SveltosCluster, c.Name), &sveltosCluster{
			APIVersion: sveltosAPIVersion, Kind: "SveltosCluster",
			Metadata: objectMeta{Name: c.Name, Namespace: schema.SveltosNamespace, Labels: c.Labels},
			Spec:     sveltosClusterSpec{KubeconfigName: secretName, KubeconfigKeyName: sveltosKubeconfigKey},
		}, false),
		r.file(place(layout.SveltosKubeconfig, c.Name), &secret{
			APIVersion: "v1", Kind: "Secret",
			Metadata: objectMeta{Name: secretName, Namespace: schema.SveltosNamespace},
			Type:     "Opaque",
			Data:     map[string]string{sveltosKubeconfigKey: base64.StdEncoding.EncodeToString(c.Registration.Kubeconfig.Data)},
		}, true),
	}
}

// ocm renders the cluster's ManagedCluster on the hub, accepted
// (hubAcceptsClient: true) and with its labels (placements select by them)
// and, when known, its API server; and agents/<cluster>/klusterlet.yaml,
// the values of OCM's klusterlet chart: the cluster's name, its API server
// and the hub's bootstrap kubeconfig, everything but the token, which is
// added at install time as the fleet-agent's is.
func (r *renderer) ocm(c *schema.Cluster, place func(layout.Kind, string) string) []layout.File {
	b64 := base64.StdEncoding.EncodeToString
	spec := ocmManagedClusterSpec{HubAcceptsClient: true}
	var external []serverURL
	if server, ca, ok := c.Server(); ok {
		spec.ClientConfigs = []serverURL{{URL: server, CABundle: b64(ca)}}
		external = spec.ClientConfigs
	}
	hubServer, hubCA := r.ocmHub()
	values := &klusterletValues{
		Klusterlet:             klusterletSettings{ClusterName: c.Name, ExternalServerURLs: external},
		BootstrapHubKubeConfig: string(r.encode(nil, bootstrapKubeconfig(hubServer, b64(hubCA)))),
	}
	return []layout.File{
		r.file(place(layout.OCMCluster, c.Name), &ocmManagedCluster{
			APIVersion: ocmClusterAPIVersion, Kind: "ManagedCluster",
			Metadata: objectMeta{Name: c.Name, Labels: c.Labels},
			Spec:     spec,
		}, false),
		r.file(layout.KlusterletValues.Path(c.Name), values, false),
	}
}

// ocmHub returns where the klusterlets reach the OCM hub: the manager's
// API server, or the hub cluster's (Validate requires one).
func (r *renderer) ocmHub() (string, []byte) {
	f := r.f
	if reg := schema.LookupRegistrar("ocm"); reg.OnManager(f) {
		var ca []byte
		if f.Spec.Manager.APIServerCA != nil {
			ca = f.Spec.Manager.APIServerCA.Data
		}
		return f.Spec.Manager.APIServerURL, ca
	}
	for i := range f.Spec.Clusters {
		if c := &f.Spec.Clusters[i]; c.Name == f.Spec.OCM.Hub {
			server, ca, _ := c.Server()
			return server, ca
		}
	}
	return "", nil
}

// bootstrapKubeconfig is the klusterlet's bootstrap kubeconfig without its
// token: the hub's server and CA, and a user to add the token to
// (`users[0].user.token`, docs/agents.md).
func bootstrapKubeconfig(server, caData string) *kubeconfigFile {
	const name = "hub"
	k := &kubeconfigFile{
		APIVersion: "v1", Kind: "Config", CurrentContext: name,
		Clusters: []namedCluster{{Name: name, Cluster: kubeconfigCluster{Server: server, CertificateAuthorityData: caData}}},
		Contexts: []namedContext{{Name: name, Context: kubeconfigContext{Cluster: name, User: ocmBootstrapUser}}},
		Users:    []namedUser{{Name: ocmBootstrapUser, User: map[string]string{}}},
	}
	return k
}

// ocmBootstrapUser is the bootstrap kubeconfig's user, whose token the
// installer adds.
const ocmBootstrapUser = "bootstrap"

// Registrations returns the files that register f's clusters with the
// managers of schema.Registrars (Argo CD's cluster Secrets, KubeFleet's
// MemberClusters, …), exactly as Render writes them, without a lock: what
// targets and diff read the managers' view of the fleet from. f is loaded,
// defaulted and validated. Secrets are not sealed.
func Registrations(f *schema.Fleet) ([]layout.File, error) {
	r, err := newRenderer(f, lock.New(), DefaultOptions())
	if err != nil {
		return nil, err
	}
	files, _ := r.registrations()
	if r.encodeErr != nil {
		return nil, r.encodeErr
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}
