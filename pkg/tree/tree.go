// Package tree writes a rendered file set to disk and compares it with what is
// there. It owns only files that start with layout.Header, and MetaDir. It
// reaches the output folder's files through an os.Root of it: nothing in the
// folder (a pull request may have filled it) leads anything out of it.
package tree

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// Stats counts what WriteWith did.
type Stats struct{ Written, Unchanged, Removed int }

const tmpPrefix = ".fleetgen-tmp-" // temporary files of earlier versions: removed, ignored

// Lock is fleet.lock.yaml as WriteWith commits it, in one commit with the tree.
type Lock struct {
	Path     string // fleet.lock.yaml
	Old, New []byte // as the render read it (nil: no file; WriteWith fails when it changed since), and to write
}

// Options are WriteWith's and Read's.
type Options struct {
	Lock    *Lock  // when set, committed with the tree
	Waiting func() // called when the call waits for another render of the folder
	// MaxFile and MaxTotal bound what Read reads (0: MaxReadFile and
	// MaxReadTotal).
	MaxFile, MaxTotal int64
	// Files, for Read, are what the caller compares the tree with: a file
	// whose content is its entry there is returned with that entry's bytes,
	// so that what did not change is held once, not twice.
	Files []layout.File
	// Keep, for Read, limits what it returns to the files whose path Keep
	// accepts (nil: all); the others are listed, not read, and cost only
	// their entry in the budget.
	Keep func(path string) bool
}

// writeHook, when set by a test, can fail the creation of each file.
var writeHook func(p string) error

// WriteWith makes dir hold files, and opt.Lock its new content: changed files
// written, fleetgen's files (layout.Header) that files lacks removed with
// the folders left empty, no other file touched. The update is atomic for
// tree and lock (see journal): after a failure, a kill or a full disk both
// are old or new. dir may not be a symlink; files are created with O_EXCL
// through real folders. A bad path or a foreign file in the way is an input
// error (*problem.InvalidError) before anything changes. A second WriteWith of
// dir waits for the first (flock on dir/MetaDir/lock).
func WriteWith(dir string, files []layout.File, opt Options) (st Stats, err error) {
	if err := checkPaths(files); err != nil {
		return st, err
	}
	lockPath, err := absLock(opt)
	if err != nil {
		return st, err
	}
	dir = filepath.Clean(dir)
	fi, lerr := os.Lstat(dir)
	switch {
	case lerr == nil && !fi.IsDir():
		return st, problem.Invalid(fmt.Errorf("output %s is not a folder", dir))
	case errors.Is(lerr, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return st, fmt.Errorf("create %s: %w", dir, err)
		}
		if merr := os.Mkdir(dir, 0o755); merr != nil && !errors.Is(merr, fs.ErrExist) {
			return st, fmt.Errorf("create %s: %w", dir, merr)
		} else if merr == nil {
			defer func() { // nothing written on failure: not even the folder
				if err != nil {
					os.RemoveAll(dir)
				}
			}()
		}
	case lerr != nil:
		return st, fmt.Errorf("read %s: %w", dir, lerr)
	}
	if err := os.Mkdir(filepath.Join(dir, MetaDir), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return st, fmt.Errorf("create %s: %w", filepath.Join(dir, MetaDir), err)
	}
	t, err := openTree(dir)
	if err != nil {
		return st, err
	}
	defer t.root.Close()
	if !t.realDir(MetaDir) {
		return st, invalidMeta(dir, "not a folder fleetgen made")
	}
	held, err := flock(t.root, MetaDir+"/"+lockFile, false, opt.Waiting)
	if err != nil {
		return st, fmt.Errorf("lock %s: %w", dir, err)
	}
	defer held.Close()
	if err := t.recover(lockPath); err != nil {
		return st, err
	}
	existing, err := t.scanWithin(nil, byPath(files), nil)
	if err != nil {
		return st, err
	}
	if err := t.ignoreMeta(); err != nil {
		return st, err
	}
	return t.update(lockPath, files, existing, opt)
}

func absLock(opt Options) (string, error) {
	if opt.Lock == nil {
		return "", nil
	}
	return filepath.Abs(opt.Lock.Path)
}

// recover finishes what a killed render left, before anything looks at the
// tree or the lock.
func (t *tree) recover(lockPath string) error {
	j, committed, err := t.readJournal(lockPath)
	if err != nil {
		return err
	}
	return t.finish(j, committed, lockPath)
}

// update is WriteWith once MetaDir exists, is locked and was recovered, and
// the tree was read into existing.
func (t *tree) update(lockPath string, files []layout.File, existing listing, opt Options) (Stats, error) {
	var st Stats
	var newLock []byte
	if opt.Lock != nil {
		cur, err := readLock(lockPath)
		if err != nil {
			return st, err
		}
		if !bytes.Equal(cur, opt.Lock.Old) {
			return st, fmt.Errorf("%s changed while this render ran (another render or mirror at the same time?); nothing written, run render again", opt.Lock.Path)
		}
		if !bytes.Equal(opt.Lock.New, opt.Lock.Old) {
			newLock = opt.Lock.New
		}
	}
	j, leftovers, err := t.plan(files, existing)
	if err != nil {
		return st, err
	}
	for _, l := range leftovers {
		t.root.Remove(l)
	}
	st = Stats{Written: len(j.News) + len(j.Puts), Removed: len(j.Dels)}
	st.Unchanged = len(files) - st.Written
	if st.Written+st.Removed == 0 && newLock == nil {
		return st, nil
	}
	if err := t.commit(files, j, lockPath, newLock); err != nil {
		return Stats{}, err
	}
	return st, nil
}

// byPath maps each file's path to its content.
func byPath(files []layout.File) map[string][]byte {
	m := make(map[string][]byte, len(files))
	for _, f := range files {
		m[f.Path] = f.Data
	}
	return m
}

// listing is what scanWithin found (MetaDir, .git folders and leftovers aside).
type listing struct {
	files     map[string][]byte // slash path → content; nil: not a regular file fleetgen can read
	dirs      map[string]bool
	leftovers []string // temporary files of earlier versions
}

// plan decides every step of the update from what scanWithin found, and the
// leftovers to remove.
func (t *tree) plan(files []layout.File, existing listing) (*journal, []string, error) {
	var j journal
	var conflicts []string
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f.Path] = true
		switch old, ok := existing.files[f.Path]; {
		case !ok && existing.dirs[f.Path]:
			conflicts = append(conflicts, f.Path+" is a folder")
		case !ok:
			j.News = append(j.News, f.Path)
		case old == nil:
			conflicts = append(conflicts, f.Path+" is not a regular file fleetgen can read")
		case bytes.Equal(old, f.Data):
		case bytes.HasPrefix(old, []byte(layout.Header)) || isCut(old): // ours, or cut by a power loss
			j.Puts = append(j.Puts, f.Path)
		default:
			conflicts = append(conflicts, f.Path+" exists and was not written by fleetgen")
		}
	}
	for q, old := range existing.files {
		if !want[q] && bytes.HasPrefix(old, []byte(layout.Header)) && !layout.FluxSystem(q) {
			j.Dels = append(j.Dels, q)
		}
	}
	// A wanted file below an existing file (a/b/c over the file a/b) is in the
	// way unless that file is stale and ours; then the new file waits for the
	// stale one to go, after the commit point.
	stale := make(map[string]bool, len(j.Dels))
	for _, q := range j.Dels {
		stale[q] = true
	}
	var news []string
	mkdirs := map[string]bool{}
	for _, q := range j.News {
		blocked := false
		for d := path.Dir(q); d != "."; d = path.Dir(d) {
			if _, ok := existing.files[d]; ok {
				if !stale[d] {
					conflicts = append(conflicts, d+" is in the way of "+q)
				}
				blocked = true
			}
		}
		if blocked {
			j.Puts = append(j.Puts, q)
			continue
		}
		news = append(news, q)
		for d := path.Dir(q); d != "." && !existing.dirs[d] && !mkdirs[d]; d = path.Dir(d) {
			mkdirs[d] = true
		}
	}
	if len(conflicts) > 0 {
		sort.Strings(conflicts)
		return nil, nil, problem.Invalid(fmt.Errorf("write %s: refusing to overwrite files fleetgen does not own:\n  %s", t.dir, strings.Join(conflicts, "\n  ")))
	}
	j.News, j.Mkdirs = news, slices.Collect(maps.Keys(mkdirs))
	for _, l := range [][]string{j.News, j.Mkdirs, j.Puts, j.Dels, existing.leftovers} {
		sort.Strings(l)
	}
	return &j, existing.leftovers, nil
}

// commit carries out a planned update: journal, writes, flush, commit point,
// roll-forward. On an error before the commit point it rolls back.
func (t *tree) commit(files []layout.File, j *journal, lockPath string, newLock []byte) (err error) {
	if len(j.Puts) > 0 {
		j.Stage = stagePrefix + randomName()
	}
	if newLock != nil {
		j.LockSum, j.LockPath = sumHex(newLock), sumHex([]byte(lockPath))
	}
	data := byPath(files)
	prepared := MetaDir + "/" + preparedFile
	if err := createFile(t.root, prepared, j.marshal(), true, ""); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(t.dir, prepared), err)
	}
	done := false
	defer func() {
		if !done { // before the commit point: undo, as the next render would
			t.finish(j, false, lockPath)
		}
	}()
	if err := t.syncPath(MetaDir); err != nil {
		return err
	}
	// New files, and not flushed (as cp -r): no old content is at stake,
	// and after a power loss the next render takes a file left empty, or cut
	// inside the header, for its own (plan).
	if err := t.createNew(j.Mkdirs, j.News, data); err != nil {
		return err
	}
	// What replaces a file (staged files, the lock) is flushed before the
	// commit point: a power loss never leaves a file emptied.
	if j.Stage != "" {
		stage := MetaDir + "/" + j.Stage
		if err := t.root.Mkdir(stage, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", stage, err)
		}
		sr, err := t.root.OpenRoot(stage)
		if err != nil {
			return fmt.Errorf("create %s: %w", stage, err)
		}
		defer sr.Close()
		var g errgroup.Group
		g.SetLimit(16) // more than cores: each waits in fsync
		for i, q := range j.Puts {
			g.Go(func() error {
				if err := createFile(sr, strconv.Itoa(i), data[q], true, q); err != nil {
					return fmt.Errorf("write %s: %w", q, err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		if err := t.syncPath(stage); err != nil {
			return err
		}
	}
	if err := t.syncPath(MetaDir); err != nil {
		return err
	}
	if newLock != nil {
		if err := commitLock(lockPath, j.LockSum, newLock); err != nil {
			return err
		}
		done = true
	}
	// The commit point without a lock change; with one, the next render
	// finishes the update should this fail.
	if err := t.root.Rename(prepared, MetaDir+"/"+committedFile); err != nil {
		return fmt.Errorf("commit %s: %w", t.dir, err)
	}
	done = true
	if err := t.syncPath(MetaDir); err != nil {
		return err
	}
	if err := t.rollForward(j); err != nil {
		return err
	}
	return t.cleanMeta()
}

// commitLock writes the new lock beside lockPath, flushed, and renames it
// over lockPath: the commit point of an update that changes it.
func commitLock(lockPath, sum string, newLock []byte) error {
	r, err := os.OpenRoot(filepath.Dir(lockPath))
	if err != nil {
		return fmt.Errorf("write %s: %w", lockPath, err)
	}
	defer r.Close()
	tmp := lockTmpName(lockPath, sum)
	if err = createFile(r, tmp, newLock, true, ""); err == nil {
		err = r.Rename(tmp, filepath.Base(lockPath))
	}
	if err != nil {
		r.Remove(tmp)
		return fmt.Errorf("write %s: %w", lockPath, err)
	}
	if d, err := r.Open("."); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func randomName() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// pathProblem says what is wrong with one rendered path, "" when nothing.
func pathProblem(p string) string {
	switch {
	case p == "":
		return "empty path"
	case strings.ContainsAny(p, "\\\n\r\x00"):
		return fmt.Sprintf("%q: want a slash-separated path", p)
	case path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return fmt.Sprintf("%q: want a relative path", p)
	case path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Sprintf("%q: want a clean path inside the output folder", p)
	case IsInternal(p):
		return fmt.Sprintf("%q: a name fleetgen keeps for itself", p)
	case layout.FluxSystem(p):
		return fmt.Sprintf("%q: in a cluster's flux-system/ folder, which flux bootstrap owns", p)
	}
	return ""
}

// checkPaths rejects bad paths (pathProblem), duplicates, and a path that is
// also another's folder.
func checkPaths(files []layout.File) error {
	var bad []string
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if pr := pathProblem(f.Path); pr != "" {
			bad = append(bad, pr)
		} else if seen[f.Path] {
			bad = append(bad, fmt.Sprintf("%q: listed twice", f.Path))
		} else {
			seen[f.Path] = true
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
		return problem.Invalid(fmt.Errorf("output paths: %s", strings.Join(bad, "; ")))
	}
	return nil
}

// ignoreMeta writes MetaDir/.gitignore ("*") once (O_EXCL), so that Git
// leaves fleetgen's own files out of a commit of the output folder.
func (t *tree) ignoreMeta() error {
	err := createFile(t.root, MetaDir+"/.gitignore", []byte("# fleetgen's own files (lock, journal): never committed.\n*\n"), false, "")
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", filepath.Join(t.dir, MetaDir, ".gitignore"), err)
	}
	return nil
}
