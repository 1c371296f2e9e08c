package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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
	dir := testenv.CopyTree(t, filepath.Join("..", "..", "examples", "multi-manager")) // spec.encryption is set
	out := filepath.Join(t.TempDir(), "out")
	if err := Render(context.Background(), Config{File: filepath.Join(dir, "fleet.yaml")}, RenderOptions{OutDir: out}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(out, "clusters", "gitops-1", "argocd", "*.yaml"))
	if len(files) != 4 {
		t.Fatalf("%d Argo CD Secrets in gitops-1's folder, want 4", len(files))
	}
	// The credentials of the same render are sealed: Fleet's and Sveltos's
	// kubeconfig Secrets of lab-1.
	for _, p := range []string{"manager/fleet/lab-1/kubeconfig.yaml", "manager/sveltos/lab-1/kubeconfig.yaml"} {
		b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "\nsops:\n") || !strings.Contains(string(b), "ENC[AES256_GCM,") || strings.Contains(string(b), "fake-token") {
			t.Errorf("%s is not sealed", p)
		}
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
	// monitoring's dev target goes to lab clusters (there are none: dev-1
	// and lab-1 lose it), and
	// edge-security reaches every production cluster.
	testenv.ReplaceIn(t, cfg.File,
		"          clusterSelector: {env: dev}", "          clusterSelector: {env: lab}",
		"        - {name: edge, clusterGroup: edge}", "        - {name: edge, clusterGroup: production}")
	sameScopedDiffs(t, cfg, ro)
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
		"lab-1":     {{Field: "deliveries.monitoring", From: "dev", To: ""}},
		"prod-eu-1": {{Field: "deliveries.edge-security", From: "", To: "edge"}},
		"prod-us-1": {{Field: "deliveries.edge-security", From: "", To: "edge"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("delivery changes (-want +got):\n%s", d)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "dev-1: delivery monitoring no longer reaches it") || !strings.Contains(warnings[1], "lab-1: delivery monitoring no longer reaches it") {
		t.Errorf("warnings %q, want one for dev-1 and one for lab-1", warnings)
	}
}

// TestDiffAddedCluster: the review of a pull request that adds a cluster
// shows, per manager, that it is registered (and where), and the
// Applications each ApplicationSet of the Argo CD cluster gains on it.
func TestDiffAddedCluster(t *testing.T) {
	t.Parallel()
	dir := testenv.CopyTree(t, filepath.Join("..", "..", "examples", "multi-manager"))
	cfg, ro := Config{File: filepath.Join(dir, "fleet.yaml")}, RenderOptions{OutDir: filepath.Join(t.TempDir(), "out")}
	if err := Render(context.Background(), cfg, ro); err != nil {
		t.Fatal(err)
	}
	testenv.ReplaceIn(t, cfg.File, "    # Runs the application team's Argo CD", `    - name: prod-eu-2
      labels: {env: prod, region: eu, cloud: azure}
      identity: {azure: {principalID: aaaaaaaa-0000-0000-0000-000000000004}}
      apiServer: {url: "https://prod-eu-2.multi.example:6443"}
    # Runs the application team's Argo CD`)
	sameScopedDiffs(t, cfg, ro)
	rep, _, err := Diff(context.Background(), cfg, ro)
	if err != nil {
		t.Fatal(err)
	}
	var got []review.Change
	for _, c := range rep.Clusters {
		if c.Name != "prod-eu-2" {
			if c.Change != review.Update || len(c.Objects) > 0 {
				t.Errorf("cluster %s: %s, want no change but groups' and deliveries'", c.Name, c.Change)
			}
			continue
		}
		if c.Change != review.Added {
			t.Errorf("prod-eu-2: %s, want added", c.Change)
		}
		for _, ch := range c.Changes {
			if strings.HasPrefix(ch.Field, review.ManagersField) || strings.HasPrefix(ch.Field, review.ApplicationsField) || ch.Field == "registration.mode" {
				got = append(got, ch)
			}
		}
	}
	want := []review.Change{
		{Field: "registration.mode", To: "agent"},
		{Field: "managers.argocd", To: "gitops-1"},
		{Field: "managers.argocd.server", To: "https://prod-eu-2.multi.example:6443"},
		{Field: "managers.kubefleet", To: "manager"},
		{Field: "managers.kubefleet.identity", To: "User aaaaaaaa-0000-0000-0000-000000000004"},
		{Field: "managers.ocm", To: "manager"},
		{Field: "managers.ocm.klusterlet", To: review.Set, ToMarker: true},
		{Field: "applications.argocd/guestbook", To: "guestbook-prod-eu-2"},
		{Field: "applications.argocd/ingress", To: "ingress-prod-eu-2"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("prod-eu-2's managers and Applications (-want +got):\n%s", d)
	}
}

// TestDiffApplicationsDisappear: a change that stops an ApplicationSet's
// selector from selecting a cluster shows the Application that disappears
// there, with a warning: Argo CD deletes it.
func TestDiffApplicationsDisappear(t *testing.T) {
	t.Parallel()
	dir := testenv.CopyTree(t, filepath.Join("..", "..", "examples", "multi-manager"))
	cfg, ro := Config{File: filepath.Join(dir, "fleet.yaml")}, RenderOptions{OutDir: filepath.Join(t.TempDir(), "out")}
	if err := Render(context.Background(), cfg, ro); err != nil {
		t.Fatal(err)
	}
	// lab-1 leaves region eu, which the ingress ApplicationSet selects.
	testenv.ReplaceIn(t, cfg.File, "labels: {env: dev, region: eu, sveltos: enabled}", "labels: {env: dev, region: us, sveltos: enabled}")
	sameScopedDiffs(t, cfg, ro)
	rep, _, err := Diff(context.Background(), cfg, ro)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Clusters {
		if c.Name != "lab-1" {
			continue
		}
		var apps []review.Change
		for _, ch := range c.Changes {
			if strings.HasPrefix(ch.Field, review.ApplicationsField) {
				apps = append(apps, ch)
			}
		}
		if d := cmp.Diff([]review.Change{{Field: "applications.argocd/ingress", From: "ingress-lab-1"}}, apps); d != "" {
			t.Errorf("lab-1's Applications (-want +got):\n%s", d)
		}
		if !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, "no longer generates Application ingress-lab-1") }) {
			t.Errorf("warnings %q, want one for ingress-lab-1", c.Warnings)
		}
		return
	}
	t.Error("lab-1 is not in the report")
}
