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

	"fleetgen.dev/fleetgen/pkg/generate"
)

// Diff returns a unified diff (diff -u style, a/ and b/ prefixes) from what dir
// holds to files, covering changed, missing and stale fleetgen-owned files;
// "" when they are equal.
//
// A missing side is /dev/null. The content of Secrets (files marked
// generate.File.Secret, or holding "kind: Secret" on either side) is never
// shown: their hunk says only that they differ. Diff writes nothing.
func Diff(dir string, files []generate.File) (string, error) {
	if err := checkPaths(files); err != nil {
		return "", err
	}
	existing, err := scan(dir)
	if err != nil {
		return "", err
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
		old, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		oldName := "a/" + f.Path
		if errors.Is(err, fs.ErrNotExist) {
			old, oldName = nil, "/dev/null"
		} else if err != nil {
			return fmt.Errorf("read %s: %w", f.Path, err)
		}
		if bytes.Equal(old, f.Data) && oldName != "/dev/null" {
			return nil
		}
		out[i] = entry{f.Path, fileDiff(oldName, old, "b/"+f.Path, f.Data, f.Secret)}
		return nil
	})
	if err != nil {
		return "", err
	}
	for p, kind := range existing.files {
		if want[p] || kind != regular {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		owned, err := isOwned(full)
		if err != nil {
			return "", err
		}
		if !owned {
			continue
		}
		old, err := os.ReadFile(full)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", p, err)
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
