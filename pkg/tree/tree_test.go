package tree

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/test/testenv"
)

const h = layout.Header

func file(p, body string) layout.File {
	return layout.File{Path: p, Data: []byte(h + body)}
}

// put creates files (path → content) under dir.
func put(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	testenv.WriteTree(t, dir, files)
}

// read returns every file under dir (path → content) and every folder as
// path + "/".
func read(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if rel == MetaDir {
			return filepath.SkipDir
		}
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			out[rel] = "(symlink)"
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWrite(t *testing.T) {
	tests := map[string]struct {
		before  map[string]string
		files   []layout.File
		want    map[string]string
		stats   Stats
		invalid bool // the error is an input error and dir is unchanged
	}{
		"fresh": {
			files: []layout.File{file("a/b.yaml", "b\n"), file("c.yaml", "c\n")},
			want:  map[string]string{"a/": "", "a/b.yaml": h + "b\n", "c.yaml": h + "c\n"},
			stats: Stats{Written: 2},
		},
		"overwrite changed, keep identical": {
			before: map[string]string{"a.yaml": h + "old\n", "b.yaml": h + "same\n"},
			files:  []layout.File{file("a.yaml", "new\n"), file("b.yaml", "same\n")},
			want:   map[string]string{"a.yaml": h + "new\n", "b.yaml": h + "same\n"},
			stats:  Stats{Written: 1, Unchanged: 1},
		},
		"prune stale owned files and emptied folders": {
			before: map[string]string{
				"clusters/old/source.yaml": h + "x\n",
				"clusters/old/notes.txt":   "mine\n",
				"agents/gone/values.yaml":  h + "x\n",
				"keep.yaml":                h + "k\n",
			},
			files: []layout.File{file("keep.yaml", "k\n")},
			want: map[string]string{
				"clusters/":              "",
				"clusters/old/":          "",
				"clusters/old/notes.txt": "mine\n",
				"keep.yaml":              h + "k\n",
			},
			stats: Stats{Unchanged: 1, Removed: 2},
		},
		"foreign files untouched": {
			before: map[string]string{"README.md": "hello\n", "manager/extra.yaml": "kind: ConfigMap\n"},
			files:  []layout.File{file("manager/kustomization.yaml", "k\n")},
			want: map[string]string{
				"README.md":                  "hello\n",
				"manager/":                   "",
				"manager/extra.yaml":         "kind: ConfigMap\n",
				"manager/kustomization.yaml": h + "k\n",
			},
			stats: Stats{Written: 1},
		},
		"foreign file in the way": {
			before:  map[string]string{"a.yaml": "user\n", "b.yaml": h + "old\n"},
			files:   []layout.File{file("a.yaml", "x\n"), file("b.yaml", "new\n")},
			invalid: true,
		},
		"foreign file where a folder must go": {
			before:  map[string]string{"a": "user\n"},
			files:   []layout.File{file("a/b.yaml", "x\n")},
			invalid: true,
		},
		"stale owned file where a folder must go": {
			before: map[string]string{"a": h + "old\n"},
			files:  []layout.File{file("a/b.yaml", "x\n")},
			want:   map[string]string{"a/": "", "a/b.yaml": h + "x\n"},
			stats:  Stats{Written: 1, Removed: 1},
		},
		"escape with ..": {
			before:  map[string]string{"a.yaml": h + "old\n"},
			files:   []layout.File{file("../x.yaml", "x\n"), file("a.yaml", "new\n")},
			invalid: true,
		},
		"escape inside path": {
			files:   []layout.File{file("a/../../x.yaml", "x\n")},
			invalid: true,
		},
		"absolute path": {
			files:   []layout.File{file("/etc/x.yaml", "x\n")},
			invalid: true,
		},
		"empty path": {
			files:   []layout.File{file("", "x\n")},
			invalid: true,
		},
		"duplicate path": {
			files:   []layout.File{file("a.yaml", "x\n"), file("a.yaml", "y\n")},
			invalid: true,
		},
		"file and folder": {
			files:   []layout.File{file("a", "x\n"), file("a/b", "y\n")},
			invalid: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			put(t, dir, tt.before)
			before := read(t, dir)
			st, err := Write(dir, tt.files)
			if tt.invalid {
				if err == nil || !problem.IsInvalid(err) {
					t.Fatalf("Write: got %v, want an input error", err)
				}
				if diff := cmp.Diff(before, read(t, dir)); diff != "" {
					t.Errorf("dir changed (-before +after):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, read(t, dir)); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.stats, Stats{Written: st.Written, Unchanged: st.Unchanged, Removed: st.Removed}); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			// A second Write of the same files changes nothing.
			st, err = Write(dir, tt.files)
			if err != nil {
				t.Fatal(err)
			}
			if st.Written != 0 || st.Removed != 0 {
				t.Errorf("second Write: %+v, want nothing written or removed", st)
			}
			if d, err := Diff(dir, tt.files); err != nil || d != "" {
				t.Errorf("Diff after Write = %q, %v; want no diff", d, err)
			}
		})
	}
}

func TestWriteCreatesMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x", "out")
	if _, err := Write(dir, []layout.File{file("a.yaml", "a\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
}

func TestWriteOutputIsAFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	put(t, dir, map[string]string{"out": "x"})
	if _, err := Write(out, []layout.File{file("a.yaml", "a\n")}); err == nil {
		t.Fatal("Write to a file: got no error")
	}
}

func TestWriteFailure(t *testing.T) {
	// A name the file system rejects (longer than NAME_MAX) makes the write
	// itself fail, as a full disk would, after a changed file was staged.
	dir := t.TempDir()
	put(t, dir, map[string]string{"a.yaml": h + "old\n"})
	long := strings.Repeat("x", 300) + ".yaml"
	_, err := Write(dir, []layout.File{file("a.yaml", "new\n"), file(long, "x\n")})
	if err == nil || problem.IsInvalid(err) {
		t.Fatalf("Write: got %v, want an environment error", err)
	}
	got := read(t, dir)
	if diff := cmp.Diff(map[string]string{"a.yaml": h + "old\n"}, got); diff != "" {
		t.Errorf("dir (-want +got):\n%s", diff)
	}
}

func TestDiff(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, map[string]string{
		"changed.yaml": h + "a: 1\nb: 2\n",
		"same.yaml":    h + "s\n",
		"stale.yaml":   h + "gone: true\n",
		"foreign.yaml": "user: true\n",
		"secret.yaml":  h + "kind: Secret\ndata:\n  value: b2xk\n",
	})
	files := []layout.File{
		file("changed.yaml", "a: 1\nb: 3\n"),
		file("new/x.yaml", "x: 1\n"),
		file("same.yaml", "s\n"),
		{Path: "secret.yaml", Data: []byte(h + "kind: Secret\ndata:\n  value: bmV3\n"), Secret: true},
	}
	got, err := Diff(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	want := `diff a/changed.yaml b/changed.yaml
--- a/changed.yaml
+++ b/changed.yaml
@@ -1,3 +1,3 @@
 # Generated by fleetgen. DO NOT EDIT.
 a: 1
-b: 2
+b: 3
diff /dev/null b/new/x.yaml
--- /dev/null
+++ b/new/x.yaml
@@ -0,0 +1,2 @@
+# Generated by fleetgen. DO NOT EDIT.
+x: 1
diff a/secret.yaml b/secret.yaml
--- a/secret.yaml
+++ b/secret.yaml
@@ Secret content differs; not shown @@
diff a/stale.yaml /dev/null
--- a/stale.yaml
+++ /dev/null
@@ -1,2 +0,0 @@
-# Generated by fleetgen. DO NOT EDIT.
-gone: true
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}
	if strings.Contains(got, "bmV3") || strings.Contains(got, "b2xk") {
		t.Error("Diff shows secret content")
	}
	// Diff writes nothing.
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("Diff created new/")
	}
}

func TestDiffMissingDir(t *testing.T) {
	got, err := Diff(filepath.Join(t.TempDir(), "none"), []layout.File{file("a.yaml", "a\n")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "+++ b/a.yaml") {
		t.Errorf("Diff = %q, want a creation of a.yaml", got)
	}
}

func TestWriteFreshFailureLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	long := strings.Repeat("x", 300) + ".yaml"
	if _, err := Write(dir, []layout.File{file("a.yaml", "a\n"), file(long, "x\n")}); err == nil {
		t.Fatal("Write: got no error")
	}
	if diff := cmp.Diff(map[string]string{}, read(t, parent)); diff != "" {
		t.Errorf("parent of dir (-want +got):\n%s", diff)
	}
}

// Write is WriteWith without a lock.
func Write(dir string, files []layout.File) (Stats, error) {
	return WriteWith(dir, files, Options{})
}

// Diff is diffWith without a lock.
func Diff(dir string, files []layout.File) (string, error) {
	return diffWith(dir, files, Options{})
}

// diffWith is Read, then Compare. It also checks Options.Keep on every
// tree it reads: a second Read that keeps half the paths must return the
// first one's files for those paths, and nothing else.
func diffWith(dir string, files []layout.File, opt Options) (string, error) {
	have, err := Read(dir, opt)
	if err != nil {
		return "", err
	}
	if err := sameKept(dir, opt, have); err != nil {
		return "", err
	}
	return Compare(dir, have, files)
}

func sameKept(dir string, opt Options, all map[string][]byte) error {
	keep := func(p string) bool { return len(p)%2 == 0 }
	opt.Keep = keep
	got, err := Read(dir, opt)
	if err != nil {
		return fmt.Errorf("Read with Keep: %w", err)
	}
	want := map[string][]byte{}
	for p, b := range all {
		if keep(p) {
			want[p] = b
		}
	}
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		return fmt.Errorf("Read with Keep is not Read's files it keeps (-want +got):\n%s", d)
	}
	return nil
}

// Read with the files a render compares holds what did not change once:
// an unchanged file comes back as the render's own bytes, a changed one as
// its own copy of what the disk holds (not the buffer the next file is read
// into).
func TestReadHoldsUnchangedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	put(t, dir, map[string]string{"a.yaml": h + "old a\n", "b.yaml": h + "same b\n", "c.yaml": h + "old c, longer than the rest\n"})
	files := []layout.File{file("a.yaml", "new a\n"), file("b.yaml", "same b\n"), file("c.yaml", "new c\n")}
	have, err := Read(dir, Options{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for p, b := range have {
		got[p] = string(b)
	}
	want := map[string]string{"a.yaml": h + "old a\n", "b.yaml": h + "same b\n", "c.yaml": h + "old c, longer than the rest\n"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Read (-want +got):\n%s", d)
	}
	if &have["b.yaml"][0] != &files[1].Data[0] {
		t.Error("the unchanged b.yaml is a second copy, not the render's bytes")
	}
	if &have["a.yaml"][0] == &have["c.yaml"][0] {
		t.Error("two changed files share one buffer")
	}
}

// Read with Keep takes a committed update's staged files only for the paths
// it keeps: one it refuses is not read (here, one over MaxFile).
func TestReadKeepCommittedJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	put(t, dir, map[string]string{"a.yaml": h + "old a\n", "bb.yaml": h + "old bb\n"})
	stage := stagePrefix + "0123456789abcdef"
	meta := filepath.Join(dir, MetaDir)
	must(t, os.MkdirAll(filepath.Join(meta, stage), 0o755))
	must(t, os.WriteFile(filepath.Join(meta, stage, "0"), []byte(h+"new a\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(meta, stage, "1"), []byte(h+"new bb, too long\n"), 0o644))
	j := journal{Stage: stage, Puts: []string{"a.yaml", "bb.yaml"}}
	must(t, os.WriteFile(filepath.Join(meta, committedFile), j.marshal(), 0o644))

	limit := int64(len(h + "new a\n"))
	if _, err := Read(dir, Options{MaxFile: limit}); err == nil {
		t.Fatal("Read of the whole tree = nil error, want bb.yaml's staged file over MaxFile")
	}
	have, err := Read(dir, Options{MaxFile: limit, Keep: func(p string) bool { return p == "a.yaml" }})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for p, b := range have {
		got[p] = string(b)
	}
	if d := cmp.Diff(map[string]string{"a.yaml": h + "new a\n"}, got); d != "" {
		t.Errorf("Read with Keep (-want +got):\n%s", d)
	}
}
