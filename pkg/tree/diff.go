package tree

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rogpeppe/go-internal/diff"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/secrets"
)

// Compare returns a unified diff (a/ and b/ prefixes, /dev/null for a
// missing side) from have, what Read found in dir, to files, covering
// changed, missing and stale fleetgen-owned files; "" when equal. Secrets'
// content (layout.File.Secret, or a Secret on either side as
// secrets.Conceal parses it, in any YAML spelling) is never shown. Paths
// are written with inert.Text, so a name from dir never breaks a line; the
// content is raw: print it through inert.Block.
func Compare(dir string, have map[string][]byte, files []layout.File) (string, error) {
	if err := checkPaths(files); err != nil {
		return "", err
	}
	type entry struct {
		path string
		text []byte
	}
	var out []entry
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f.Path] = true
		switch old, ok := have[f.Path]; {
		case ok && old == nil:
			return "", problem.Invalid(fmt.Errorf("%s in %s: not a regular file fleetgen can read", f.Path, dir))
		case !ok:
			out = append(out, entry{f.Path, fileDiff("/dev/null", nil, "b/"+inert.Text(f.Path), f.Data, f.Secret)})
		case !bytes.Equal(old, f.Data):
			out = append(out, entry{f.Path, fileDiff("a/"+inert.Text(f.Path), old, "b/"+inert.Text(f.Path), f.Data, f.Secret)})
		}
	}
	for p, old := range have {
		if !want[p] && bytes.HasPrefix(old, []byte(layout.Header)) && !layout.FluxSystem(p) {
			out = append(out, entry{p, fileDiff("a/"+inert.Text(p), old, "/dev/null", nil, false)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	var b strings.Builder
	for _, e := range out {
		b.Write(e.text)
	}
	return b.String(), nil
}

// Read returns what dir holds: every file outside MetaDir (nil for one that
// is not a regular file fleetgen can read), a folder a killed render left
// half-updated as the tree before or after the update (opt.Lock.Path names
// this render's lock). A missing dir is empty. It writes nothing. It reads
// at most opt.MaxFile bytes of one file and opt.MaxTotal in all (default
// MaxReadFile, MaxReadTotal; each entry costs entryCost more): past either
// it stops with a *BoundError, an input error, having read no file whole
// that is larger than the per-file bound.
func Read(dir string, opt Options) (map[string][]byte, error) {
	lockPath, err := absLock(opt)
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	switch fi, err := os.Lstat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", dir, err)
	case !fi.IsDir():
		return nil, problem.Invalid(fmt.Errorf("output %s is not a folder", dir))
	}
	t, err := openTree(dir)
	if err != nil {
		return nil, err
	}
	defer t.root.Close()
	if fi, err := t.root.Lstat(MetaDir); err == nil && !fi.IsDir() {
		return nil, invalidMeta(dir, "not a folder fleetgen made")
	} else if err == nil {
		// Wait for a render that is writing dir, if there is one.
		held, err := flock(t.root, MetaDir+"/"+lockFile, true, opt.Waiting)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		if held != nil {
			defer held.Close()
		}
	}
	b := newBudget(dir, opt)
	l, err := t.scanWithin(b, byPath(opt.Files), opt.Keep)
	if err != nil {
		return nil, err
	}
	have := l.files
	j, committed, err := t.readJournal(lockPath)
	switch {
	case err != nil:
		return nil, err
	case j == nil:
	case !committed:
		for _, p := range j.News {
			delete(have, p)
		}
	default:
		for _, p := range j.Dels {
			delete(have, p)
		}
		for i, p := range j.Puts {
			if opt.Keep != nil && !opt.Keep(p) {
				continue
			}
			data, err := readRegular(t.root, t.staged(j, i), b.limit())
			if err := b.refuse(p, err); err != nil {
				return nil, err
			}
			if err == nil {
				if err := b.spend(p, int64(len(data))); err != nil {
					return nil, err
				}
				have[p] = data
			}
		}
	}
	return have, nil
}

// fileDiff is the unified diff of one file, with a secret's content hidden.
func fileDiff(oldName string, old []byte, newName string, new []byte, secret bool) []byte {
	if secret || secrets.Conceal(old) || secrets.Conceal(new) {
		return fmt.Appendf(nil, "diff %s %s\n--- %s\n+++ %s\n@@ Secret content differs; not shown @@\n", oldName, newName, oldName, newName)
	}
	if len(old) == 0 && len(new) == 0 {
		// diff.Diff prints nothing for two empty texts; a created or removed empty
		// file still is a difference.
		return fmt.Appendf(nil, "diff %s %s\n--- %s\n+++ %s\n", oldName, newName, oldName, newName)
	}
	return diff.Diff(oldName, old, newName, new)
}
