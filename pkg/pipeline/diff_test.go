package pipeline

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/generate"
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
	if err := os.WriteFile(outside, []byte(generate.Header+"kind: Secret\ndata: {value: MARKER}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	own := generate.Header + "kind: ConfigMap\n"
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
