package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/review"
	"fleetgen.dev/fleetgen/pkg/tree"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestReadRenderedUntrusted: diff reads the output folder, which a pull
// request may fill. A symlink (to a file outside with fleetgen's header, or
// inside), a FIFO and files without the header are never read or taken in;
// .git and .fleetgen are skipped. It reads DIR once, through tree.Read, as
// render --check does.
func TestReadRenderedUntrusted(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(outside, []byte(layout.Header+"kind: Secret\ndata: {value: MARKER}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	own := layout.Header + "kind: ConfigMap\n"
	testenv.WriteTree(t, dir, map[string]string{
		"manager/kustomization.yaml":            own,
		"README.md":                             "not fleetgen's\n",
		".git/config.yaml":                      own,
		".fleetgen/state.yaml":                  own,
		"clusters/c/flux-system/gotk-sync.yaml": own,
		"manager/fleet/c/cluster.yaml":          own,
	})
	if err := os.Symlink(outside, filepath.Join(dir, "manager", "fleet", "c", "kubeconfig.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("cluster.yaml", filepath.Join(dir, "manager", "fleet", "c", "token.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "manager", "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	had, err := tree.Read(dir, tree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := owned(had)
	want := map[string][]byte{
		"manager/kustomization.yaml":   []byte(own),
		"manager/fleet/c/cluster.yaml": []byte(own),
		// not clusters/c/flux-system/gotk-sync.yaml: Flux's, whatever its
		// header (SPEC §3), as render --check sees it
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("read (-want +got):\n%s", d)
	}
}

// TestDiffLayerOnlyChange: a pull request that only edits a layer file is
// never "no changes" when DIR is a checkout of the published tree (the
// render plus the layer folders): each cluster that receives the edited
// objects shows them, by kind, namespace and name (issue 26, SPEC §7). A DIR
// without the layer folders (a previous render) has nothing to compare with.
func TestDiffLayerOnlyChange(t *testing.T) {
	t.Parallel()
	cfg, fleet, published := publishedQuickstart(t, false)
	rendered := filepath.Join(t.TempDir(), "rendered")
	if err := os.CopyFS(rendered, os.DirFS(published)); err != nil {
		t.Fatal(err)
	}
	copyLayers(t, fleet, published)
	rep, _, err := Diff(context.Background(), cfg, RenderOptions{OutDir: published})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Empty() {
		t.Fatalf("an unchanged fleet differs from its published tree: %+v", rep)
	}

	// The pull request: podinfo scaled up, its Service gone, a ConfigMap added.
	podinfo := filepath.Join(fleet, "apps", "base", "podinfo.yaml")
	data, err := os.ReadFile(podinfo)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), "replicas: 1", "replicas: 3", 1))
	data = []byte(data[:strings.Index(string(data), "---\napiVersion: v1\nkind: Service")])
	data = append(data, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {cluster: '${cluster}'}\n"...)
	if err := os.WriteFile(podinfo, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, fileDiff, err := Diff(context.Background(), cfg, RenderOptions{OutDir: published})
	if err != nil {
		t.Fatal(err)
	}
	if fileDiff != "" {
		t.Errorf("the rendered tree changed: %s", fileDiff)
	}
	got := map[string][]string{}
	for _, c := range rep.Clusters {
		for _, o := range c.Objects {
			got[c.Name] = append(got[c.Name], fmt.Sprintf("%s %s %s/%s %s", o.Layer, o.Change, o.Kind, o.Namespace, o.Name))
		}
	}
	// apps/prod sets replicas to 3 itself: the Deployment its clusters
	// receive does not change; apps/dev's does.
	prod := []string{
		"apps added ConfigMap/podinfo settings",
		"apps removed Service/podinfo podinfo",
	}
	dev := []string{
		"apps added ConfigMap/podinfo settings",
		"apps changed Deployment/podinfo podinfo",
		"apps removed Service/podinfo podinfo",
	}
	want := map[string][]string{
		"edge-1": prod, "prod-eu-1": prod, "managed1": prod,
		"edge-2": dev, "dev-us-1": dev, "capi-1": dev, "managed2": dev,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("received objects per cluster (-want +got):\n%s", d)
	}
	// The changed Deployment says what moved (issue 39).
	for _, c := range rep.Clusters {
		for _, o := range c.Objects {
			if o.Change != review.Update {
				continue
			}
			if d := cmp.Diff([]review.Change{{Field: "spec.replicas", From: "1", To: "3"}}, o.Changes); d != "" {
				t.Errorf("%s: %s %s changes (-want +got):\n%s", c.Name, o.Kind, o.Name, d)
			}
		}
	}

	// A previous render without the layer folders: nothing to compare with.
	sameScopedDiffs(t, cfg, RenderOptions{OutDir: rendered})
	rep, _, err = Diff(context.Background(), cfg, RenderOptions{OutDir: rendered})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Clusters {
		if len(c.Objects) > 0 {
			t.Errorf("%s: objects reported against a DIR without layer folders: %v", c.Name, c.Objects)
		}
	}
}

// TestDiffLayerFoldersUntrusted: DIR's layer folders are built as the fleet's
// are, confined to DIR: a symlink out of DIR, a resource climbing out of it
// and a remote base are never read or fetched (the build fails, and the
// cluster counts as having received nothing), and nothing they hold reaches
// the report.
func TestDiffLayerFoldersUntrusted(t *testing.T) {
	t.Parallel()
	cfg, _, published := publishedQuickstart(t, false)
	outside := t.TempDir()
	const marker = "OUTSIDE-MARKER"
	testenv.WriteTree(t, outside, map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + strings.ToLower(marker) + "}\ndata: {v: " + marker + "}\n",
	})
	testenv.WriteTree(t, published, map[string]string{
		"apps/dev/kustomization.yaml":            "resources: [link.yaml]\n",
		"apps/prod/kustomization.yaml":           "resources: [../../../" + filepath.Base(outside) + "/cm.yaml]\n",
		"infrastructure/dev/kustomization.yaml":  "resources: [\"github.com/evil/repo\"]\n",
		"infrastructure/prod/kustomization.yaml": "resources: [cm.yaml]\n",
		"infrastructure/prod/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\n",
	})
	if err := os.Symlink(filepath.Join(outside, "cm.yaml"), filepath.Join(published, "apps", "dev", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	rep, _, err := Diff(context.Background(), cfg, RenderOptions{OutDir: published})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToUpper(b.String()), marker) {
		t.Errorf("the report holds what a file outside DIR says:\n%s", b.String())
	}
	if b.String() == "" || rep.Empty() {
		t.Error("the published layers differ from the fleet's and the report is empty")
	}
}

// TestDiffOldTagFromPublishedLayers: an image bump replaces the lock's entry,
// so the old tag is read from what DIR's layer folders wrote: the report
// reads 6.7.1 → 6.7.2 beside the digests, not "?" (issue 28).
func TestDiffOldTagFromPublishedLayers(t *testing.T) {
	t.Parallel()
	cfg, fleet, published := publishedQuickstart(t, true)
	testenv.ReplaceIn(t, filepath.Join(fleet, "apps", "base", "podinfo.yaml"), "podinfo:6.7.1", "podinfo:6.7.2")
	testenv.ReplaceIn(t, filepath.Join(fleet, "fleet.lock.yaml"),
		"sha256:2c689903c5f16bc2ee048f34bb0d7f2839652f5183101ba158345ce2bb67a6c1\n  source: ghcr.io/stefanprodan/podinfo:6.7.1\n  target: quickstart.azurecr.io/stefanprodan/podinfo:6.7.1",
		"sha256:3c689903c5f16bc2ee048f34bb0d7f2839652f5183101ba158345ce2bb67a6c1\n  source: ghcr.io/stefanprodan/podinfo:6.7.2\n  target: quickstart.azurecr.io/stefanprodan/podinfo:6.7.2")
	rep, _, err := Diff(context.Background(), cfg, RenderOptions{OutDir: published})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.Write(&b, "text", ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "6.7.1 → 6.7.2") {
		t.Errorf("the report does not show the old and new tags:\n%s", b.String())
	}
}

// publishedQuickstart renders a copy of examples/quickstart into a folder
// "published" and returns the config that diffs against it, the fleet's
// folder and the published folder; with layers, the layer folders are copied
// beside the render, as publish does, making it a checkout of the published
// tree.
func publishedQuickstart(t *testing.T, layers bool) (cfg Config, fleet, published string) {
	t.Helper()
	fleet = copyTree(t, filepath.Join("..", "..", "examples", "quickstart"))
	published = filepath.Join(t.TempDir(), "published")
	cfg = Config{File: filepath.Join(fleet, "fleet.yaml"), AgeKeyFile: filepath.Join(fleet, "age.agekey")}
	if err := Render(context.Background(), cfg, RenderOptions{OutDir: published}); err != nil {
		t.Fatal(err)
	}
	if layers {
		copyLayers(t, fleet, published)
	}
	return cfg, fleet, published
}

// copyLayers copies the quickstart's layer folders from fleet to published.
func copyLayers(t *testing.T, fleet, published string) {
	t.Helper()
	for _, l := range []string{"apps", "infrastructure"} {
		if err := os.CopyFS(filepath.Join(published, l), os.DirFS(filepath.Join(fleet, l))); err != nil {
			t.Fatal(err)
		}
	}
}

// sameScopedDiffs checks `diff --cluster` against a render (ro.OutDir): for
// the manager, each cluster alone and the first two together, reading only
// their part of DIR (review.Scope) gives the report, file diff and error
// that reading all of it gives.
func sameScopedDiffs(t *testing.T, cfg Config, ro RenderOptions) {
	t.Helper()
	ctx := context.Background()
	if !onlyTree(ro.OutDir) {
		t.Fatalf("%s holds more than a render: diff reads all of it", ro.OutDir)
	}
	ld, err := loadFor(ctx, cfg, "diff", ro.OutDir)
	if err != nil {
		t.Fatal(err)
	}
	sets := [][]string{{ld.Fleet.Spec.Manager.Name}}
	for _, c := range ld.Fleet.Spec.Clusters {
		sets = append(sets, []string{c.Name})
	}
	if cs := ld.Fleet.Spec.Clusters; len(cs) > 1 {
		sets = append(sets, []string{cs[0].Name, cs[1].Name})
	}
	for _, names := range sets {
		o := ro
		o.Clusters = names
		rep, d, err := Diff(ctx, cfg, o)
		o.wholeTree = true
		wantRep, wantD, wantErr := Diff(ctx, cfg, o)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("--cluster %v: error %v, reading all of DIR %v", names, err, wantErr)
		}
		if diff := cmp.Diff(wantRep, rep); diff != "" {
			t.Errorf("--cluster %v: report (-all of DIR +its part):\n%s", names, diff)
		}
		if diff := cmp.Diff(wantD, d); diff != "" {
			t.Errorf("--cluster %v: file diff (-all of DIR +its part):\n%s", names, diff)
		}
	}
}
