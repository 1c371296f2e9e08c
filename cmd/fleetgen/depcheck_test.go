package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// forbiddenDeps are module path prefixes fleetgen must not link (one ending
// in $ is a package path):
//
//   - the cloud key-management SDKs SOPS's key services pull in. fleetgen
//     seals for age recipients only (pkg/secrets writes the SOPS format
//     itself), and these tripled the binary and the first build. SOPS may be
//     a test dependency; linking any of its packages brings back every key
//     service;
//   - Kubernetes' client code paths: controller-runtime, and what Helm's
//     action, kube, registry, getter and storage packages add (a cluster
//     client, a release store, HTTP getters). fleetgen talks to no
//     cluster. Helm's chart loader and engine (pkg/charts, the renderer
//     helm-controller links) import client-go's REST, discovery, dynamic
//     and typed clients and every k8s.io/api group, unused at run time: that
//     weight buys the real renderer and is allowed (docs/performance.md says
//     what it costs). One import of github.com/fluxcd/pkg/kustomize's root
//     package (for its substitution, which reads substituteFrom ConfigMaps
//     with a controller-runtime client) brought 209 packages (pkg/layers
//     substitutes with Flux's envsubst instead);
//   - what the signature libraries offer beyond offline verification:
//     sigstore-go's signer (Fulcio and Rekor clients for signing, OIDC
//     flows), cosign itself, notation's signer and plugins' CLI, and gRPC's
//     servers, credentials and xDS. See allowedHeavy for what verification
//     does link, and why.
var forbiddenDeps = []string{
	"sigs.k8s.io/controller-runtime",
	"helm.sh/helm/v4/pkg/action",
	"helm.sh/helm/v4/pkg/kube",
	"helm.sh/helm/v4/pkg/registry",
	"helm.sh/helm/v4/pkg/getter",
	"helm.sh/helm/v4/pkg/storage",
	"helm.sh/helm/v4/pkg/cli",
	"helm.sh/helm/v4/pkg/repo",
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
	"github.com/Azure/azure-sdk-for-go",
	"github.com/AzureAD/",
	"github.com/hashicorp/vault/",
	"github.com/huaweicloud/",
	"github.com/sigstore/sigstore-go/pkg/sign",
	"github.com/sigstore/cosign",
	"github.com/sigstore/sigstore/pkg/oauthflow",
	"github.com/sigstore/fulcio",
	"github.com/notaryproject/notation-go/signer",
	"google.golang.org/grpc/xds",
	"google.golang.org/grpc/reflection",
	"google.golang.org/grpc/credentials/alts",
	"google.golang.org/grpc/credentials/google",
	"google.golang.org/grpc/credentials/oauth",
	"google.golang.org/grpc/health$", // the health server ($: this package only; grpc_health_v1's messages are allowed below)
	"go.opentelemetry.io/otel/sdk",   // exporters and the SDK; the API alone is allowed below
	"go.opentelemetry.io/otel/exporters",
}

// allowedHeavy are packages under a forbidden-looking prefix, or heavy ones,
// that cmd/fleetgen links on purpose, and why: signature verification is
// the field's own libraries' work (sigstore-go, notation-go), and these come
// with their verifiers. None is called to reach the network: TestMain in
// pkg/verify records no connection while every verification test runs.
var allowedHeavy = map[string]string{
	"google.golang.org/grpc/health/grpc_health_v1": "rekor-tiles' generated protobuf imports grpc-gateway's runtime, which links gRPC's client core and these messages (Rekor v2 entries are parsed from that protobuf)",
	"github.com/theupdateframework/go-tuf/v2":      "sigstore-go's root package (which reads trusted_root.json) also offers a TUF fetch; fleetgen never calls it",
	"github.com/go-openapi/runtime":                "Rekor v1's generated models and client, which sigstore-go's tlog package reads entries with; the client is never called",
	"github.com/go-ldap/ldap/v3":                   "notation-go's distinguished-name parser (trusted identities) is go-ldap's",
	"github.com/Azure/go-ntlmssp":                  "go-ldap's NTLM bind, linked with its DN parser; no LDAP connection is made",
	"go.opentelemetry.io/otel":                     "go-openapi/runtime's client (Rekor v1's, never called) traces through OpenTelemetry's API; no SDK or exporter is linked",
	"oras.land/oras-go/v2":                         "notation-go's root package (its Verifier interface) imports its registry package, on oras-go; fleetgen reads signatures with go-containerregistry",
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
			if exact, ok := strings.CutSuffix(f, "$"); ok && d == exact || !ok && strings.HasPrefix(d, f) {
				found = append(found, d)
			}
		}
		if len(found) > 0 {
			t.Errorf("cmd/fleetgen links %d package(s) under %s, first %s; find who imports it with `go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/fleetgen`", len(found), f, found[0])
		}
	}
	// The verifiers are linked (SPEC §4: the field's own libraries verify).
	for _, want := range []string{"github.com/sigstore/sigstore-go/pkg/verify", "github.com/notaryproject/notation-go/verifier"} {
		if !slices.Contains(deps, want) {
			t.Errorf("cmd/fleetgen does not link %s: signatures must be verified by the field's own library", want)
		}
	}
	// Every allowance is still needed: one that nothing links goes.
	for prefix, why := range allowedHeavy {
		if !slices.ContainsFunc(deps, func(d string) bool { return strings.HasPrefix(d, prefix) }) {
			t.Errorf("allowedHeavy names %s (%s), which cmd/fleetgen no longer links: drop it", prefix, why)
		}
	}
}

// allowedImports are the only fleetgen packages cmd/fleetgen may import
// (helm's cmd imports its action package; crane's its options): each command
// calls one pipeline function and prints the value it returns. Anything else
// (the lock, the mirror, schema, generate) is reached through pipeline, so
// that cmd builds no output from library internals.
var allowedImports = map[string]string{
	"fleetgen.dev/fleetgen/pkg/pipeline":      "the commands",
	"fleetgen.dev/fleetgen/internal/inert":    "untrusted text written to a terminal or a CI log",
	"fleetgen.dev/fleetgen/internal/memlimit": "the process's soft memory limit, which main sets before any command",
	"fleetgen.dev/fleetgen/pkg/problem":       "input problems, printed as text, json or github by report",
	"fleetgen.dev/fleetgen/pkg/review":        "diff's report and its writers (text, markdown, json, github)",
	"fleetgen.dev/fleetgen/pkg/layout":        "the output tree's paths, which render's help names",
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
