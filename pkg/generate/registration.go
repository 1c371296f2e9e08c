package generate

import (
	"encoding/base64"
	"fmt"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// mode is what one registration mode of schema.Modes renders: the objects
// for a cluster, and the files it needs once however many clusters use it.
// Its fields, checks, defaults and namespace are schema.Modes'.
type mode struct {
	// render returns the cluster's files; the error is an input problem.
	render func(r *renderer, i int, c *schema.Cluster) ([]layout.File, *problem.FieldError)
	// shared renders files the mode needs once per fleet; nil for none.
	shared func(r *renderer) []layout.File
}

// modes renders each entry of schema.Modes, keyed by its name.
var modes = map[string]mode{
	schema.ModeAgent:      {render: (*renderer).agent},
	schema.ModeManager:    {render: (*renderer).manager},
	schema.ModeCAPI:       {render: (*renderer).capi},
	schema.ModeVerrazzano: {render: (*renderer).verrazzano, shared: (*renderer).verrazzanoAdmin},
}

// agent: a ClusterRegistrationToken, a Cluster with the client ID and the
// labels, and the fleet-agent chart values.
func (r *renderer) agent(i int, c *schema.Cluster) ([]layout.File, *problem.FieldError) {
	f := r.f
	ns := f.Spec.Manager.Namespace
	clientID := c.Registration.ClientID
	if clientID == "auto" {
		id, ok := r.l.ClientID(c.Name)
		if !ok {
			return nil, r.f.At(problem.Other(fmt.Sprintf("spec.clusters[%d].registration.clientID", i),
				"cluster %s has clientID auto but %s has no client ID for it: `fleetgen render` generates one", c.Name, lock.FileName))
		}
		clientID = id
	}
	files := []layout.File{
		r.file(layout.FleetToken.Path(c.Name), &registrationToken{
			APIVersion: fleetAPIVersion, Kind: "ClusterRegistrationToken",
			Metadata: objectMeta{Name: schema.FleetToken(c.Name), Namespace: ns},
			Spec:     registrationTokenSpec{TTL: c.Registration.TokenTTL},
		}, false),
		r.file(layout.FleetCluster.Path(c.Name), &fleetCluster{
			APIVersion: fleetAPIVersion, Kind: "Cluster",
			Metadata: objectMeta{Name: c.Name, Namespace: ns, Labels: r.fleetLabels(c)},
			Spec:     withAgent(fleetClusterSpec{ClientID: clientID}, c),
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
		TokenName:        schema.FleetToken(c.Name),
		Image:            r.agentImage,
		FleetAgent:       agentChartValues(c),
	}
	if ca := f.Spec.Manager.APIServerCA; ca != nil {
		values.APIServerCA = string(ca.Data)
	}
	return append(files, r.file(layout.AgentValues.Path(c.Name), values, false)), nil
}

// manager: the kubeconfig Secret in cluster-api format and a Cluster that
// names it.
func (r *renderer) manager(_ int, c *schema.Cluster) ([]layout.File, *problem.FieldError) {
	ns := r.f.Spec.Manager.Namespace
	secretName := schema.FleetKubeconfigSecret(c.Name)
	var kubeconfig []byte
	if c.Registration.Kubeconfig != nil {
		kubeconfig = c.Registration.Kubeconfig.Data
	}
	return []layout.File{
		r.file(layout.FleetKubeconfig.Path(c.Name), &secret{
			APIVersion: "v1", Kind: "Secret",
			Metadata: objectMeta{Name: secretName, Namespace: ns, Labels: map[string]string{capiClusterName: c.Name}},
			Type:     capiSecretType,
			Data:     map[string]string{"value": base64.StdEncoding.EncodeToString(kubeconfig)},
		}, true),
		r.file(layout.FleetCluster.Path(c.Name), &fleetCluster{
			APIVersion: fleetAPIVersion, Kind: "Cluster",
			Metadata: objectMeta{Name: c.Name, Namespace: ns, Labels: r.fleetLabels(c)},
			Spec:     withAgent(fleetClusterSpec{KubeConfigSecret: secretName}, c),
		}, false),
	}, nil
}

// capi: a Cluster naming the kubeconfig Secret cluster-api already made.
func (r *renderer) capi(_ int, c *schema.Cluster) ([]layout.File, *problem.FieldError) {
	return []layout.File{r.file(layout.FleetCluster.Path(c.Name), &fleetCluster{
		APIVersion: fleetAPIVersion, Kind: "Cluster",
		Metadata: objectMeta{Name: c.Name, Namespace: r.f.Spec.Manager.Namespace, Labels: r.fleetLabels(c)},
		Spec:     withAgent(fleetClusterSpec{KubeConfigSecret: schema.FleetKubeconfigSecret(c.Name)}, c),
	}, false)}, nil
}

// verrazzano: a VerrazzanoManagedCluster and its CA Secret.
func (r *renderer) verrazzano(_ int, c *schema.Cluster) ([]layout.File, *problem.FieldError) {
	caName := schema.VerrazzanoCASecret(c.Name)
	var ca []byte
	if c.Registration.CACert != nil {
		ca = c.Registration.CACert.Data
	}
	return []layout.File{
		r.file(layout.VerrazzanoCluster.Path(c.Name), &managedCluster{
			APIVersion: verrazzanoAPIVersion, Kind: "VerrazzanoManagedCluster",
			Metadata: objectMeta{Name: c.Name, Namespace: schema.VerrazzanoNamespace},
			Spec:     managedClusterSpec{CASecret: caName},
		}, false),
		// A CA certificate is public: this Secret is not a credential.
		r.file(layout.VerrazzanoCA.Path(c.Name), &secret{
			APIVersion: "v1", Kind: "Secret",
			Metadata: objectMeta{Name: caName, Namespace: schema.VerrazzanoNamespace},
			Data:     map[string]string{"cacrt": base64.StdEncoding.EncodeToString(ca)},
		}, false),
	}, nil
}

// verrazzanoAdmin is the ConfigMap every managed cluster's registration
// reads the admin cluster's API server from.
func (r *renderer) verrazzanoAdmin() []layout.File {
	return []layout.File{r.file(layout.VerrazzanoAdmin.Path(), &configMap{
		APIVersion: "v1", Kind: "ConfigMap",
		Metadata: objectMeta{Name: adminConfigMapName, Namespace: schema.VerrazzanoNamespace},
		Data:     map[string]string{"server": r.f.Spec.Manager.APIServerURL},
	}, false)}
}
