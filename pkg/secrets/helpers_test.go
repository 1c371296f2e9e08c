package secrets

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// testRecipient is the public side of testdata/age.agekey.
const (
	testRecipient  = "age18qe300jdlwrlvwscr8d7g0n84v9kskx2frruq54snz8rwjpsr54qf8m27z"
	otherRecipient = "age1x6x4gpdkfz354x8ust77ceykg4rvzkfzhslv5k8qh87ex3zcas9qmmemct"
	managerNS      = "fleet-default"
)

func readKey(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fakeKubeconfig returns a kubeconfig for cluster whose token and client key
// are the given markers (fake, high-entropy looking strings).
func fakeKubeconfig(cluster, token, keyMarker string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: %[1]s
clusters:
- name: %[1]s
  cluster:
    server: https://%[1]s.example.invalid:6443
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: admin
users:
- name: admin
  user:
    token: %[2]s
    client-key-data: %[3]s
`, cluster, token, base64.StdEncoding.EncodeToString([]byte("-----BEGIN EC PRIVATE KEY-----\n"+keyMarker+"\n-----END EC PRIVATE KEY-----\n"))))
}

// marshalFile encodes objects the way pkg/generate does: sigs.k8s.io/yaml
// (sorted keys, two-space indentation) after layout.Header, one document
// per object.
func marshalFile(t testing.TB, path string, secret bool, objs ...any) layout.File {
	t.Helper()
	var b strings.Builder
	b.WriteString(layout.Header)
	for i, o := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		y, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(y)
	}
	return layout.File{Path: path, Data: []byte(b.String()), Secret: secret}
}

// kubeconfigSecret is the manager-mode Secret generate emits for cluster.
func kubeconfigSecret(t testing.TB, cluster string, kubeconfig []byte) layout.File {
	t.Helper()
	return marshalFile(t, "manager/fleet/"+cluster+"/kubeconfig.yaml", true, map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":      cluster + "-kubeconfig",
			"namespace": managerNS,
			"labels":    map[string]string{"cluster.x-k8s.io/cluster-name": cluster},
		},
		"type": "cluster.x-k8s.io/secret",
		"data": map[string]string{"value": base64.StdEncoding.EncodeToString(kubeconfig)},
	})
}

// clusterFile is the Fleet Cluster generate emits beside a kubeconfig Secret;
// it mentions the Secret by name only.
func clusterFile(t testing.TB, cluster string) layout.File {
	t.Helper()
	return marshalFile(t, "manager/fleet/"+cluster+"/cluster.yaml", false, map[string]any{
		"apiVersion": "fleet.cattle.io/v1alpha1",
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": cluster, "namespace": managerNS, "labels": map[string]string{"env": "prod"}},
		"spec":       map[string]any{"kubeConfigSecret": cluster + "-kubeconfig"},
	})
}

// verrazzanoCAFile is the public CA Secret of a Verrazzano managed cluster.
func verrazzanoCAFile(t testing.TB, cluster string, pem string) layout.File {
	t.Helper()
	return marshalFile(t, "manager/verrazzano/"+cluster+"/ca-secret.yaml", false, map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   map[string]any{"name": "ca-secret-" + cluster, "namespace": "verrazzano-mc"},
		"data":       map[string]string{"cacrt": base64.StdEncoding.EncodeToString([]byte(pem))},
	})
}

func testSOPS(recipients ...string) *schema.SOPS {
	return &schema.SOPS{AgeRecipients: recipients}
}

// fleetFiles returns a small rendered tree with n manager-mode clusters.
func fleetFiles(t testing.TB, n int, kubeconfig func(cluster string) []byte) []layout.File {
	t.Helper()
	var files []layout.File
	for i := range n {
		c := fmt.Sprintf("prod-%d", i)
		files = append(files, clusterFile(t, c), kubeconfigSecret(t, c, kubeconfig(c)))
	}
	files = append(files, verrazzanoCAFile(t, "managed1", testCAPEM))
	return files
}

const testCAPEM = "-----BEGIN CERTIFICATE-----\nMIIBfakefakefakeCERTIFICATEonlyForTests\n-----END CERTIFICATE-----\n"
