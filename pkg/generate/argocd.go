package generate

// Argo CD's cluster Secret (docs/operator-manual/declarative-setup.md): the
// keys of its data and of the JSON in config.
const (
	argoCDAuthCommand = "argocd-k8s-auth"
	execAPIVersion    = "client.authentication.k8s.io/v1beta1"
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
