package generate

import (
	"encoding/base64"
	"encoding/json"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Argo CD's cluster Secret (docs/operator-manual/declarative-setup.md): the
// keys of its data and of the JSON in config.
const (
	argoCDSecretPrefix = "cluster-"
	argoCDAuthCommand  = "argocd-k8s-auth"
	execAPIVersion     = "client.authentication.k8s.io/v1beta1"
)

// argoClusterConfig is the config key of an Argo CD cluster Secret (Argo
// CD's ClusterConfig), with what fleetgen sets: an exec provider and the
// CA, never a token, password or key.
type argoClusterConfig struct {
	ExecProviderConfig argoExecProviderConfig `json:"execProviderConfig"`
	TLSClientConfig    argoTLSClientConfig    `json:"tlsClientConfig"`
}

type argoExecProviderConfig struct {
	Command    string            `json:"command"`
	Args       []string          `json:"args"`
	Env        map[string]string `json:"env"`
	APIVersion string            `json:"apiVersion"`
}

type argoTLSClientConfig struct {
	Insecure bool `json:"insecure"`
	// CAData is PEM; encoding/json writes it base64, as Argo CD reads it.
	CAData []byte `json:"caData,omitempty"`
}

// argoCD renders manager/argocd/<cluster>.yaml for every cluster
// spec.argocd selects: the Secret cluster-<name> in Argo CD's namespace
// with name, server and config, and every label of the cluster (the
// ApplicationSet cluster generator selects by them). It holds no
// credential; it is sealed like every Secret when spec.encryption is set
// (SPEC §5), and pkg/secrets' guard lets it through in plaintext otherwise.
func (r *renderer) argoCD() []layout.File {
	f := r.f
	a := f.Spec.ArgoCD
	if a == nil {
		return nil
	}
	sealed := f.Spec.Encryption != nil && f.Spec.Encryption.SOPS != nil
	var files []layout.File
	for _, i := range f.ArgoCDClusters() {
		c := &f.Spec.Clusters[i]
		server, ca, ok := c.Server()
		if !ok {
			continue // Validate refuses a selected cluster without a server
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
			continue
		}
		labels := make(map[string]string, len(c.Labels)+1)
		for k, v := range c.Labels {
			labels[k] = v
		}
		labels[schema.ArgoCDSecretTypeLabel] = "cluster"
		b64 := base64.StdEncoding.EncodeToString
		files = append(files, r.file(layout.ArgoCDCluster.Path(c.Name), &secret{
			APIVersion: "v1", Kind: "Secret",
			Metadata: objectMeta{Name: argoCDSecretPrefix + c.Name, Namespace: a.Namespace, Labels: labels},
			Type:     "Opaque",
			Data:     map[string]string{"name": b64([]byte(c.Name)), "server": b64([]byte(server)), "config": b64(config)},
		}, sealed))
	}
	return files
}
