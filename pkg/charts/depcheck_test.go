package charts

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDepcheck keeps pkg/charts to Helm's loader and engine: client-go's
// REST, discovery and typed clients come with them (Helm's engine and
// version packages import them), but nothing of Helm's cluster-facing
// packages, no controller-runtime, no OCI client of Helm's, no cloud SDK.
func TestDepcheck(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "fleetgen.dev/fleetgen/pkg/charts").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages: expected the whole build", len(deps))
	}
	for _, f := range []string{
		"helm.sh/helm/v4/pkg/action", "helm.sh/helm/v4/pkg/kube", "helm.sh/helm/v4/pkg/registry",
		"helm.sh/helm/v4/pkg/getter", "helm.sh/helm/v4/pkg/downloader", "helm.sh/helm/v4/pkg/storage",
		"sigs.k8s.io/controller-runtime", "oras.land/", "github.com/fluxcd/pkg/chartutil",
		"github.com/fluxcd/helm-controller", "github.com/aws/", "cloud.google.com/go", "github.com/Azure/",
		"google.golang.org/grpc", "github.com/getsops/sops/",
	} {
		for _, d := range deps {
			if strings.HasPrefix(d, f) {
				t.Errorf("pkg/charts links %s (under %s); find who imports it with `go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./pkg/charts`", d, f)
				break
			}
		}
	}
}
