package tree

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestScanParallelSame: folders read several at a time list what a read one
// folder at a time lists (files with their bytes, folders, leftovers; .git
// and MetaDir left out; a symlink, a FIFO and an unreadable file listed as
// not readable), and a file equal to its wanted bytes shares them.
func TestScanParallelSame(t *testing.T) {
	dir := t.TempDir()
	want := map[string][]byte{}
	for i := range 40 {
		for j := range 5 {
			p := fmt.Sprintf("clusters/c%02d/sub%d/f%d.yaml", i, j%2, j)
			must(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755))
			body := []byte(h + p + "\n")
			must(t, os.WriteFile(filepath.Join(dir, p), body, 0o644))
			if j != 3 {
				want[p] = slices.Clone(body)
			} else {
				want[p] = []byte("changed\n")
			}
		}
	}
	must(t, os.MkdirAll(filepath.Join(dir, ".git", "objects"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, ".git", "objects", "x"), []byte("x"), 0o644))
	must(t, os.MkdirAll(filepath.Join(dir, MetaDir), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "clusters", "c07", tmpPrefix+"1"), nil, 0o644))
	must(t, os.Symlink("/etc/passwd", filepath.Join(dir, "clusters", "c08", "link.yaml")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "clusters", "c09", "fifo.yaml"), 0o644))

	read := func(workers int) listing {
		t.Helper()
		tr, err := openTree(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.root.Close()
		l, err := tr.scan(nil, want, nil, workers)
		if err != nil {
			t.Fatalf("scan with %d workers: %v", workers, err)
		}
		slices.Sort(l.leftovers)
		return l
	}
	one := read(1)
	if len(one.files) != 202 || one.files["clusters/c08/link.yaml"] != nil || one.files["clusters/c09/fifo.yaml"] != nil {
		t.Fatalf("one folder at a time: %d files, link %q, fifo %q", len(one.files), one.files["clusters/c08/link.yaml"], one.files["clusters/c09/fifo.yaml"])
	}
	for _, workers := range []int{2, 4, 16} {
		got := read(workers)
		if d := cmp.Diff(one, got, cmp.AllowUnexported(listing{}), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%d at a time lists otherwise (-one +parallel):\n%s", workers, d)
		}
		p := "clusters/c11/sub0/f0.yaml"
		if &got.files[p][0] != &want[p][0] {
			t.Errorf("%d at a time: %s, equal to what is wanted, is a copy", workers, p)
		}
	}
}
