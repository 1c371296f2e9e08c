package generate_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// Argo CD's cluster Secret as its documentation and types say
// (docs/operator-manual/declarative-setup.md, "Clusters" and "AKS";
// pkg/apis/application/v1alpha1 ClusterConfig): every key it reads.
var (
	argoSecretKeys = []string{"name", "server", "config", "namespaces", "clusterResources", "project"}
	// The AKS section's environment variables of argocd-k8s-auth azure.
	argoAzureEnv = []string{
		"AAD_LOGIN_METHOD", "AAD_SERVICE_PRINCIPAL_CLIENT_CERTIFICATE", "AAD_SERVICE_PRINCIPAL_CLIENT_ID",
		"AAD_SERVICE_PRINCIPAL_CLIENT_SECRET", "AAD_USER_PRINCIPAL_NAME", "AAD_USER_PRINCIPAL_PASSWORD",
		"AZURE_TENANT_ID", "AZURE_AUTHORITY_HOST", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_CLIENT_ID",
		"AAD_ENVIRONMENT_NAME", "AAD_SERVER_APPLICATION_ID",
	}
	// The documentation's workload identity example, its comments left out.
	argoDocExample = `{
  "execProviderConfig": {
    "command": "argocd-k8s-auth",
    "env": {
      "AAD_ENVIRONMENT_NAME": "AzurePublicCloud",
      "AZURE_CLIENT_ID": "fill in client id",
      "AZURE_TENANT_ID": "fill in tenant id",
      "AZURE_FEDERATED_TOKEN_FILE": "/opt/path/to/federated_file.json",
      "AZURE_AUTHORITY_HOST": "https://login.microsoftonline.com/",
      "AAD_LOGIN_METHOD": "workloadidentity"
    },
    "args": ["azure"],
    "apiVersion": "client.authentication.k8s.io/v1beta1"
  },
  "tlsClientConfig": {
    "insecure": false,
    "caData": "PGJhc2U2NCBlbmNvZGVkIGNlcnRpZmljYXRlPg=="
  }
}`
)

// argoClusterConfig is Argo CD's ClusterConfig (v1alpha1), every field.
type argoClusterConfig struct {
	Username        string `json:"username,omitempty"`
	Password        string `json:"password,omitempty"`
	BearerToken     string `json:"bearerToken,omitempty"`
	TLSClientConfig struct {
		Insecure   bool   `json:"insecure"`
		ServerName string `json:"serverName,omitempty"`
		CertData   []byte `json:"certData,omitempty"`
		KeyData    []byte `json:"keyData,omitempty"`
		CAData     []byte `json:"caData,omitempty"`
	} `json:"tlsClientConfig"`
	AWSAuthConfig *struct {
		ClusterName string `json:"clusterName,omitempty"`
		RoleARN     string `json:"roleARN,omitempty"`
		Profile     string `json:"profile,omitempty"`
	} `json:"awsAuthConfig,omitempty"`
	ExecProviderConfig *struct {
		Command     string            `json:"command,omitempty"`
		Args        []string          `json:"args,omitempty"`
		Env         map[string]string `json:"env,omitempty"`
		APIVersion  string            `json:"apiVersion,omitempty"`
		InstallHint string            `json:"installHint,omitempty"`
	} `json:"execProviderConfig,omitempty"`
	DisableCompression bool   `json:"disableCompression,omitempty"`
	ProxyURL           string `json:"proxyUrl,omitempty"`
}

func strictJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Fatalf("config does not decode strictly into Argo CD's ClusterConfig: %v", err)
	}
}

// jsonKeys lists the keys of a JSON object, and of its objects, as paths.
func jsonKeys(t *testing.T, b []byte) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(p string, m map[string]any)
	walk = func(p string, m map[string]any) {
		for k, v := range m {
			if p == "execProviderConfig.env" {
				continue // names, checked against the documented table
			}
			out = append(out, p+k)
			if sub, ok := v.(map[string]any); ok {
				walk(p+k+".", sub)
			}
		}
	}
	walk("", m)
	sort.Strings(out)
	return out
}

type argoSecret struct {
	Name    string
	Labels  map[string]string
	Data    map[string][]byte
	cluster *schema.Cluster
}

func renderedArgoSecrets(t *testing.T) (*schema.Fleet, []argoSecret) {
	t.Helper()
	c := loadCase(t, "managers")
	var out []argoSecret
	for _, f := range renderCase(t, c) {
		if !strings.HasPrefix(f.Path, "manager/argocd/") {
			continue
		}
		var s struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Data map[string][]byte `json:"data"`
		}
		if err := yaml.Unmarshal(f.Data, &s); err != nil { // strictly: TestRenderedObjectsValidate
			t.Fatalf("%s: %v", f.Path, err)
		}
		out = append(out, argoSecret{Name: s.Metadata.Name, Labels: s.Metadata.Labels, Data: s.Data})
	}
	if len(out) < 2 {
		t.Fatalf("the managers case renders %d Argo CD Secrets, want several", len(out))
	}
	return c.fleet, out
}

// TestArgoCDSecretFormat: each Secret carries the keys Argo CD documents
// and nothing else, its config decodes strictly into Argo CD's
// ClusterConfig, uses the documented keys of the AKS workload identity
// example, and holds no credential.
func TestArgoCDSecretFormat(t *testing.T) {
	t.Parallel()
	f, secrets := renderedArgoSecrets(t)
	byName := map[string]*schema.Cluster{}
	for i := range f.Spec.Clusters {
		byName[f.Spec.Clusters[i].Name] = &f.Spec.Clusters[i]
	}
	docKeys := jsonKeys(t, []byte(argoDocExample))
	for _, s := range secrets {
		for k := range s.Data {
			if !slices.Contains(argoSecretKeys, k) {
				t.Errorf("%s: data.%s is no key Argo CD reads (%v)", s.Name, k, argoSecretKeys)
			}
		}
		c := byName[string(s.Data["name"])]
		if c == nil {
			t.Fatalf("%s: data.name %q is no cluster of the fleet", s.Name, s.Data["name"])
		}
		server, ca, _ := c.Server()
		if string(s.Data["server"]) != server || server == "" {
			t.Errorf("%s: data.server %q, want the cluster's API server %q", s.Name, s.Data["server"], server)
		}
		if s.Labels["argocd.argoproj.io/secret-type"] != "cluster" {
			t.Errorf("%s: not labelled as an Argo CD cluster Secret", s.Name)
		}
		for k, v := range c.Labels {
			if s.Labels[k] != v {
				t.Errorf("%s: label %s=%s of the cluster is missing", s.Name, k, v)
			}
		}
		var cfg argoClusterConfig
		strictJSON(t, s.Data["config"], &cfg)
		if cfg.Username != "" || cfg.Password != "" || cfg.BearerToken != "" || cfg.TLSClientConfig.KeyData != nil || cfg.TLSClientConfig.CertData != nil || cfg.AWSAuthConfig != nil {
			t.Errorf("%s: config holds a credential", s.Name)
		}
		e := cfg.ExecProviderConfig
		if e == nil || e.Command != "argocd-k8s-auth" || !slices.Equal(e.Args, []string{"azure"}) || e.APIVersion != "client.authentication.k8s.io/v1beta1" {
			t.Fatalf("%s: execProviderConfig %+v, want argocd-k8s-auth azure (client.authentication.k8s.io/v1beta1)", s.Name, e)
		}
		w := f.Spec.ArgoCD.Auth.AzureWorkloadIdentity
		if e.Env["AAD_LOGIN_METHOD"] != "workloadidentity" || e.Env["AZURE_CLIENT_ID"] != w.ClientID || e.Env["AZURE_TENANT_ID"] != w.TenantID {
			t.Errorf("%s: env %v, want workload identity with the client and tenant of spec.argocd", s.Name, e.Env)
		}
		for k := range e.Env {
			if !slices.Contains(argoAzureEnv, k) {
				t.Errorf("%s: env %s is no variable argocd-k8s-auth azure reads", s.Name, k)
			}
		}
		if !bytes.Equal(cfg.TLSClientConfig.CAData, ca) || cfg.TLSClientConfig.Insecure {
			t.Errorf("%s: tlsClientConfig: caData is not the cluster's CA, or insecure", s.Name)
		}
		for _, k := range jsonKeys(t, s.Data["config"]) {
			if !slices.Contains(docKeys, k) {
				t.Errorf("%s: config key %s is not in the documented example (%v)", s.Name, k, docKeys)
			}
		}
	}
}

// TestArgoCDClusterGenerator: an ApplicationSet cluster generator's label
// selector (it lists the Secrets labelled argocd.argoproj.io/secret-type:
// cluster that also match its selector) picks, among the rendered Secrets,
// exactly the clusters fleet.yaml's labels select, for every selector made
// of the fleet's own labels.
func TestArgoCDClusterGenerator(t *testing.T) {
	t.Parallel()
	f, secrets := renderedArgoSecrets(t)
	selectors := []map[string]string{{}}
	for _, c := range f.Spec.Clusters {
		for k, v := range c.Labels {
			selectors = append(selectors, map[string]string{k: v})
		}
		selectors = append(selectors, maps.Clone(c.Labels))
	}
	for _, sel := range selectors {
		ls, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: sel})
		if err != nil {
			t.Fatal(err)
		}
		isCluster := labels.SelectorFromSet(labels.Set{"argocd.argoproj.io/secret-type": "cluster"})
		var got, want []string
		for _, s := range secrets {
			if isCluster.Matches(labels.Set(s.Labels)) && ls.Matches(labels.Set(s.Labels)) {
				got = append(got, string(s.Data["name"]))
			}
		}
		for _, i := range f.ArgoCDClusters() {
			if c := &f.Spec.Clusters[i]; schema.Selects(sel, c.Labels) {
				want = append(want, c.Name)
			}
		}
		sort.Strings(got)
		sort.Strings(want)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("selector %v (-fleet.yaml +Argo CD):\n%s", sel, d)
		}
	}
}
