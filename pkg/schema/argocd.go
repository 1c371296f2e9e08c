package schema

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strings"

	"sigs.k8s.io/yaml"
)

// ArgoCD registers the fleet's clusters with Argo CD (spec.argocd): one
// cluster Secret (argocd.argoproj.io/secret-type: cluster) per selected
// cluster, in Namespace on the cluster that runs Argo CD, holding its name,
// server, CA and an exec provider that authenticates at run time: no static
// credential in Git, so the Secrets are written readable, never sealed.
type ArgoCD struct {
	// Namespace is Argo CD's namespace. Default "argocd".
	Namespace string `json:"namespace,omitempty"`
	// Cluster is the fleet cluster that runs this Argo CD: its Secrets go
	// to that cluster's Flux folder. Default the manager (manager/argocd/).
	Cluster string `json:"cluster,omitempty"`
	// Selector picks the clusters (matchLabels); none means every cluster.
	Selector map[string]string `json:"selector,omitempty"`
	// Auth is how Argo CD authenticates to each cluster.
	Auth ArgoCDAuth `json:"auth"`
}

// ArgoCDAuth is how Argo CD authenticates; exactly one method.
type ArgoCDAuth struct {
	// AzureWorkloadIdentity: argocd-k8s-auth azure with
	// AAD_LOGIN_METHOD=workloadidentity, the federated token of Argo CD's own
	// service accounts (the workload identity webhook mounts it).
	AzureWorkloadIdentity *AzureWorkloadIdentity `json:"azureWorkloadIdentity,omitempty"`
}

// AzureWorkloadIdentity names the Entra ID application Argo CD's service
// accounts are federated with.
type AzureWorkloadIdentity struct {
	ClientID string `json:"clientID"`
	// TenantID is optional: the workload identity webhook injects it.
	TenantID string `json:"tenantID,omitempty"`
}

// APIServer is how managers other than Fleet reach a cluster
// (spec.clusters[].apiServer): its API server URL and CA (PEM; none means
// a well-known CA). Mode manager clusters read both from their kubeconfig.
type APIServer struct {
	URL string   `json:"url"`
	CA  *FileRef `json:"ca,omitempty"`
}

// ArgoCDSecretTypeLabel marks an Argo CD cluster Secret; the ApplicationSet
// cluster generator selects by it and by the cluster's labels.
const ArgoCDSecretTypeLabel = "argocd.argoproj.io/secret-type"

func defaultArgoCD(s *Spec) {
	if s.ArgoCD != nil && s.ArgoCD.Namespace == "" {
		s.ArgoCD.Namespace = "argocd" // where Argo CD's install manifests put it
	}
}

// ArgoCDClusters returns the indexes in spec.clusters of the clusters
// spec.argocd selects, in input order; nil without spec.argocd.
func (f *Fleet) ArgoCDClusters() []int {
	return LookupRegistrar("argocd").Clusters(f)
}

// Server returns how managers other than Fleet reach c: its API server URL
// and CA certificates (PEM; nil for a well-known CA). Mode manager reads
// them, and nothing else, from the kubeconfig's current context; other
// modes from apiServer. ok is false when c has none (or its kubeconfig does
// not parse: Validate reports it).
func (c *Cluster) Server() (server string, ca []byte, ok bool) {
	if m := c.ModeOf(); m != nil && m.Kubeconfig {
		if c.Registration.Kubeconfig == nil {
			return "", nil, false
		}
		s, ca, err := kubeconfigServer(c.Registration.Kubeconfig.Data)
		if err != nil {
			return "", nil, false
		}
		return s, ca, true
	}
	if c.APIServer == nil || c.APIServer.URL == "" {
		return "", nil, false
	}
	if c.APIServer.CA != nil {
		ca = c.APIServer.CA.Data
	}
	return c.APIServer.URL, ca, true
}

// kubeconfigServer reads the server and CA of a kubeconfig's current
// context. It reads no credential, and its errors quote nothing of the
// file.
func kubeconfigServer(data []byte) (string, []byte, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return "", nil, errors.New("kubeconfig is not valid YAML")
	}
	var kc kubeconfig
	if err := json.Unmarshal(js, &kc); err != nil {
		return "", nil, errors.New("kubeconfig is not a kubeconfig")
	}
	clusterName := ""
	for _, c := range kc.Contexts {
		if c.Name == kc.CurrentContext && c.Context != nil {
			clusterName = c.Context.Cluster
			break
		}
	}
	for _, c := range kc.Clusters {
		if c.Name != clusterName || c.Cluster == nil {
			continue
		}
		var ca []byte
		if d := c.Cluster.CertificateAuthorityData; d != "" {
			ca, err = base64.StdEncoding.DecodeString(d)
			if err != nil {
				return "", nil, errors.New("the current context's certificate-authority-data is not base64")
			}
		}
		return c.Cluster.Server, ca, nil
	}
	return "", nil, errors.New("the kubeconfig's current context names no cluster")
}

// serverKey is how Argo CD tells clusters apart: by server URL. Scheme and
// host compare without case, and a trailing slash does not count.
func serverKey(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	return strings.TrimSuffix(u.String(), "/")
}
