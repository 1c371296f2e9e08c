package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// realAbs is p absolute with its symlinks resolved; a path that does not
// exist yet is only made absolute.
func realAbs(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r, nil
	}
	return abs, nil
}

// within reports whether p is dir or below it (both absolute and clean).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// symlinkOnTheWay returns the first path element of out (as given, made
// absolute) below the current folder or below fleetDir that is a symlink,
// relative to that folder; "" when there is none. Elements that do not exist yet end the search: the
// render creates them as real folders.
func symlinkOnTheWay(out, fleetDir string) (string, error) {
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	var bases []string
	if wd, err := os.Getwd(); err == nil {
		bases = append(bases, wd)
	}
	if d, err := filepath.Abs(fleetDir); err == nil {
		bases = append(bases, d)
	}
	for _, base := range bases {
		rel, err := filepath.Rel(base, abs)
		if err != nil || rel == "." || !filepath.IsLocal(rel) {
			continue
		}
		p := base
		for _, el := range strings.Split(rel, string(filepath.Separator)) {
			p = filepath.Join(p, el)
			fi, err := os.Lstat(p)
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err != nil {
				return "", fmt.Errorf("-o %s: %w", out, err)
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				r, _ := filepath.Rel(base, p)
				return r, nil
			}
		}
	}
	return "", nil
}
