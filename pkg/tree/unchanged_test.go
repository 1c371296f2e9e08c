package tree

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/generate"
)

// unchanged prepares dir, asks Unchanged(input) and closes.
func unchanged(t *testing.T, dir, input string) bool {
	t.Helper()
	p, err := Prepare(dir, "", Options{})
	if err != nil || p == nil {
		t.Fatalf("Prepare = %v, %v", p, err)
	}
	defer p.Close()
	return p.Unchanged(input)
}

func TestUnchanged(t *testing.T) {
	files := []generate.File{file("a.yaml", "a\n"), file("clusters/c1/x.yaml", "x\n"), file("clusters/c2/y.yaml", "y\n")}
	const in = "0123abcd"
	dir := t.TempDir()
	if _, err := WriteWith(dir, files, Options{Input: "NOT HEX"}); err == nil {
		t.Fatal("WriteWith took an Input that is not hex")
	}
	if _, err := WriteWith(dir, files, Options{Input: in}); err != nil {
		t.Fatal(err)
	}
	// Just written: the stamps are too recent to trust and the folders have
	// none; Unchanged hashes the files and the cache is saved again.
	if !unchanged(t, dir, in) {
		t.Fatal("Unchanged right after the write = false")
	}
	if unchanged(t, dir, "ffff") || unchanged(t, dir, "") {
		t.Error("Unchanged of other inputs = true")
	}
	time.Sleep(2 * racyWindow)
	if !unchanged(t, dir, in) {
		t.Fatal("Unchanged of the settled tree = false")
	}
	s := loadState(filepath.Join(dir, MetaDir))
	for q, st := range s.files {
		if st.racy {
			t.Errorf("%s: stamp still racy after Unchanged saved the cache", q)
		}
	}
	for d, st := range s.dirs {
		if !st.known {
			t.Errorf("folder %s: no stamp after Unchanged saved the cache", d)
		}
	}

	// A file changed in place, same size, its modification time put back:
	// its change time tells.
	x := filepath.Join(dir, "clusters/c1/x.yaml")
	info, err := os.Stat(x)
	must(t, err)
	must(t, os.WriteFile(x, []byte(h+"X\n"), 0o644))
	must(t, os.Chtimes(x, info.ModTime(), info.ModTime()))
	if unchanged(t, dir, in) {
		t.Error("Unchanged after a file was edited in place = true")
	}
	if _, err := WriteWith(dir, files, Options{Input: in}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, dir)["clusters/c1/x.yaml"]; got != h+"x\n" {
		t.Errorf("x.yaml after the write = %q", got)
	}
	if !unchanged(t, dir, in) {
		t.Error("Unchanged after the write put it back = false")
	}

	// A file removed.
	must(t, os.Remove(filepath.Join(dir, "clusters/c2/y.yaml")))
	if unchanged(t, dir, in) {
		t.Error("Unchanged after a file was removed = true")
	}
	// A write without Input records none.
	if _, err := WriteWith(dir, files, Options{}); err != nil {
		t.Fatal(err)
	}
	if unchanged(t, dir, in) || unchanged(t, dir, "") {
		t.Error("Unchanged after a write without Input = true")
	}

	// The cache of another tree with the same files (a pull request can
	// commit one): inodes and change times differ, so it proves nothing.
	if _, err := WriteWith(dir, files, Options{Input: in}); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if _, err := WriteWith(other, files, Options{}); err != nil {
		t.Fatal(err)
	}
	state, err := os.ReadFile(filepath.Join(dir, MetaDir, stateFile))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(other, MetaDir, stateFile), state, 0o600))
	if unchanged(t, other, in) {
		t.Error("Unchanged trusted a stat cache copied from another tree")
	}
}

// TestUnchangedThenWrite: when Unchanged says no, Write still writes what
// it is given (Unchanged started the read ahead with the stats it took).
func TestUnchangedThenWrite(t *testing.T) {
	files := []generate.File{file("a.yaml", "a\n"), file("b/c.yaml", "c\n")}
	dir := t.TempDir()
	if _, err := WriteWith(dir, files, Options{Input: "aa"}); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "b/c.yaml"), []byte(h+"edited\n"), 0o644))
	for _, in := range []string{"aa", "bb"} {
		p, err := Prepare(dir, "", Options{})
		if err != nil || p == nil {
			t.Fatalf("Prepare = %v, %v", p, err)
		}
		if p.Unchanged(in) {
			t.Errorf("Unchanged(%s) of an edited tree = true", in)
		}
		st, err := p.Write(files, Options{Input: "aa"})
		must(t, p.Close())
		if err != nil {
			t.Fatal(err)
		}
		if in == "aa" && st.Written != 1 {
			t.Errorf("Write after Unchanged: written %d, want 1", st.Written)
		}
		if got := read(t, dir)["b/c.yaml"]; got != h+"c\n" {
			t.Errorf("b/c.yaml = %q", got)
		}
	}
}
