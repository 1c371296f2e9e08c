package generate

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// mode is everything one registration mode contributes to the output: the
// objects it renders for a cluster, the manager namespace they go in, and
// files it needs once however many clusters use it. Adding a mode (Argo CD
// or Sveltos cluster Secrets) is one entry in modes plus its golden case.
type mode struct {
	// render returns the cluster's files; the error is an input problem.
	render func(r *renderer, i int, c *schema.Cluster) ([]File, *schema.FieldError)
	// namespace is the manager namespace the mode's objects live in.
	namespace func(f *schema.Fleet) string
	// shared renders files the mode needs once per fleet; nil for none.
	shared func(r *renderer) []File
}

// modes is the one table of registration modes, keyed by
// spec.clusters[].registration.mode.
var modes = map[string]mode{
	schema.ModeAgent:      {render: (*renderer).agent, namespace: fleetWorkspace},
	schema.ModeManager:    {render: (*renderer).manager, namespace: fleetWorkspace},
	schema.ModeCAPI:       {render: (*renderer).capi, namespace: fleetWorkspace},
	schema.ModeVerrazzano: {render: (*renderer).verrazzano, namespace: verrazzanoMC, shared: (*renderer).verrazzanoAdmin},
}

// modeNames lists the modes for messages: "agent, capi, manager or verrazzano".
func modeNames() string {
	names := make([]string, 0, len(modes))
	for m := range modes {
		names = append(names, m)
	}
	sort.Strings(names)
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func fleetWorkspace(f *schema.Fleet) string { return f.Spec.Manager.Namespace }
func verrazzanoMC(*schema.Fleet) string     { return verrazzanoNamespace }

func fleetDir(c *schema.Cluster) string { return "manager/fleet/" + c.Name + "/" }

// agent: a ClusterRegistrationToken, a Cluster with the client ID and the
// labels, and the fleet-agent chart values.
func (r *renderer) agent(i int, c *schema.Cluster) ([]File, *schema.FieldError) {
	f := r.f
	ns := f.Spec.Manager.Namespace
	clientID := c.Registration.ClientID
	if clientID == "auto" {
		id, ok := r.l.ClientID(c.Name)
		if !ok {
			return nil, r.fieldErr(fmt.Sprintf("spec.clusters[%d].registration.clientID", i),
				fmt.Sprintf("cluster %s has clientID auto but %s has no client ID for it: `fleetgen render` generates one", c.Name, lock.FileName))
		}
		clientID = id
	}
	files := []File{
		r.file(fleetDir(c)+"token.yaml", &registrationToken{
			APIVersion: fleetAPIVersion, Kind: "ClusterRegistrationToken",
			Metadata: objectMeta{Name: c.Name + "-token", Namespace: ns},
			Spec:     registrationTokenSpec{TTL: c.Registration.TokenTTL},
		}, false),
		r.file(fleetDir(c)+"cluster.yaml", &fleetCluster{
			APIVersion: fleetAPIVersion, Kind: "Cluster",
			Metadata: objectMeta{Name: c.Name, Namespace: ns, Labels: c.Labels},
			Spec:     fleetClusterSpec{ClientID: clientID},
		}, false),
	}
	if r.agentImageErr != nil {
		return files, r.agentImageErr // deduplicated with the other clusters'
	}
	// Everything the chart needs but the token, which the Fleet controller
	// mints into the Secret <cluster>-token (key values) together with values
	// of its own; these come last on the helm command line and win.
	values := &agentValues{
		APIServerURL:     f.Spec.Manager.APIServerURL,
		ClientID:         clientID,
		ClusterNamespace: ns,
		TokenName:        c.Name + "-token",
		Image:            r.agentImage,
	}
	if ca := f.Spec.Manager.APIServerCA; ca != nil {
		values.APIServerCA = string(ca.Data)
	}
	return append(files, r.file("agents/"+c.Name+"/values.yaml", values, false)), nil
}

// manager: the kubeconfig Secret in cluster-api format and a Cluster that
// names it.
func (r *renderer) manager(_ int, c *schema.Cluster) ([]File, *schema.FieldError) {
	ns := r.f.Spec.Manager.Namespace
	secretName := c.Name + "-kubeconfig"
	var kubeconfig []byte
	if c.Registration.Kubeconfig != nil {
		kubeconfig = c.Registration.Kubeconfig.Data
	}
	return []File{
		r.file(fleetDir(c)+"kubeconfig.yaml", &secret{
			APIVersion: "v1", Kind: "Secret",
			Metadata: objectMeta{Name: secretName, Namespace: ns, Labels: map[string]string{capiClusterName: c.Name}},
			Type:     capiSecretType,
			Data:     map[string]string{"value": base64.StdEncoding.EncodeToString(kubeconfig)},
		}, true),
		r.file(fleetDir(c)+"cluster.yaml", &fleetCluster{
			APIVersion: fleetAPIVersion, Kind: "Cluster",
			Metadata: objectMeta{Name: c.Name, Namespace: ns, Labels: c.Labels},
			Spec:     fleetClusterSpec{KubeConfigSecret: secretName},
		}, false),
	}, nil
}

// capi: a Cluster naming the kubeconfig Secret cluster-api already made.
func (r *renderer) capi(_ int, c *schema.Cluster) ([]File, *schema.FieldError) {
	return []File{r.file(fleetDir(c)+"cluster.yaml", &fleetCluster{
		APIVersion: fleetAPIVersion, Kind: "Cluster",
		Metadata: objectMeta{Name: c.Name, Namespace: r.f.Spec.Manager.Namespace, Labels: c.Labels},
		Spec:     fleetClusterSpec{KubeConfigSecret: c.Name + "-kubeconfig"},
	}, false)}, nil
}

// verrazzano: a VerrazzanoManagedCluster and its CA Secret.
func (r *renderer) verrazzano(_ int, c *schema.Cluster) ([]File, *schema.FieldError) {
	dir := "manager/verrazzano/" + c.Name + "/"
	caName := "ca-secret-" + c.Name
	var ca []byte
	if c.Registration.CACert != nil {
		ca = c.Registration.CACert.Data
	}
	return []File{
		r.file(dir+"vmc.yaml", &managedCluster{
			APIVersion: verrazzanoAPIVersion, Kind: "VerrazzanoManagedCluster",
			Metadata: objectMeta{Name: c.Name, Namespace: verrazzanoNamespace},
			Spec:     managedClusterSpec{CASecret: caName},
		}, false),
		// A CA certificate is public: this Secret is not a credential.
		r.file(dir+"ca-secret.yaml", &secret{
			APIVersion: "v1", Kind: "Secret",
			Metadata: objectMeta{Name: caName, Namespace: verrazzanoNamespace},
			Data:     map[string]string{"cacrt": base64.StdEncoding.EncodeToString(ca)},
		}, false),
	}, nil
}

// verrazzanoAdmin is the ConfigMap every managed cluster's registration
// reads the admin cluster's API server from.
func (r *renderer) verrazzanoAdmin() []File {
	return []File{r.file("manager/verrazzano/admin-cluster.yaml", &configMap{
		APIVersion: "v1", Kind: "ConfigMap",
		Metadata: objectMeta{Name: adminConfigMapName, Namespace: verrazzanoNamespace},
		Data:     map[string]string{"server": r.f.Spec.Manager.APIServerURL},
	}, false)}
}
