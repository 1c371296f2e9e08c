package schema

import (
	"strings"
	"testing"
)

// TestSourceMirrors: every rule of spec.sourceMirrors, each error with its
// file:line:col, field path and what would be valid.
func TestSourceMirrors(t *testing.T) {
	t.Parallel()
	const yaml = `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: x}
spec:
  manager: {apiServerURL: "https://fleet.example"}
  registry: {host: r.example}
  source: {kind: git, url: "https://example.com/x.git"}
  sourceMirrors:
    - {host: docker.io, mirror: proxy.example/dockerhub}
    - {host: ghcr.io, mirror: "localhost:5000", insecure: true}
    - {host: index.docker.io, mirror: other.example}
    - {host: "https://quay.io", mirror: q.example}
    - {host: gcr.io, mirror: "https://g.example/x"}
    - {host: k8s.io, mirror: "m.example/UP"}
    - {mirror: m.example}
    - {host: a.example}
  images: [docker.io/rancher/fleet-agent:v0.16.1]
  clusters: [{name: a}]
`
	f, err := Parse("fleet.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	Default(f)
	err = Validate(f)
	if err == nil {
		t.Fatal("Validate passed invalid source mirrors")
	}
	want := []string{
		`fleet.yaml:11:14: spec.sourceMirrors[2].host: duplicate source registry "index.docker.io" (also spec.sourceMirrors[0]): want one mirror per source registry`,
		`fleet.yaml:12:14: spec.sourceMirrors[3].host: invalid source registry host "https://quay.io": want HOST[:PORT] without scheme or path`,
		`fleet.yaml:13:30: spec.sourceMirrors[4].mirror: invalid mirror "https://g.example/x": a scheme: want HOST[:PORT][/PREFIX] without scheme`,
		`fleet.yaml:14:30: spec.sourceMirrors[5].mirror: invalid mirror "m.example/UP": invalid prefix`,
		`spec.sourceMirrors[6].host: host is required: want the source registry as images name it`,
		`spec.sourceMirrors[7].mirror: mirror is required: want HOST[:PORT][/PREFIX]`,
	}
	got := err.Error()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != len(want) {
		t.Errorf("%d source mirror errors, want %d:\n%s", n, len(want), got)
	}
	if strings.Contains(got, "sourceMirrors[0]]") || strings.Contains(got, "sourceMirrors[1].") {
		t.Errorf("valid entries reported:\n%s", got)
	}
}
