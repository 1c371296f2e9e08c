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
	"sort"
	"strconv"
	"strings"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// MetaDir is the folder inside the output folder where fleetgen keeps its own
// files: the lock a render holds, the journal of an update and the files
// staged for it. Nothing in it is part of the rendered tree: Diff ignores it
// and publish must not push it (see IsInternal).
const MetaDir = ".fleetgen"

// IsInternal reports whether rel (a slash path relative to the output folder)
// is one of fleetgen's own files rather than part of the rendered tree: the
// MetaDir folder and the temporary files of earlier versions.
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

// A journal describes one update of the output folder. An update writes the
// journal as "prepared", writes every new file in place and every changed
// file into a staging folder (flat: the i-th staged file is named i), flushes
// what replaces old content, and commits: by renaming the staged lock over
// fleet.lock.yaml when the lock changes (the lock then hashes to lockSum),
// else by renaming "prepared" to "committed". After the commit point the
// update is rolled forward (stale files removed, staged files renamed into
// place); before it, rolled back (new files removed). The next render
// finishes either, so after a kill or a full disk the folder holds the old
// tree or the new one, and Diff reads it as one of them meanwhile.
//
// The journal sits in the output folder, whose content is untrusted (a pull
// request can commit it): it names only slash paths checked like rendered
// ones and reached through the root handle of the output folder, real folders
// only; it never names the lock, only its content's and its path's hashes, so
// the lock (and its staged copy) is always the one the caller passes. Replay
// removes or replaces only files fleetgen wrote.
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
func parseJournal(data []byte) (*journal, error) {
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
	if !ok {
		return nil, errors.New("not a journal this fleetgen wrote")
	}
	return &j, nil
}

func sumHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// lockTmpName is the staged lock's name beside the lock: made from the new
// lock's hash, never read from the journal.
func lockTmpName(lockPath, sum string) string {
	return "." + filepath.Base(lockPath) + "." + sum[:16] + ".tmp"
}

// invalidMeta is the refusal of what a journal or MetaDir holds.
func invalidMeta(dir, what string) error {
	return schema.Invalid(fmt.Errorf("%s: %s; remove %s", filepath.Join(dir, MetaDir), what, filepath.Join(dir, MetaDir)))
}

// readJournal returns the journal of an unfinished update of t, if any, and
// whether it passed its commit point. lockPath is the lock of the render now
// running ("" for none): a prepared journal that changes another lock cannot
// be judged and is refused.
func (t *tree) readJournal(lockPath string) (*journal, bool, error) {
	for _, name := range []string{committedFile, preparedFile} {
		data, err := readRegular(t.root, MetaDir+"/"+name, maxJournal)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, false, invalidMeta(t.dir, name+" is not a journal this fleetgen wrote")
		}
		j, err := parseJournal(data)
		if err != nil {
			return nil, false, invalidMeta(t.dir, name+": "+err.Error())
		}
		if err := t.checkStage(j); err != nil {
			return nil, false, err
		}
		if name == committedFile || j.LockSum == "" {
			return j, name == committedFile, nil
		}
		if lockPath == "" || j.LockPath != sumHex([]byte(lockPath)) {
			return nil, false, schema.Invalid(fmt.Errorf("%s holds an unfinished render of another fleet; render that fleet into it again, or remove %s", t.dir, filepath.Join(t.dir, MetaDir)))
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
// left of it: the journal, staging folders and the staged lock.
func (t *tree) finish(j *journal, committed bool, lockPath string) error {
	if j != nil {
		if committed {
			if err := t.rollForward(j); err != nil {
				return err
			}
		} else {
			t.rollBack(j)
		}
		if j.LockSum != "" && lockPath != "" && j.LockPath == sumHex([]byte(lockPath)) {
			removeLockTmp(lockPath, j.LockSum)
		}
	}
	return t.cleanMeta()
}

// removeLockTmp removes the staged lock beside lockPath, when it is a regular
// file holding exactly the lock whose hash is sum: only what fleetgen wrote.
func removeLockTmp(lockPath, sum string) {
	r, err := os.OpenRoot(filepath.Dir(lockPath))
	if err != nil {
		return
	}
	defer r.Close()
	name := lockTmpName(lockPath, sum)
	if b, err := readRegular(r, name, maxJournal); err == nil && sumHex(b) == sum {
		r.Remove(name)
	}
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
	ds := append([]string(nil), j.Mkdirs...)
	sort.Sort(sort.Reverse(sort.StringSlice(ds)))
	for _, d := range ds {
		if t.realDir(d) {
			t.root.Remove(d) // fails when not empty: that is the test
		}
	}
}

// view is how Diff reads an output folder that an unfinished update left:
// as the tree before it (hide the files it created) or after it (hide the
// stale files, read changed ones from the staging folder while they are
// there).
type view struct {
	hidden map[string]bool
	staged map[string]string // path → staged file, root-relative
}

func (t *tree) view(j *journal, committed bool) view {
	v := view{hidden: map[string]bool{}, staged: map[string]string{}}
	switch {
	case j == nil:
	case !committed:
		for _, p := range j.News {
			v.hidden[p] = true
		}
	default:
		for _, p := range j.Dels {
			v.hidden[p] = true
		}
		for i, p := range j.Puts {
			v.staged[p] = t.staged(j, i)
		}
	}
	return v
}
