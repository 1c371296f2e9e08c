package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/review"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestArgoCDSecretsReadable: Argo CD cluster Secrets hold no credential,
// so they are written readable even with spec.encryption (SPEC §1): a
// reviewer sees each server and its labels; the plaintext guard lets
// exactly their shape through (secrets.PublicArgoCDCluster).
func TestArgoCDSecretsReadable(t *testing.T) {
	t.Parallel()
	dir := testenv.CopyTree(t, filepath.Join("..", "..", "examples", "multi-manager"))
	testenv.ReplaceIn(t, filepath.Join(dir, "fleet.yaml"), "  images:\n",
		"  encryption:\n    sops:\n      ageRecipients: [age1qpmdkse4kd0sr7dzclvg8ryty8h4uap43hp0dm78qa2fq5n8syysna60a8]\n  images:\n")
	out := filepath.Join(t.TempDir(), "out")
	if err := Render(context.Background(), Config{File: filepath.Join(dir, "fleet.yaml")}, RenderOptions{OutDir: out}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(out, "manager", "argocd", "*.yaml"))
	if len(files) != 3 {
		t.Fatalf("%d Argo CD Secrets, want 3", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\nsops:\n") || strings.Contains(string(b), "ENC[") || !strings.Contains(string(b), "\n  server: ") {
			t.Errorf("%s is sealed, want it readable:\n%s", f, b)
		}
	}
}

// TestDiffDeliveries: a pull request that changes a delivery's targets
// shows, per cluster, the delivery it starts or stops reaching.
func TestDiffDeliveries(t *testing.T) {
	t.Parallel()
	dir := testenv.CopyTree(t, filepath.Join("..", "..", "examples", "multi-manager"))
	cfg, ro := Config{File: filepath.Join(dir, "fleet.yaml")}, RenderOptions{OutDir: filepath.Join(t.TempDir(), "out")}
	if err := Render(context.Background(), cfg, ro); err != nil {
		t.Fatal(err)
	}
	// monitoring's dev target goes to lab clusters (there are none), and
	// edge-security reaches every production cluster.
	testenv.ReplaceIn(t, cfg.File,
		"          clusterSelector: {env: dev}", "          clusterSelector: {env: lab}",
		"        - {name: edge, clusterGroup: edge}", "        - {name: edge, clusterGroup: production}")
	rep, _, err := Diff(context.Background(), cfg, ro)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]review.Change{}
	var warnings []string
	for _, c := range rep.Clusters {
		for _, ch := range c.Changes {
			if strings.HasPrefix(ch.Field, review.DeliveriesField) {
				got[c.Name] = append(got[c.Name], ch)
			}
		}
		warnings = append(warnings, c.Warnings...)
	}
	want := map[string][]review.Change{
		"dev-1":     {{Field: "deliveries.monitoring", From: "dev", To: ""}},
		"prod-eu-1": {{Field: "deliveries.edge-security", From: "", To: "edge"}},
		"prod-us-1": {{Field: "deliveries.edge-security", From: "", To: "edge"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("delivery changes (-want +got):\n%s", d)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "dev-1: delivery monitoring no longer reaches it") {
		t.Errorf("warnings %q, want one for dev-1", warnings)
	}
}
