package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
	"fleetgen.dev/fleetgen/test/testenv"
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
// one-ConfigMap folder for each layer path (apps/prod with a Deployment of
// ghcr.io/contoso/web, which the verify policy covers), a cosign public key,
// and the lock `fleetgen mirror` would write for the two images, the policy's
// verification of web's signature included.
func TestReadmeSample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string][]byte{
		"fleet.yaml":      readmeSample(t),
		"keys/cosign.pub": testenv.NewKey(t).PublicPEM,
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
	files["apps/prod/kustomization.yaml"] = []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [configmap.yaml, web.yaml]\n")
	files["apps/prod/web.yaml"] = []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\n" +
		"spec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n" +
		"    spec: {containers: [{name: web, image: ghcr.io/contoso/web:1.4.2}]}\n")
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := schema.Load(filepath.Join(dir, "fleet.yaml"), schema.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := verify.Compile(f, nil)
	if err != nil || ps.For("ghcr.io/contoso/web") == nil {
		t.Fatalf("the README's verify policy: %v, %v; want one that covers ghcr.io/contoso/web", ps, err)
	}
	l := lock.New()
	sum := func(c string) string { return "sha256:" + strings.Repeat(c, 64) }
	l.SetImages([]lock.Image{
		{Source: "docker.io/rancher/fleet-agent:v0.16.1", Target: "quickstart.azurecr.io/rancher/fleet-agent:v0.16.1", Digest: sum("1")},
		{Source: "ghcr.io/contoso/web:1.4.2", Target: "quickstart.azurecr.io/contoso/web:1.4.2", Digest: sum("2"),
			Referrers: []lock.Referrer{{Digest: sum("3"), ArtifactType: testenv.BundleType}},
			Verified:  &lock.Verified{Policy: ps.For("ghcr.io/contoso/web").Name, PolicyDigest: ps.For("ghcr.io/contoso/web").Digest, Signature: sum("3")}},
	})
	if err := lock.Write(filepath.Join(dir, lock.FileName), l); err != nil {
		t.Fatal(err)
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
