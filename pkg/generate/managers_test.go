package generate_test

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/layout"
)

// TestKlusterletValues: each klusterlet's values carry a bootstrap
// kubeconfig that client-go loads, naming the hub's server and CA and no
// credential (the installer adds the token), and the cluster's name.
func TestKlusterletValues(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"registrations", "registrations-hosted"} {
		c := loadCase(t, name)
		n := 0
		for _, f := range renderCase(t, c) {
			lp := layout.Parse(f.Path)
			if lp.Kind != layout.KlusterletValues {
				continue
			}
			n++
			var v struct {
				Klusterlet struct {
					ClusterName string `json:"clusterName"`
				} `json:"klusterlet"`
				BootstrapHubKubeConfig string `json:"bootstrapHubKubeConfig"`
			}
			if err := yaml.Unmarshal(f.Data, &v); err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
			if v.Klusterlet.ClusterName != lp.Cluster {
				t.Errorf("%s: clusterName %q", f.Path, v.Klusterlet.ClusterName)
			}
			cfg, err := clientcmd.Load([]byte(v.BootstrapHubKubeConfig))
			if err != nil {
				t.Fatalf("%s: bootstrap kubeconfig: %v", f.Path, err)
			}
			ctx := cfg.Contexts[cfg.CurrentContext]
			if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
				t.Fatalf("%s: the current context names no cluster or user", f.Path)
			}
			hub := cfg.Clusters[ctx.Cluster]
			wantServer := "https://fleet.contoso.example:6443"
			if name == "registrations-hosted" {
				wantServer = "https://hub-1.contoso.example:6443"
			}
			if hub.Server != wantServer || !strings.Contains(string(hub.CertificateAuthorityData), "BEGIN CERTIFICATE") {
				t.Errorf("%s: hub %s with CA %d bytes, want %s and its CA", f.Path, hub.Server, len(hub.CertificateAuthorityData), wantServer)
			}
			if u := cfg.AuthInfos[ctx.AuthInfo]; u.Token != "" || u.TokenFile != "" || len(u.ClientKeyData) > 0 || u.Exec != nil || u.Password != "" {
				t.Errorf("%s: the bootstrap user carries a credential", f.Path)
			}
		}
		if n == 0 {
			t.Errorf("%s renders no klusterlet values", name)
		}
	}
}
