package secrets

import (
	"fmt"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
)

// Run with: go test ./pkg/secrets -run '^$' -bench . -benchtime 1x

func secretsOnly(b *testing.B, n int) []layout.File {
	b.Helper()
	files := make([]layout.File, 0, n)
	for i := range n {
		c := fmt.Sprintf("cluster-%05d", i)
		files = append(files, kubeconfigSecret(b, c, kubeconfigFor(c)))
	}
	return files
}

// BenchmarkSealCold1000 encrypts 1,000 kubeconfig Secrets from scratch.
func BenchmarkSealCold1000(b *testing.B) {
	files := secretsOnly(b, 1000)
	enc := testSOPS(testRecipient)
	for b.Loop() {
		if _, err := Seal(files, enc, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSealWarm1000 re-seals 1,000 unchanged Secrets: one argon2id check
// each, no encryption.
func BenchmarkSealWarm1000(b *testing.B) {
	files := secretsOnly(b, 1000)
	enc := testSOPS(testRecipient)
	first, err := Seal(files, enc, nil)
	if err != nil {
		b.Fatal(err)
	}
	prev := previousOf(first)
	b.ResetTimer()
	for b.Loop() {
		out, err := Seal(files, enc, prev)
		if err != nil {
			b.Fatal(err)
		}
		if len(diffPaths(first, out)) != 0 {
			b.Fatal("warm seal changed files")
		}
	}
}

// BenchmarkSealWarmDecryptCheck1000 re-seals 1,000 unchanged Secrets with a
// decryption key: the argon2id check, then decrypting and comparing each.
func BenchmarkSealWarmDecryptCheck1000(b *testing.B) {
	files := secretsOnly(b, 1000)
	enc := testSOPS(testRecipient)
	first, err := Seal(files, enc, nil)
	if err != nil {
		b.Fatal(err)
	}
	ids, err := ParseIdentities([]byte(readKey(b, "age.agekey")))
	if err != nil {
		b.Fatal(err)
	}
	prev := previousOf(first)
	b.ResetTimer()
	for b.Loop() {
		out, err := Seal(files, enc, prev, WithDecryptCheck(ids, func(string) { b.Fatal("a genuine Secret was reported") }))
		if err != nil {
			b.Fatal(err)
		}
		if len(diffPaths(first, out)) != 0 {
			b.Fatal("warm seal changed files")
		}
	}
}

// BenchmarkScan70k scans 70,000 small files as a 10,000-cluster render has
// them: a sealed kubeconfig Secret per manager cluster among many other kinds.
func BenchmarkScan70k(b *testing.B) {
	sealed, err := Seal(secretsOnly(b, 1), testSOPS(testRecipient), nil)
	if err != nil {
		b.Fatal(err)
	}
	var secret layout.File
	for _, f := range sealed {
		if f.Secret {
			secret = f
		}
	}
	files := make([]layout.File, 0, 70000)
	for i := range 10000 {
		c := fmt.Sprintf("c%05d", i)
		files = append(files, clusterFile(b, c))
		s := secret
		s.Path = "manager/fleet/" + c + "/kubeconfig.yaml"
		files = append(files, s)
		for _, k := range []string{"Kustomization", "GitRepository", "ClusterRegistrationToken", "ConfigMap", "Namespace"} {
			files = append(files, marshalFile(b, "clusters/"+c+"/"+k+".yaml", false, map[string]any{
				"apiVersion": "v1", "kind": k,
				"metadata": map[string]any{"name": c, "namespace": "flux-system"},
				"spec":     map[string]any{"interval": "10m", "path": "./infrastructure/prod", "secretRef": map[string]string{"name": "flux-system"}},
			}))
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := Scan(files, false); err != nil {
			b.Fatal(err)
		}
	}
}
