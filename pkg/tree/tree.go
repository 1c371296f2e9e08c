// Package tree writes a rendered file set to disk and compares it with what is
// there. It owns only files that start with generate.Header.
package tree

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Stats counts what Write did.
type Stats struct {
	Written, Unchanged, Removed int
}

// tmpPrefix starts the name of every temporary file Write makes; Write skips
// such files when it looks for stale ones.
const tmpPrefix = ".fleetgen-tmp-"

// Write makes dir hold files: it writes each new or changed file atomically
// (temporary file and rename), leaves identical files alone, removes files an
// earlier render wrote (they start with generate.Header) that files no longer
// has, removes folders that leaves empty, and never touches any other file.
// Paths are validated to stay inside dir.
//
// dir is created when missing. Every path is checked and every existing file
// read before anything is changed, so that an invalid path or a foreign file in
// the way (an input error, *schema.InvalidError) leaves dir as it was. Writes run
// on a bounded pool of workers.
func Write(dir string, files []generate.File) (Stats, error) {
	var st Stats
	if err := checkPaths(files); err != nil {
		return st, err
	}
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f.Path] = true
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return writeFresh(dir, files)
	}
	existing, err := scan(dir)
	if err != nil {
		return st, err
	}

	// Plan: which files need writing, which existing ones are stale.
	todo := make([]bool, len(files))
	var conflicts []string
	var mu sync.Mutex
	err = parallel(len(files), func(i int) error {
		f := files[i]
		kind, ok := existing.files[f.Path]
		if !ok {
			if existing.dirs[f.Path] {
				mu.Lock()
				conflicts = append(conflicts, f.Path+" is a folder")
				mu.Unlock()
			}
			todo[i] = true
			return nil
		}
		if kind != regular {
			mu.Lock()
			conflicts = append(conflicts, f.Path+" is not a regular file")
			mu.Unlock()
			return nil
		}
		old, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return fmt.Errorf("read %s: %w", f.Path, err)
		}
		if !bytes.HasPrefix(old, []byte(generate.Header)) {
			mu.Lock()
			conflicts = append(conflicts, f.Path+" exists and was not written by fleetgen")
			mu.Unlock()
			return nil
		}
		todo[i] = !bytes.Equal(old, f.Data)
		return nil
	})
	if err != nil {
		return st, err
	}
	// A wanted file below an existing file (a/b/c over the file a/b) or an
	// existing file below a wanted one is in the way unless it is stale and ours.
	var stale []string
	for p, kind := range existing.files {
		if want[p] || kind != regular {
			continue
		}
		owned, err := isOwned(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return st, err
		}
		if owned {
			stale = append(stale, p)
		}
	}
	staleSet := make(map[string]bool, len(stale))
	for _, p := range stale {
		staleSet[p] = true
	}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			if _, ok := existing.files[d]; ok && !staleSet[d] {
				conflicts = append(conflicts, d+" is in the way of "+f.Path)
			}
		}
	}
	if len(conflicts) > 0 {
		sort.Strings(conflicts)
		return st, schema.Invalid(fmt.Errorf("write %s: refusing to overwrite files fleetgen does not own:\n  %s", dir, strings.Join(conflicts, "\n  ")))
	}

	// Apply: remove stale files first (one may stand where a folder must go),
	// then create folders, then write.
	sort.Strings(stale)
	for _, p := range stale {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			return st, fmt.Errorf("remove stale %s: %w", p, err)
		}
		st.Removed++
	}
	removeEmptyParents(dir, stale)

	var idx []int
	for i := range files {
		if !todo[i] {
			st.Unchanged++
			continue
		}
		idx = append(idx, i)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, fmt.Errorf("create %s: %w", dir, err)
	}
	if err := makeDirs(dir, files, idx); err != nil {
		return st, err
	}
	var written atomic.Int64
	err = parallel(len(idx), func(j int) error {
		f := files[idx[j]]
		if err := writeFile(dir, f.Path, f.Data, false); err != nil {
			return err
		}
		written.Add(1)
		return nil
	})
	st.Written = int(written.Load())
	return st, err
}

// writeFresh writes files into a new folder beside dir and renames it to dir
// at the end: the whole tree appears at once, or not at all, and each file
// costs no rename of its own.
func writeFresh(dir string, files []generate.File) (Stats, error) {
	var st Stats
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return st, fmt.Errorf("create %s: %w", parent, err)
	}
	stage, err := os.MkdirTemp(parent, tmpPrefix+filepath.Base(dir)+"-")
	if err != nil {
		return st, fmt.Errorf("create %s: %w", dir, err)
	}
	fail := func(err error) (Stats, error) {
		os.RemoveAll(stage)
		return Stats{}, err
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return fail(fmt.Errorf("create %s: %w", dir, err))
	}
	if err := makeDirs(stage, files, nil); err != nil {
		return fail(err)
	}
	err = parallel(len(files), func(i int) error {
		return writeFile(stage, files[i].Path, files[i].Data, true)
	})
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(stage, dir); err != nil {
		return fail(fmt.Errorf("create %s: %w", dir, err))
	}
	st.Written = len(files)
	return st, nil
}

// makeDirs creates the folders of files (those of idx, or all when idx is nil)
// below root, each once.
func makeDirs(root string, files []generate.File, idx []int) error {
	dirs := map[string]bool{}
	if idx == nil {
		for _, f := range files {
			dirs[path.Dir(f.Path)] = true
		}
	} else {
		for _, i := range idx {
			dirs[path.Dir(files[i].Path)] = true
		}
	}
	list := make([]string, 0, len(dirs))
	for d := range dirs {
		list = append(list, d)
	}
	sort.Strings(list)
	made := map[string]bool{".": true}
	for _, d := range list {
		if made[d] {
			continue
		}
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
		for x := d; x != "."; x = path.Dir(x) {
			made[x] = true
		}
	}
	return nil
}

// writeFile writes data to dir/p through a temporary file in the same folder and
// a rename, so a reader sees the old or the new file, never a part. direct
// writes dir/p itself, for a folder no reader sees yet.
func writeFile(dir, p string, data []byte, direct bool) error {
	target := filepath.Join(dir, filepath.FromSlash(p))
	if direct {
		fh, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, err = fh.Write(data)
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		return nil
	}
	tmp := filepath.Join(filepath.Dir(target), tmpPrefix+strconv.Itoa(os.Getpid())+"-"+filepath.Base(target))
	fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	_, err = fh.Write(data)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// removeEmptyParents removes the folders of removed files, and their parents,
// that are now empty, never dir itself.
func removeEmptyParents(dir string, removed []string) {
	seen := map[string]bool{}
	for _, p := range removed {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if seen[d] {
				break
			}
			seen[d] = true
			// os.Remove fails on a folder that is not empty: that is the test.
			if os.Remove(filepath.Join(dir, filepath.FromSlash(d))) != nil {
				break
			}
		}
	}
}

type fileKind int

const (
	regular fileKind = iota
	other            // symlink, device, …: never ours
)

type listing struct {
	files map[string]fileKind // slash paths relative to dir
	dirs  map[string]bool
}

// scan lists dir; a missing dir is empty.
func scan(dir string) (listing, error) {
	l := listing{files: map[string]fileKind{}, dirs: map[string]bool{}}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, fmt.Errorf("read %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return l, schema.Invalid(fmt.Errorf("output %s is not a folder", dir))
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			l.dirs[rel] = true
		case d.Type().IsRegular():
			if !strings.HasPrefix(d.Name(), tmpPrefix) {
				l.files[rel] = regular
			}
		default:
			l.files[rel] = other
		}
		return nil
	})
	if err != nil {
		return l, fmt.Errorf("read %s: %w", dir, err)
	}
	return l, nil
}

// isOwned reports whether the file at p starts with generate.Header.
func isOwned(p string) (bool, error) {
	fh, err := os.Open(p)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", p, err)
	}
	defer fh.Close()
	buf := make([]byte, len(generate.Header))
	n, err := io.ReadFull(fh, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read %s: %w", p, err)
	}
	return string(buf[:n]) == generate.Header, nil
}

// checkPaths rejects empty, absolute, unclean, escaping and duplicate paths,
// and a path that is also another path's folder.
func checkPaths(files []generate.File) error {
	var bad []string
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		p := f.Path
		switch {
		case p == "":
			bad = append(bad, "empty path")
		case strings.Contains(p, `\`) || strings.ContainsRune(p, 0):
			bad = append(bad, fmt.Sprintf("%q: want a slash-separated path", p))
		case path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
			bad = append(bad, fmt.Sprintf("%q: want a relative path", p))
		case path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../"):
			bad = append(bad, fmt.Sprintf("%q: want a clean path inside the output folder", p))
		case seen[p]:
			bad = append(bad, fmt.Sprintf("%q: listed twice", p))
		default:
			seen[p] = true
		}
	}
	for p := range seen {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if seen[d] {
				bad = append(bad, fmt.Sprintf("%q: is both a file and the folder of %q", d, p))
			}
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return schema.Invalid(fmt.Errorf("output paths: %s", strings.Join(bad, "; ")))
	}
	return nil
}

// workers bounds parallel file I/O: syscalls block their thread, so a few more
// workers than cores keeps the disk busy.
func workers(n int) int {
	w := runtime.GOMAXPROCS(0) * 4
	if w < 4 {
		w = 4
	}
	if w > 32 {
		w = 32
	}
	if w > n {
		w = n
	}
	return w
}

// parallel calls fn(0..n-1) on a bounded pool and returns the error of the
// lowest index that failed, so the result does not depend on scheduling.
func parallel(n int, fn func(i int) error) error {
	if n == 0 {
		return nil
	}
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers(n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				errs[i] = fn(i)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
