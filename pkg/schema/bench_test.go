package schema

import (
	"fmt"
	"strings"
	"testing"
)

// fleetYAML returns a fleet.yaml of n clusters in every mode but manager (whose
// kubeconfig would need a file) and two layers.
func fleetYAML(n int) []byte {
	var b strings.Builder
	b.WriteString(`apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: bench}
spec:
  manager: {apiServerURL: "https://fleet.example:6443"}
  registry: {host: registry.example}
  images: [rancher/fleet-agent:v0.16.1]
  source: {kind: git, url: "https://git.example/fleet.git"}
  layers:
    - name: infrastructure
      path: ./infrastructure/${env}
    - name: apps
      path: ./apps/${cluster}
      dependsOn: [infrastructure]
      selector: {tier: apps}
  groups:
    - name: prod
      selector: {env: prod}
  defaults:
    labels: {org: bench}
  clusters:
`)
	modes := []string{ModeAgent, ModeCAPI, ModeVerrazzano}
	for i := 0; i < n; i++ {
		env := []string{"dev", "prod"}[i%2]
		fmt.Fprintf(&b, "    - name: c-%d\n      labels: {env: %s, tier: apps, region: r%d}\n      registration: {mode: %s}\n", i, env, i%7, modes[i%3])
	}
	return []byte(b.String())
}

func BenchmarkLoad10k(b *testing.B) {
	data := fleetYAML(10000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		f, err := Parse("fleet.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		Default(f)
		if err := Validate(f); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBenchFixture keeps BenchmarkLoad10k's fleet valid: a rule added to
// Validate must not leave the benchmark failing unnoticed (CI runs no
// benchmarks).
func TestBenchFixture(t *testing.T) {
	t.Parallel()
	f, err := Parse("fleet.yaml", fleetYAML(30))
	if err != nil {
		t.Fatal(err)
	}
	Default(f)
	if err := Validate(f); err != nil {
		t.Fatal(err)
	}
}
