package tree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// TestFluxSystemUntouched: render never writes or removes anything under a
// cluster folder's flux-system/ (SPEC §3, issue 26 family 4), not even a file
// that carries fleetgen's header: WriteWith keeps it, Compare reports no
// drift for it, a render that would write there is refused, and a forged
// journal that would remove it does not.
func TestFluxSystemUntouched(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := []layout.File{file("clusters/c1/apps.yaml", "apps\n"), file("clusters/c1/old.yaml", "old\n")}
	if _, err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	headed := filepath.Join(dir, "clusters", "c1", "flux-system", "gotk-sync.yaml")
	must(t, os.MkdirAll(filepath.Dir(headed), 0o755))
	must(t, os.WriteFile(headed, []byte(h+"bootstrap, with fleetgen's header\n"), 0o644))

	// A render without old.yaml removes it, and nothing in flux-system/.
	files = files[:1]
	d, err := Diff(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d, "flux-system") {
		t.Errorf("Compare reports a flux-system/ file as drift:\n%s", d)
	}
	if _, err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(headed); err != nil {
		t.Fatalf("render removed %s: %v", headed, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "clusters", "c1", "old.yaml")); err == nil {
		t.Error("render kept a stale file outside flux-system/ (the control)")
	}

	// A render that would write there is refused before anything changes.
	_, err = Write(dir, append(files, file("clusters/c1/flux-system/x.yaml", "x\n")))
	if err == nil || !problem.IsInvalid(err) || !strings.Contains(err.Error(), "flux bootstrap owns") {
		t.Errorf("writing into flux-system/ = %v, want an input error", err)
	}

	// A forged committed journal naming it for removal removes nothing.
	must(t, os.WriteFile(filepath.Join(dir, MetaDir, committedFile),
		[]byte(`{"version":2,"dels":["clusters/c1/flux-system/gotk-sync.yaml"]}`), 0o644))
	if _, err := Write(dir, files); err != nil && !problem.IsInvalid(err) {
		t.Fatal(err)
	}
	if _, err := os.Stat(headed); err != nil {
		t.Fatalf("a forged journal removed %s: %v", headed, err)
	}
}
