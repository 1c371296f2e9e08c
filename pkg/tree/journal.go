package tree

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// MetaDir holds fleetgen's lock, journal and staged files in the output
// folder; not part of the tree (Diff ignores it, publish never pushes it).
const MetaDir = ".fleetgen"

// IsInternal reports whether rel (slash, relative to the output folder) is
// fleetgen's own (MetaDir, temporary files of earlier versions), not the tree.
func IsInternal(rel string) bool {
	first, _, _ := strings.Cut(rel, "/")
	return first == MetaDir || strings.HasPrefix(path.Base(rel), tmpPrefix)
}

const (
	lockFile       = "lock"
	preparedFile   = "prepared"
	committedFile  = "committed"
	stagePrefix    = "stage-"
	journalVersion = 2
	maxJournal     = 64 << 20
)

// A journal describes one update, written as "prepared": new files go in
// place, changed ones into a flat staging folder (the i-th named i), what
// replaces old content is flushed, and the commit point is the rename of the
// staged lock over the lock when it changes (it then hashes to LockSum), else
// of "prepared" to "committed". After it the next render rolls forward (stale
// files removed, staged ones moved in), before it back (new files removed).
// MetaDir is untrusted (a pull request can commit it): a journal names only
// clean paths inside the root, never the lock (only hashes of its content and
// path), and replay removes or replaces only fleetgen's files.
type journal struct {
	Version int    `json:"version"`         // journalVersion
	Stage   string `json:"stage,omitempty"` // folder under MetaDir holding the changed files

	LockSum  string `json:"lockSum,omitempty"`  // hex SHA-256 of the new lock; "" when unchanged
	LockPath string `json:"lockPath,omitempty"` // hex SHA-256 of the lock's absolute path

	Mkdirs []string `json:"mkdirs,omitempty"` // folders created (removed on roll-back when empty)
	News   []string `json:"news,omitempty"`   // files written in place (removed on roll-back)
	Puts   []string `json:"puts,omitempty"`   // files staged (renamed into place on roll-forward)
	Dels   []string `json:"dels,omitempty"`   // stale files (removed on roll-forward)
}

func (j *journal) marshal() []byte {
	j.Version = journalVersion
	b, _ := json.Marshal(j) // strings and slices of strings: cannot fail
	return b
}

func isHex(s string, n int) bool {
	_, err := hex.DecodeString(s)
	return len(s) == n && err == nil && strings.ToLower(s) == s
}

// parseJournal decodes and checks a journal read from the output folder.
func parseJournal(data []byte) (*journal, bool) {
	var j journal
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	ok := d.Decode(&j) == nil && j.Version == journalVersion &&
		(j.Stage == "" && len(j.Puts) == 0 || strings.HasPrefix(j.Stage, stagePrefix) && isHex(strings.TrimPrefix(j.Stage, stagePrefix), 16)) &&
		(j.LockSum == "" && j.LockPath == "" || isHex(j.LockSum, 64) && isHex(j.LockPath, 64))
	for _, l := range [][]string{j.Mkdirs, j.News, j.Puts, j.Dels} {
		for _, p := range l {
			ok = ok && pathProblem(p) == ""
		}
	}
	return &j, ok
}

func sumHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// lockTmpName is the staged lock's name beside the lock, from its hash.
func lockTmpName(lockPath, sum string) string {
	return "." + filepath.Base(lockPath) + "." + sum[:16] + ".tmp"
}

// invalidMeta is the refusal of what a journal or MetaDir holds.
func invalidMeta(dir, what string) error {
	return problem.Invalid(fmt.Errorf("%s: %s; remove %s", filepath.Join(dir, MetaDir), what, filepath.Join(dir, MetaDir)))
}

// readJournal returns the journal of an unfinished update, if any, and
// whether it passed its commit point. A prepared journal that changes another
// lock than lockPath (this render's, "" for none) cannot be judged: refused.
func (t *tree) readJournal(lockPath string) (*journal, bool, error) {
	for _, name := range []string{committedFile, preparedFile} {
		data, err := readRegular(t.root, MetaDir+"/"+name, maxJournal)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		j, ok := parseJournal(data)
		if err != nil || !ok {
			return nil, false, invalidMeta(t.dir, name+" is not a journal this fleetgen wrote")
		}
		if err := t.checkStage(j); err != nil {
			return nil, false, err
		}
		if name == committedFile || j.LockSum == "" {
			return j, name == committedFile, nil
		}
		if lockPath == "" || j.LockPath != sumHex([]byte(lockPath)) {
			return nil, false, problem.Invalid(fmt.Errorf("%s holds an unfinished render of another fleet; render that fleet into it again, or remove %s", t.dir, filepath.Join(t.dir, MetaDir)))
		}
		cur, err := readLock(lockPath)
		if err != nil {
			return nil, false, err
		}
		return j, cur != nil && sumHex(cur) == j.LockSum, nil
	}
	return nil, false, nil
}

// checkStage refuses a journal whose staging folder, when there, is not a
// real folder, or holds anything but regular files named by index.
func (t *tree) checkStage(j *journal) error {
	if j.Stage == "" {
		return nil
	}
	fi, err := t.root.Lstat(MetaDir + "/" + j.Stage)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // moved into place already
	}
	if err != nil || !fi.IsDir() {
		return invalidMeta(t.dir, j.Stage+" is not a folder fleetgen made")
	}
	for i := range j.Puts {
		fi, err := t.root.Lstat(t.staged(j, i))
		if err == nil && !fi.Mode().IsRegular() {
			return invalidMeta(t.dir, j.Stage+" holds something fleetgen did not stage")
		}
	}
	return nil
}

// staged is the root-relative name of the i-th staged file of j.
func (t *tree) staged(j *journal, i int) string {
	return MetaDir + "/" + j.Stage + "/" + strconv.Itoa(i)
}

// finish rolls an unfinished update forward or back, then removes what is
// left of it: the journal, staging folders and the staged lock (only when it
// is beside this render's lock and holds exactly the lock the journal hashes).
func (t *tree) finish(j *journal, committed bool, lockPath string) error {
	if j != nil && committed {
		if err := t.rollForward(j); err != nil {
			return err
		}
	} else if j != nil {
		t.rollBack(j)
	}
	if j != nil && j.LockSum != "" && lockPath != "" && j.LockPath == sumHex([]byte(lockPath)) {
		if r, err := os.OpenRoot(filepath.Dir(lockPath)); err == nil {
			name := lockTmpName(lockPath, j.LockSum)
			if b, err := readRegular(r, name, maxJournal); err == nil && sumHex(b) == j.LockSum {
				r.Remove(name)
			}
			r.Close()
		}
	}
	return t.cleanMeta()
}

// cleanMeta removes journals and staging folders from MetaDir.
func (t *tree) cleanMeta() error {
	f, err := t.root.Open(MetaDir)
	if err != nil {
		return fmt.Errorf("read %s: %w", MetaDir, err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", MetaDir, err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, stagePrefix) || n == "state" || strings.HasPrefix(n, "state.") {
			// RemoveAll removes a symlink, never what it points to.
			if err := t.root.RemoveAll(MetaDir + "/" + n); err != nil {
				return fmt.Errorf("clean %s: %w", MetaDir, err)
			}
		}
	}
	// The committed journal goes last: until then a kill replays the update.
	for _, n := range []string{preparedFile, committedFile} {
		if err := t.root.Remove(MetaDir + "/" + n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("clean %s: %w", MetaDir, err)
		}
	}
	return nil
}

// rollForward removes the stale files and renames the staged ones into place.
// It can run any number of times: a step already done is skipped.
func (t *tree) rollForward(j *journal) error {
	var removed []string
	for _, p := range j.Dels {
		if t.ownedFile(p) {
			if err := t.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove stale %s: %w", p, err)
			}
			removed = append(removed, p)
		}
	}
	t.removeEmptyParents(removed)
	for i, p := range j.Puts {
		src := t.staged(j, i)
		if fi, err := t.root.Lstat(src); err != nil || !fi.Mode().IsRegular() {
			continue // moved already
		}
		if err := t.ensureDir(path.Dir(p)); err != nil {
			return err
		}
		if _, err := t.root.Lstat(p); err == nil && !t.ownedFile(p) {
			continue // never replace a file fleetgen did not write
		}
		if err := t.root.Rename(src, p); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// rollBack removes the files and folders an update created before its commit
// point.
func (t *tree) rollBack(j *journal) {
	for _, p := range j.News {
		if t.ownedFile(p) {
			t.root.Remove(p)
		}
	}
	for _, d := range slices.Backward(slices.Sorted(slices.Values(j.Mkdirs))) {
		if t.realDir(d) {
			t.root.Remove(d) // fails when not empty: that is the test
		}
	}
}
