package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// readmeSample returns the YAML block under the README's "fleet.yaml in one
// screen" heading.
func readmeSample(t *testing.T) []byte {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\n## fleet.yaml in one screen\n\n```yaml\n(.*?)\n```\n").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md: no ```yaml block under \"## fleet.yaml in one screen\"")
	}
	return append(m[1], '\n')
}

// TestReadmeSample validates the README's sample as printed; the test supplies
// the files it names: the quickstart's fake certificates and kubeconfig, a
// one-ConfigMap folder for each layer path, and the lock `fleetgen mirror`
// would write for the fleet-agent image.
func TestReadmeSample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string][]byte{
		"fleet.yaml": readmeSample(t),
		"fleet.lock.yaml": []byte("apiVersion: fleetgen.dev/v1alpha1\nkind: Lock\nimages:\n" +
			"  - source: docker.io/rancher/fleet-agent:v0.16.1\n" +
			"    target: quickstart.azurecr.io/rancher/fleet-agent:v0.16.1\n" +
			"    digest: sha256:1111111111111111111111111111111111111111111111111111111111111111\n"),
	}
	for _, f := range []string{"certs/manager-ca.pem", "certs/managed1-ca.pem", "kubeconfigs/prod-eu-1.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "quickstart", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
	}
	for _, layer := range []string{"infrastructure/prod", "infrastructure/dev", "apps/prod", "apps/dev"} {
		files[layer+"/kustomization.yaml"] = []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [configmap.yaml]\n")
		files[layer+"/configmap.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sample, namespace: default}\n")
	}
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"validate", "-q", dir}, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("fleetgen validate README sample: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	// And the sample is what a reader would edit: render it too.
	if code := run(context.Background(), []string{"render", "-q", dir, "-o", filepath.Join(dir, "out")}, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("fleetgen render README sample: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
