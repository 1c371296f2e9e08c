package tree

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/diff"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Diff is DiffWith without a lock.
func Diff(dir string, files []generate.File) (string, error) {
	return DiffWith(dir, files, Options{})
}

// DiffWith returns a unified diff (diff -u style, a/ and b/ prefixes) from
// what dir holds to files, covering changed, missing and stale fleetgen-owned
// files; "" when they are equal. opt.Lock.Path names the lock of this render
// (only Path is used).
//
// A missing side is /dev/null. The content of Secrets (files marked
// generate.File.Secret, or holding "kind: Secret" on either side) is never
// shown: their hunk says only that they differ. DiffWith writes nothing: it
// ignores MetaDir and leftovers, and reads a folder that a killed render left
// half-updated as the tree before the update or after it, whichever the
// update's commit point says.
func DiffWith(dir string, files []generate.File, opt Options) (string, error) {
	if err := checkPaths(files); err != nil {
		return "", err
	}
	lockPath, err := absLock(opt)
	if err != nil {
		return "", err
	}
	dir = filepath.Clean(dir)
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		dir = "" // empty: every file is new
	case err != nil:
		return "", fmt.Errorf("read %s: %w", dir, err)
	case !fi.IsDir():
		return "", schema.Invalid(fmt.Errorf("output %s is not a folder", dir))
	}
	var (
		existing = listing{files: map[string]fileKind{}}
		contents = map[string][]byte{} // every regular file of the tree
		v        view
		t        *tree
	)
	if dir != "" {
		if t, err = openTree(dir); err != nil {
			return "", err
		}
		defer t.Close()
		// Wait for a render that is writing dir, if there is one.
		if t.realDir(MetaDir) {
			held, err := flock(t.root, MetaDir+"/"+lockFile, true, opt.Waiting)
			if err != nil {
				return "", fmt.Errorf("lock %s: %w", dir, err)
			}
			if held != nil {
				defer held.Close()
			}
		} else if _, err := t.root.Lstat(MetaDir); err == nil {
			return "", invalidMeta(dir, "not a folder fleetgen made")
		}
		var mu sync.Mutex
		existing, err = t.scan(func(dirfd int, p string) error {
			// A file that cannot be read is not fleetgen's; read (below) tells
			// when it should be.
			if b, err := readAt(dirfd, path.Base(p), maxFile, true); err == nil {
				mu.Lock()
				contents[p] = b
				mu.Unlock()
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		j, committed, err := t.readJournal(lockPath)
		if err != nil {
			return "", err
		}
		v = t.view(j, committed)
	}
	// read returns what the tree holds at p (nil, false when nothing).
	read := func(p string) ([]byte, bool, error) {
		if v.hidden[p] {
			return nil, false, nil
		}
		if s, ok := v.staged[p]; ok {
			if b, err := readRegular(t.root, s, maxFile); err == nil {
				return b, true, nil
			}
		}
		switch kind, ok := existing.files[p]; {
		case !ok:
			return nil, false, nil
		case kind != regular:
			return nil, false, schema.Invalid(fmt.Errorf("%s in %s is not a regular file", p, dir))
		}
		b, ok := contents[p]
		if !ok {
			return nil, false, schema.Invalid(fmt.Errorf("%s in %s: not readable, or larger than %d bytes", p, dir, maxFile))
		}
		return b, true, nil
	}
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f.Path] = true
	}
	type entry struct {
		path string
		text []byte
	}
	out := make([]entry, len(files))
	err = parallel(len(files), func(i int) error {
		f := files[i]
		old, ok, err := read(f.Path)
		if err != nil {
			return fmt.Errorf("read %s: %w", f.Path, err)
		}
		oldName := "a/" + f.Path
		if !ok {
			oldName = "/dev/null"
		}
		if ok && bytes.Equal(old, f.Data) {
			return nil
		}
		out[i] = entry{f.Path, fileDiff(oldName, old, "b/"+f.Path, f.Data, f.Secret)}
		return nil
	})
	if err != nil {
		return "", err
	}
	for p, kind := range existing.files {
		if want[p] || kind != regular || v.hidden[p] {
			continue
		}
		old, ok := contents[p]
		if !ok || !bytes.HasPrefix(old, []byte(generate.Header)) {
			continue // not fleetgen's
		}
		out = append(out, entry{p, fileDiff("a/"+p, old, "/dev/null", nil, false)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	var b strings.Builder
	for _, e := range out {
		b.Write(e.text)
	}
	return b.String(), nil
}

// fileDiff is the unified diff of one file, with a secret's content hidden.
func fileDiff(oldName string, old []byte, newName string, new []byte, secret bool) []byte {
	if secret || isSecret(old) || isSecret(new) {
		return fmt.Appendf(nil, "diff %s %s\n--- %s\n+++ %s\n@@ Secret content differs; not shown @@\n", oldName, newName, oldName, newName)
	}
	if len(old) == 0 && len(new) == 0 {
		// diff.Diff prints nothing for two empty texts; a created or removed empty
		// file still is a difference.
		return fmt.Appendf(nil, "diff %s %s\n--- %s\n+++ %s\n", oldName, newName, oldName, newName)
	}
	return diff.Diff(oldName, old, newName, new)
}

// isSecret reports whether a manifest holds a top-level kind: Secret.
func isSecret(b []byte) bool {
	return bytes.HasPrefix(b, []byte("kind: Secret\n")) || bytes.Contains(b, []byte("\nkind: Secret\n"))
}
