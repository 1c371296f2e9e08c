package tree

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/generate"
)

// TestPrepareNothingToRead: a folder no render wrote (missing, or without
// MetaDir) is not prepared, and Prepare creates nothing there.
func TestPrepareNothingToRead(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	lockPath := filepath.Join(base, "fleet.lock.yaml")
	for _, dir := range []string{filepath.Join(base, "missing"), base} {
		p, err := Prepare(dir, lockPath, nil)
		if p != nil || err != nil {
			t.Fatalf("Prepare(%s) = %v, %v; want nil, nil", dir, p, err)
		}
	}
	if ents, _ := os.ReadDir(base); len(ents) != 0 {
		t.Errorf("Prepare created %v", ents)
	}
}

// TestPrepareWriteIsWriteWith: an update through Prepare leaves the folder
// and the lock exactly as WriteWith leaves a twin of it.
func TestPrepareWriteIsWriteWith(t *testing.T) {
	t.Parallel()
	before := []generate.File{file("a/one.yaml", "1\n"), file("a/two.yaml", "2\n"), file("b/gone.yaml", "x\n")}
	after := []generate.File{file("a/one.yaml", "1\n"), file("a/two.yaml", "two\n"), file("c/new.yaml", "n\n")}
	var got [2]map[string]string
	var locks [2]string
	for i := range 2 {
		base := t.TempDir()
		dir, lockPath := filepath.Join(base, "out"), filepath.Join(base, "fleet.lock.yaml")
		if _, err := WriteWith(dir, before, Options{Lock: &Lock{Path: lockPath, New: []byte("lock: 0\n")}}); err != nil {
			t.Fatal(err)
		}
		put(t, dir, map[string]string{"a/notes.txt": "not fleetgen's\n"})
		opt := Options{Lock: &Lock{Path: lockPath, Old: []byte("lock: 0\n"), New: []byte("lock: 1\n")}}
		var st Stats
		var err error
		if i == 0 {
			st, err = WriteWith(dir, after, opt)
		} else {
			p, perr := Prepare(dir, lockPath, nil)
			if p == nil || perr != nil {
				t.Fatalf("Prepare = %v, %v", p, perr)
			}
			st, err = p.Write(after, opt)
			p.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		if st != (Stats{Written: 2, Unchanged: 1, Removed: 1}) {
			t.Errorf("run %d: stats %+v", i, st)
		}
		got[i] = read(t, dir)
		b, err := os.ReadFile(lockPath)
		if err != nil {
			t.Fatal(err)
		}
		locks[i] = string(b)
	}
	if d := cmp.Diff(got[0], got[1]); d != "" {
		t.Errorf("Prepare+Write differs from WriteWith (-WriteWith +Prepare):\n%s", d)
	}
	if locks[0] != "lock: 1\n" || locks[1] != locks[0] {
		t.Errorf("locks %q", locks)
	}
}

// TestPrepareHoldsTheFolder: from Prepare to Close no other render writes
// the folder; one that waited and read the old lock then refuses.
func TestPrepareHoldsTheFolder(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir, lockPath := filepath.Join(base, "out"), filepath.Join(base, "fleet.lock.yaml")
	lock0, lock1 := []byte("lock: 0\n"), []byte("lock: 1\n")
	if _, err := WriteWith(dir, []generate.File{file("a.yaml", "0\n")}, Options{Lock: &Lock{Path: lockPath, New: lock0}}); err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(dir, lockPath, nil)
	if err != nil || p == nil {
		t.Fatalf("Prepare = %v, %v", p, err)
	}
	var waited atomic.Bool
	other := make(chan error, 1)
	go func() {
		_, err := WriteWith(dir, []generate.File{file("a.yaml", "other\n")}, Options{
			Lock:    &Lock{Path: lockPath, Old: lock0, New: []byte("lock: other\n")},
			Waiting: func() { waited.Store(true) },
		})
		other <- err
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-other:
		t.Fatalf("another render wrote the prepared folder: %v", err)
	default:
	}
	if _, err := p.Write([]generate.File{file("a.yaml", "1\n")}, Options{Lock: &Lock{Path: lockPath, Old: lock0, New: lock1}}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if err := <-other; err == nil || !strings.Contains(err.Error(), "changed while this render ran") {
		t.Errorf("the waiting render: %v, want a refusal", err)
	}
	if !waited.Load() {
		t.Error("the other render was not told it waits")
	}
	if got := read(t, dir)["a.yaml"]; got != h+"1\n" {
		t.Errorf("a.yaml = %q", got)
	}
}
