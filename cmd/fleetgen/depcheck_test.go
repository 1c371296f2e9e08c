package main

import (
	"os/exec"
	"strings"
	"testing"
)

// forbiddenDeps are module path prefixes fleetgen must not link:
//
//   - the cloud key-management SDKs SOPS's key services pull in. fleetgen
//     seals for age recipients only (pkg/secrets writes the SOPS format
//     itself), and these tripled the binary and the first build. SOPS may be
//     a test dependency; linking any of its packages brings back every key
//     service;
//   - Kubernetes' client code paths: controller-runtime, and what Helm's
//     action, kube, registry, getter and storage packages add (a cluster
//     client, a release store, oras, HTTP getters). fleetgen talks to no
//     cluster. Helm's chart loader and engine (pkg/charts, the renderer
//     helm-controller links) import client-go's REST, discovery, dynamic
//     and typed clients and every k8s.io/api group, unused at run time: that
//     weight buys the real renderer and is allowed (docs/performance.md says
//     what it costs). One import of github.com/fluxcd/pkg/kustomize's root
//     package (for its substitution, which reads substituteFrom ConfigMaps
//     with a controller-runtime client) brought 209 packages (pkg/layers
//     substitutes with Flux's envsubst instead).
var forbiddenDeps = []string{
	"sigs.k8s.io/controller-runtime",
	"helm.sh/helm/v4/pkg/action",
	"helm.sh/helm/v4/pkg/kube",
	"helm.sh/helm/v4/pkg/registry",
	"helm.sh/helm/v4/pkg/getter",
	"helm.sh/helm/v4/pkg/storage",
	"helm.sh/helm/v4/pkg/cli",
	"helm.sh/helm/v4/pkg/repo",
	"oras.land/",
	"k8s.io/cli-runtime/",
	"k8s.io/kubectl/",
	"github.com/fluxcd/pkg/kustomize", // its filesys package only: see below
	"github.com/fluxcd/pkg/chartutil",
	"github.com/fluxcd/helm-controller/",
	"github.com/getsops/sops/",
	"github.com/aws/",
	"cloud.google.com/go",
	"google.golang.org/api",
	"github.com/googleapis/",
	"github.com/Azure/",
	"github.com/AzureAD/",
	"github.com/hashicorp/vault/",
	"github.com/huaweicloud/",
	"google.golang.org/grpc",
	// Signature verification (pkg/verify) is offline and light: sigstore-go
	// and cosign are test dependencies; their verifier packages pull in a TUF
	// client, Rekor's REST client and gRPC (about 16 MB of binary).
	"github.com/sigstore/",
	"github.com/theupdateframework/",
	"github.com/go-openapi/runtime",
}

// TestDepcheck fails when cmd/fleetgen links a forbidden package again, as
// go-containerregistry's depcheck does for crane.
func TestDepcheck(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "fleetgen.dev/fleetgen/cmd/fleetgen").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps listed %d packages: expected the whole build", len(deps))
	}
	for _, f := range forbiddenDeps {
		var found []string
		for _, d := range deps {
			if d == "github.com/fluxcd/pkg/kustomize/filesys" {
				continue // Flux's confined file system: kustomize and the standard library only
			}
			if strings.HasPrefix(d, f) {
				found = append(found, d)
			}
		}
		if len(found) > 0 {
			t.Errorf("cmd/fleetgen links %d package(s) under %s, first %s; find who imports it with `go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/fleetgen`", len(found), f, found[0])
		}
	}
}

// allowedImports are the only fleetgen packages cmd/fleetgen may import
// (helm's cmd imports its action package; crane's its options): each command
// calls one pipeline function and prints the value it returns. Anything else
// (the lock, the mirror, schema, generate) is reached through pipeline, so
// that cmd builds no output from library internals.
var allowedImports = map[string]string{
	"fleetgen.dev/fleetgen/pkg/pipeline":   "the commands",
	"fleetgen.dev/fleetgen/internal/inert": "untrusted text written to a terminal or a CI log",
	"fleetgen.dev/fleetgen/pkg/problem":    "input problems, printed as text, json or github by report",
	"fleetgen.dev/fleetgen/pkg/review":     "diff's report and its writers (text, markdown, json, github)",
	"fleetgen.dev/fleetgen/pkg/layout":     "the output tree's paths, which render's help names",
}

// TestCmdImports fails when cmd/fleetgen imports a fleetgen package other
// than pipeline and the output helpers (test files may import anything).
func TestCmdImports(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, "fleetgen.dev/fleetgen/cmd/fleetgen").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for _, imp := range strings.Fields(string(out)) {
		if !strings.HasPrefix(imp, "fleetgen.dev/") {
			continue
		}
		seen++
		if _, ok := allowedImports[imp]; !ok {
			t.Errorf("cmd/fleetgen imports %s: reach it through pkg/pipeline, which returns values for cmd to print", imp)
		}
	}
	if seen == 0 {
		t.Fatal("go list found no fleetgen import: expected at least pkg/pipeline")
	}
}
