package tree

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// TestMain lets a test run WriteWith in a child process that it can kill.
func TestMain(m *testing.M) {
	if dir := os.Getenv("FLEETGEN_TREE_CHILD"); dir != "" {
		gen, _ := strconv.Atoi(os.Getenv("FLEETGEN_TREE_GEN"))
		lockPath := os.Getenv("FLEETGEN_TREE_LOCK")
		files, lk := bigTree(gen)
		oldFiles, oldLock := bigTree(gen - 1)
		_ = oldFiles
		if _, err := WriteWith(dir, files, Options{Lock: &Lock{Path: lockPath, Old: oldLock, New: lk}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// bigTree is generation gen of a large tree and its lock: each generation
// changes every file, drops a tenth of the clusters and adds as many.
func bigTree(gen int) ([]layout.File, []byte) {
	var files []layout.File
	for c := gen * 30; c < gen*30+300; c++ {
		for _, name := range []string{"cluster.yaml", "token.yaml", "values.yaml", "kustomization.yaml"} {
			files = append(files, file(fmt.Sprintf("clusters/c%05d/%s", c, name), fmt.Sprintf("gen: %d\n%s", gen, strings.Repeat("x: y\n", 40))))
		}
	}
	return files, fmt.Appendf(nil, "# lock\ngen: %d\n", gen)
}

// outsideDir is a folder beside the output folder that a write must never
// change; it holds victim.yaml.
func outsideDir(t *testing.T) (string, string) {
	t.Helper()
	d := t.TempDir()
	victim := filepath.Join(d, "victim.yaml")
	if err := os.WriteFile(victim, []byte(h+"victim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return d, victim
}

func assertOutsideUnchanged(t *testing.T, d string) {
	t.Helper()
	got := read(t, d)
	if len(got) != 1 || got["victim.yaml"] != h+"victim\n" {
		t.Errorf("outside folder changed: %v", got)
	}
}

// TestPlantedSymlinks plants symlinks where fleetgen's temporary, staging,
// journal and output files go; none may make a write land outside DIR.
func TestPlantedSymlinks(t *testing.T) {
	files := []layout.File{file("a.yaml", "a\n"), file("clusters/c1/x.yaml", "x\n"), file("sub/b.yaml", "b\n")}
	cases := []struct {
		name    string
		plant   func(t *testing.T, dir, outside, victim string)
		invalid bool // the write must refuse (exit 2); else succeed
	}{
		{"old temporary names", func(t *testing.T, dir, outside, victim string) {
			for _, n := range []string{tmpPrefix + strconv.Itoa(os.Getpid()) + "-a.yaml", tmpPrefix + "1-a.yaml", "sub/" + tmpPrefix + "0-b.yaml"} {
				os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
				must(t, os.Symlink(victim, filepath.Join(dir, filepath.FromSlash(n))))
			}
		}, false},
		{"output file", func(t *testing.T, dir, outside, victim string) {
			must(t, os.Symlink(victim, filepath.Join(dir, "a.yaml")))
		}, true},
		{"output folder", func(t *testing.T, dir, outside, victim string) {
			must(t, os.Symlink(outside, filepath.Join(dir, "clusters")))
		}, true},
		{"state folder", func(t *testing.T, dir, outside, victim string) {
			must(t, os.Symlink(outside, filepath.Join(dir, MetaDir)))
		}, true},
		{"journal, lock, state and stage names", func(t *testing.T, dir, outside, victim string) {
			meta := filepath.Join(dir, MetaDir)
			must(t, os.Mkdir(meta, 0o755))
			must(t, os.Symlink(victim, filepath.Join(meta, "state")))
			must(t, os.Symlink(victim, filepath.Join(meta, "state.123")))
			must(t, os.Symlink(victim, filepath.Join(meta, ".gitignore")))
			must(t, os.Symlink(outside, filepath.Join(meta, stagePrefix+"0")))
		}, false},
		{"journal that points outside", func(t *testing.T, dir, outside, victim string) {
			meta := filepath.Join(dir, MetaDir)
			stage := stagePrefix + "0123456789abcdef"
			must(t, os.MkdirAll(filepath.Join(meta, stage), 0o755))
			// The staged "file" is a symlink out, the stale one sits behind a
			// symlinked folder: replaying must neither move victim.yaml in
			// nor remove it.
			must(t, os.Symlink(victim, filepath.Join(meta, stage, "0")))
			must(t, os.Symlink(outside, filepath.Join(dir, "sub")))
			j := journal{Stage: stage, Puts: []string{"clusters/victim.yaml"}, Dels: []string{"sub/victim.yaml"}}
			must(t, os.WriteFile(filepath.Join(meta, committedFile), j.marshal(), 0o644))
		}, true},
		{"stale files behind a symlinked folder", func(t *testing.T, dir, outside, victim string) {
			meta := filepath.Join(dir, MetaDir)
			must(t, os.MkdirAll(meta, 0o755))
			must(t, os.Symlink(outside, filepath.Join(dir, "other")))
			j := journal{Dels: []string{"other/victim.yaml"}, News: []string{"other/victim.yaml"}}
			must(t, os.WriteFile(filepath.Join(meta, committedFile), j.marshal(), 0o644))
		}, false},
		{"prepared journal of another lock", func(t *testing.T, dir, outside, victim string) {
			meta := filepath.Join(dir, MetaDir)
			must(t, os.MkdirAll(meta, 0o755))
			j := journal{LockSum: strings.Repeat("0", 64), LockPath: sumHex([]byte(filepath.Join(outside, "fleet.lock.yaml")))}
			must(t, os.WriteFile(filepath.Join(meta, preparedFile), j.marshal(), 0o644))
		}, true},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			outside, victim := outsideDir(t)
			dir := t.TempDir()
			tt.plant(t, dir, outside, victim)
			_, err := Write(dir, files)
			assertOutsideUnchanged(t, outside)
			if tt.invalid {
				if !problem.IsInvalid(err) {
					t.Fatalf("Write = %v, want an input error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if d, err := Diff(dir, files); err != nil || d != "" {
				t.Errorf("Diff after Write = %q, %v", d, err)
			}
			// Leftovers were cleaned: no name of ours is left but the lock
			// and the .gitignore.
			for n := range read(t, dir) {
				if strings.Contains(n, tmpPrefix) {
					t.Errorf("leftover %s", n)
				}
			}
			ents, _ := os.ReadDir(filepath.Join(dir, MetaDir))
			for _, e := range ents {
				if e.Name() != lockFile && e.Name() != ".gitignore" {
					t.Errorf("leftover %s/%s", MetaDir, e.Name())
				}
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestKilledWrite kills a child process at random points of a large update
// (every file changed, clusters added and removed, the lock changed) and
// checks that DIR and the lock are the old pair or the new one, as Diff sees
// them, and that the next write finishes the job.
func TestKilledWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	dir := filepath.Join(base, "out")
	lockPath := filepath.Join(base, "fleet.lock.yaml")
	files0, lock0 := bigTree(0)
	if _, err := WriteWith(dir, files0, Options{Lock: &Lock{Path: lockPath, New: lock0}}); err != nil {
		t.Fatal(err)
	}
	child := func(gen int) *exec.Cmd {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "FLEETGEN_TREE_CHILD="+dir, "FLEETGEN_TREE_GEN="+strconv.Itoa(gen), "FLEETGEN_TREE_LOCK="+lockPath)
		return cmd
	}
	// How long a whole update takes here, to spread the kills over it.
	start := time.Now()
	if out, err := child(1).CombinedOutput(); err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	full := time.Since(start)
	gen := 1
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	seen := map[string]int{}
	for it := 0; it < 8; it++ {
		cmd := child(gen + 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(r.Int64N(int64(full))))
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		oldFiles, oldLock := bigTree(gen)
		newFiles, newLock := bigTree(gen + 1)
		cur, rerr := os.ReadFile(lockPath)
		if rerr != nil {
			t.Fatal(rerr)
		}
		var want []layout.File
		switch {
		case bytes.Equal(cur, oldLock):
			want = oldFiles
		case bytes.Equal(cur, newLock):
			want = newFiles
		default:
			t.Fatalf("lock is neither old nor new: %q", cur)
		}
		d, derr := diffWith(dir, want, Options{Lock: &Lock{Path: lockPath}})
		if derr != nil || d != "" {
			t.Fatalf("iteration %d (child %v): tree disagrees with lock %q: %v\n%.2000s", it, err, cur, derr, d)
		}
		if bytes.Equal(cur, newLock) {
			seen["new"]++
			gen++
		} else {
			seen["old"]++
		}
		state := "finished"
		if err != nil {
			state = "killed"
		}
		seen[state]++
	}
	t.Logf("8 kills over %v: %v", full, seen)
	// The next write finishes or undoes what the last kill left, and leaves
	// nothing of it behind.
	files, lk := bigTree(gen + 1)
	_, oldLock := bigTree(gen)
	if _, err := WriteWith(dir, files, Options{Lock: &Lock{Path: lockPath, Old: oldLock, New: lk}}); err != nil {
		t.Fatal(err)
	}
	if d, err := Diff(dir, files); err != nil || d != "" {
		t.Fatalf("after a full write: %q, %v", d, err)
	}
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if e.Name() != "out" && e.Name() != "fleet.lock.yaml" {
			t.Errorf("leftover beside the lock: %s", e.Name())
		}
	}
}

// TestWriteFullDisk fails the write of each file of an update in turn with
// ENOSPC (TestWriteFullTmpfs fills a real one on Linux): DIR and the lock
// stay old, byte for byte.
func TestWriteFullDisk(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "out")
	lockPath := filepath.Join(base, "fleet.lock.yaml")
	files0, lock0 := bigTree(0)
	if _, err := WriteWith(dir, files0, Options{Lock: &Lock{Path: lockPath, New: lock0}}); err != nil {
		t.Fatal(err)
	}
	files1, lock1 := bigTree(1)
	before := read(t, dir)
	for _, at := range []int{0, 1, len(files1) / 3, len(files1) - 1} {
		n := 0
		var mu sync.Mutex
		writeHook = func(string) error {
			mu.Lock()
			defer mu.Unlock()
			n++
			if n > at {
				return syscall.ENOSPC
			}
			return nil
		}
		_, err := WriteWith(dir, files1, Options{Lock: &Lock{Path: lockPath, Old: lock0, New: lock1}})
		writeHook = nil
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("at %d: WriteWith = %v, want ENOSPC", at, err)
		}
		if got, _ := os.ReadFile(lockPath); !bytes.Equal(got, lock0) {
			t.Errorf("at %d: lock changed", at)
		}
		if d := diffMaps(before, read(t, dir)); d != "" {
			t.Errorf("at %d: tree changed: %s", at, d)
		}
	}
}

func diffMaps(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, "-"+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "+"+k)
		}
	}
	return strings.Join(out, " ")
}

// TestConcurrentWrites runs two renders of one DIR at once, each adding a
// different client ID to the same lock: the second waits, then refuses
// because the lock changed under it; lock and tree agree.
func TestConcurrentWrites(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "out")
	lockPath := filepath.Join(base, "fleet.lock.yaml")
	files0, lock0 := bigTree(0)
	if _, err := WriteWith(dir, files0, Options{Lock: &Lock{Path: lockPath, New: lock0}}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		files []layout.File
		lock  []byte
		err   error
	}
	res := make([]result, 2)
	var waited sync.Map
	var wg sync.WaitGroup
	for i := range res {
		files, _ := bigTree(1 + i)
		res[i].files, res[i].lock = files, fmt.Appendf(nil, "# lock\nwriter: %d\n", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, res[i].err = WriteWith(dir, res[i].files, Options{
				Lock:    &Lock{Path: lockPath, Old: lock0, New: res[i].lock},
				Waiting: func() { waited.Store(i, true) },
			})
		}()
	}
	wg.Wait()
	won := -1
	for i, r := range res {
		if r.err == nil {
			if won >= 0 {
				t.Fatal("both renders committed over the same old lock")
			}
			won = i
		} else if !strings.Contains(r.err.Error(), "changed while this render ran") {
			t.Errorf("writer %d: %v", i, r.err)
		}
	}
	if won < 0 {
		t.Fatal("neither render committed")
	}
	if got, _ := os.ReadFile(lockPath); !bytes.Equal(got, res[won].lock) {
		t.Errorf("lock = %q, want the winner's", got)
	}
	if d, err := Diff(dir, res[won].files); err != nil || d != "" {
		t.Errorf("tree is not the winner's: %v\n%.1000s", err, d)
	}
	n := 0
	waited.Range(func(any, any) bool { n++; return true })
	t.Logf("writers that had to wait: %d", n)
}

// TestStateCacheNeverDecides plants a state file that claims a changed file
// is unchanged: its stat does not match, so Write reads the file and fixes it.
func TestStateCacheNeverDecides(t *testing.T) {
	dir := t.TempDir()
	files := []layout.File{file("a.yaml", "a\n")}
	if _, err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	// A hand edit keeps the size; mtime is set back to what the state says.
	full := filepath.Join(dir, "a.yaml")
	fi, _ := os.Stat(full)
	must(t, os.WriteFile(full, []byte(h+"b\n"), 0o644))
	must(t, os.Chtimes(full, fi.ModTime(), fi.ModTime()))
	st, err := Write(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	if st.Written != 1 {
		t.Errorf("Write = %+v, want the edited file rewritten", st)
	}
	if b, _ := os.ReadFile(full); string(b) != h+"a\n" {
		t.Errorf("a.yaml = %q", b)
	}
}

// TestPlantedFIFO plants FIFOs at the lock's and the journal's names: Write
// and Diff finish (with an error or not) instead of hanging.
func TestPlantedFIFO(t *testing.T) {
	for _, name := range []string{lockFile, preparedFile, committedFile} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.Mkdir(filepath.Join(dir, MetaDir), 0o755))
			must(t, syscall.Mkfifo(filepath.Join(dir, MetaDir, name), 0o644))
			files := []layout.File{file("a.yaml", "a\n")}
			done := make(chan struct{})
			go func() {
				defer close(done)
				Diff(dir, files)
				Write(dir, files)
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("a FIFO in .fleetgen hangs the render")
			}
		})
	}
}

// TestMetaGitignore: the first write leaves .fleetgen/.gitignore, so that
// committing the output folder never commits fleetgen's lock, journal or
// cache, and a planted symlink at that name is not followed.
func TestMetaGitignore(t *testing.T) {
	files := []layout.File{{Path: "a/x.yaml", Data: []byte(layout.Header + "a: 1\n")}}
	dir := t.TempDir()
	if _, err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, MetaDir, ".gitignore"))
	if err != nil || !strings.Contains(string(b), "\n*\n") {
		t.Fatalf(".gitignore = %q, %v; want a line *", b, err)
	}

	outside, victim := outsideDir(t)
	dir = t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, MetaDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, MetaDir, ".gitignore")); err != nil {
		t.Fatal(err)
	}
	Write(dir, files)
	assertOutsideUnchanged(t, outside)
}

// TestKilledBetweenOpenAndWrite is the kill TestKilledWrite finds by chance:
// a prepared update whose new file was created but holds nothing yet, or only
// part of the header. The next write rolls it back and writes the tree; a
// file the journal names that does not begin like fleetgen's stays.
func TestKilledBetweenOpenAndWrite(t *testing.T) {
	files := []layout.File{file("a.yaml", "a\n"), file("clusters/c1/x.yaml", "x\n")}
	for _, tt := range []struct {
		name, content string
		conflict      bool
	}{
		{"empty", "", false},
		{"part of the header", h[:len(h)/2], false},
		{"a file of the user", "user: data\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			meta := filepath.Join(dir, MetaDir)
			must(t, os.MkdirAll(filepath.Join(dir, "clusters", "c1"), 0o755))
			must(t, os.MkdirAll(meta, 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "clusters", "c1", "x.yaml"), []byte(tt.content), 0o644))
			j := journal{Mkdirs: []string{"clusters", "clusters/c1"}, News: []string{"a.yaml", "clusters/c1/x.yaml"}}
			must(t, os.WriteFile(filepath.Join(meta, preparedFile), j.marshal(), 0o644))
			_, err := Write(dir, files)
			if tt.conflict {
				if !problem.IsInvalid(err) {
					t.Fatalf("Write = %v, want a refusal to overwrite", err)
				}
				if b, _ := os.ReadFile(filepath.Join(dir, "clusters", "c1", "x.yaml")); string(b) != tt.content {
					t.Errorf("the user's file changed: %q", b)
				}
				return
			}
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if d, err := Diff(dir, files); err != nil || d != "" {
				t.Errorf("Diff after Write = %q, %v", d, err)
			}
		})
	}
}

// TestCutFilesRewritten leaves a tree as a power loss during an update that
// was not flushed can: files of the render empty or cut inside the header.
// The next write takes them for its own and writes them again; an empty file
// it never wrote (.gitkeep) stays, and so does an empty file it no longer
// renders (nothing says it was fleetgen's).
func TestCutFilesRewritten(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	files := []layout.File{
		file("clusters/a/cluster.yaml", "a: 1\n"),
		file("clusters/b/cluster.yaml", "b: 1\n"),
		file("clusters/c/cluster.yaml", "c: 1\n"),
		file("clusters/d/cluster.yaml", "d: 1\n"),
	}
	if _, err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	must(t, os.Truncate(filepath.Join(dir, "clusters/a/cluster.yaml"), 0))
	must(t, os.WriteFile(filepath.Join(dir, "clusters/b/cluster.yaml"), []byte(layout.Header[:9]), 0o644))
	must(t, os.Truncate(filepath.Join(dir, "clusters/d/cluster.yaml"), 0)) // no longer rendered
	must(t, os.WriteFile(filepath.Join(dir, "clusters/c/.gitkeep"), nil, 0o644))
	if _, err := Write(dir, files[:3]); err != nil {
		t.Fatalf("Write over cut files = %v, want them written again", err)
	}
	if d, err := Diff(dir, files[:3]); err != nil || d != "" {
		t.Errorf("Diff = %q, %v", d, err)
	}
	for _, p := range []string{"clusters/c/.gitkeep", "clusters/d/cluster.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("an empty file fleetgen does not know as its own: %v", err)
		}
	}
}
