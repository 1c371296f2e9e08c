package tree

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// MetaDir is the folder inside the output folder where fleetgen keeps its own
// files: the lock a render holds, the journal of an update, the files staged
// for it and the stat cache. Nothing in it is part of the rendered tree:
// Diff ignores it and publish must not push it (see IsInternal).
const MetaDir = ".fleetgen"

// IsInternal reports whether rel (a slash path relative to the output folder)
// is one of fleetgen's own files rather than part of the rendered tree: the
// MetaDir folder and the temporary files of earlier versions.
func IsInternal(rel string) bool {
	first, _, _ := strings.Cut(rel, "/")
	return first == MetaDir || strings.HasPrefix(path.Base(rel), tmpPrefix)
}

const (
	lockFile      = "lock"
	preparedFile  = "prepared"
	committedFile = "committed"
	stagePrefix   = "stage-"
	journalMagic  = "fleetgen journal v1"
	lockTmpPrefix = ".fleet.lock."
	lockTmpSuffix = ".tmp"
	maxJournal    = 256 << 20
)

// A journal describes one update of the output folder. An update writes the
// journal as "prepared", writes every new file in place and every changed
// file into a staging folder, flushes the disk, and commits: by renaming the
// staged lock over fleet.lock.yaml when the lock changes (the lock then holds
// the journal's lockSum), else by renaming "prepared" to "committed". After
// the commit point the update is rolled forward (stale files removed, staged
// files renamed into place); before it, rolled back (new files removed). The
// next render finishes either, so after a kill or a full disk the folder holds
// the old tree or the new one, and Diff reads it as one of them meanwhile.
//
// The journal sits in the output folder, whose content is untrusted: every
// path in it is checked like a rendered path, replay reaches files only
// through real folders, and removes or replaces only files fleetgen wrote.
type journal struct {
	stage string // folder under MetaDir holding the changed files; "" when none

	lockPath string // fleet.lock.yaml, absolute; "" when the lock is unchanged
	lockTmp  string // base name of the staged lock, beside lockPath
	lockSum  string // hex SHA-256 of the staged lock

	mkdirs []string // folders the update creates (removed on roll-back when empty)
	news   []string // files written in place (removed on roll-back)
	puts   []string // files staged under stage (renamed into place on roll-forward)
	dels   []string // stale files (removed on roll-forward)
}

func (j *journal) marshal() []byte {
	var b bytes.Buffer
	b.WriteString(journalMagic + "\n")
	if j.stage != "" {
		fmt.Fprintf(&b, "stage %s\n", j.stage)
	}
	if j.lockPath != "" {
		fmt.Fprintf(&b, "lock %s %s %s\n", j.lockSum, j.lockTmp, j.lockPath)
	}
	for _, l := range []struct {
		op    string
		paths []string
	}{{"mkdir", j.mkdirs}, {"new", j.news}, {"put", j.puts}, {"del", j.dels}} {
		for _, p := range l.paths {
			b.WriteString(l.op)
			b.WriteByte(' ')
			b.WriteString(p)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// parseJournal decodes and checks a journal read from the output folder.
func parseJournal(data []byte) (*journal, error) {
	bad := errors.New("not a journal this fleetgen wrote")
	lines := strings.Split(string(data), "\n")
	if len(lines) < 2 || lines[0] != journalMagic || lines[len(lines)-1] != "" {
		return nil, bad
	}
	j := &journal{}
	for _, l := range lines[1 : len(lines)-1] {
		op, arg, _ := strings.Cut(l, " ")
		switch op {
		case "stage":
			if !strings.HasPrefix(arg, stagePrefix) || strings.ContainsAny(arg, "/\x00") || j.stage != "" {
				return nil, bad
			}
			j.stage = arg
		case "lock":
			f := strings.SplitN(arg, " ", 3)
			if len(f) != 3 || j.lockPath != "" {
				return nil, bad
			}
			j.lockSum, j.lockTmp, j.lockPath = f[0], f[1], f[2]
			if len(j.lockSum) != 64 || !strings.HasPrefix(j.lockTmp, lockTmpPrefix) || !strings.HasSuffix(j.lockTmp, lockTmpSuffix) ||
				strings.ContainsAny(j.lockTmp, "/\x00") || !filepath.IsAbs(j.lockPath) || filepath.Clean(j.lockPath) != j.lockPath {
				return nil, bad
			}
		case "mkdir", "new", "put", "del":
			if pathProblem(arg) != "" {
				return nil, bad
			}
			switch op {
			case "mkdir":
				j.mkdirs = append(j.mkdirs, arg)
			case "new":
				j.news = append(j.news, arg)
			case "put":
				j.puts = append(j.puts, arg)
			case "del":
				j.dels = append(j.dels, arg)
			}
		default:
			return nil, bad
		}
	}
	if len(j.puts) > 0 && j.stage == "" {
		return nil, bad
	}
	return j, nil
}

// readJournal returns the journal of an unfinished update of dir, if any, and
// whether it passed its commit point. lockPath is the lock of the render now
// running ("" for none): a prepared journal that changes another fleet's lock
// cannot be judged and is an error.
func readJournal(dir, lockPath string) (*journal, bool, error) {
	meta := filepath.Join(dir, MetaDir)
	for _, name := range []string{committedFile, preparedFile} {
		p := filepath.Join(meta, name)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return nil, false, fmt.Errorf("read %s: %w", p, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > maxJournal {
			return nil, false, schema.Invalid(fmt.Errorf("%s: not a journal this fleetgen wrote; remove %s", p, meta))
		}
		data, err := readFile(p, st.Size)
		if err != nil {
			return nil, false, fmt.Errorf("read %s: %w", p, err)
		}
		j, err := parseJournal(data)
		if err != nil {
			return nil, false, schema.Invalid(fmt.Errorf("%s: %w; remove %s", p, err, meta))
		}
		if name == committedFile {
			return j, true, nil
		}
		if j.lockPath == "" {
			return j, false, nil
		}
		if lockPath == "" || j.lockPath != lockPath {
			return nil, false, schema.Invalid(fmt.Errorf("%s holds an unfinished render of another fleet; render that fleet into it again, or remove %s", dir, meta))
		}
		cur, err := readLock(lockPath)
		if err != nil {
			return nil, false, err
		}
		sum := sha256.Sum256(cur)
		return j, cur != nil && hex.EncodeToString(sum[:]) == j.lockSum, nil
	}
	return nil, false, nil
}

// finish rolls an unfinished update forward or back, then removes what is
// left of it: the journal, staging folders and the staged lock.
func finish(dir string, j *journal, committed bool) error {
	meta := filepath.Join(dir, MetaDir)
	if j != nil {
		dirs := newDirCache()
		if committed {
			if err := rollForward(dir, j, dirs); err != nil {
				return err
			}
		} else {
			rollBack(dir, j, dirs)
		}
		if j.lockPath != "" {
			// Only a name of ours, beside the lock of this render (readJournal
			// checked the lock path).
			tmp := filepath.Join(filepath.Dir(j.lockPath), j.lockTmp)
			var st unix.Stat_t
			if unix.Lstat(tmp, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
				unix.Unlink(tmp)
			}
		}
	}
	return cleanMeta(meta)
}

// cleanMeta removes journals and staging folders from meta.
func cleanMeta(meta string) error {
	ents, err := os.ReadDir(meta)
	if err != nil {
		return fmt.Errorf("read %s: %w", meta, err)
	}
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, stagePrefix) || strings.HasPrefix(n, stateFile+".") {
			// RemoveAll removes a symlink, never what it points to.
			if err := os.RemoveAll(filepath.Join(meta, n)); err != nil {
				return fmt.Errorf("clean %s: %w", meta, err)
			}
		}
	}
	// The committed journal goes last: until then a kill replays the update.
	for _, n := range []string{preparedFile, committedFile} {
		if err := unix.Unlink(filepath.Join(meta, n)); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("clean %s: %w", meta, err)
		}
	}
	return nil
}

// rollForward removes the stale files and renames the staged ones into place.
// It can run any number of times: a step already done is skipped.
func rollForward(dir string, j *journal, dirs *dirCache) error {
	var removed []string
	for _, p := range j.dels {
		if ownedFile(dir, p, dirs) {
			if err := unix.Unlink(filepath.Join(dir, filepath.FromSlash(p))); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("remove stale %s: %w", p, err)
			}
			removed = append(removed, p)
		}
	}
	removeEmptyParents(dir, removed)
	if len(j.puts) == 0 {
		return nil
	}
	stage := filepath.Join(dir, MetaDir, j.stage)
	var st unix.Stat_t
	if unix.Lstat(stage, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil // every staged file was moved already
	}
	for _, p := range j.puts {
		src := filepath.Join(stage, filepath.FromSlash(p))
		if !dirs.real(stage, path.Dir(p)) || unix.Lstat(src, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := dirs.ensure(dir, path.Dir(p)); err != nil {
			return err
		}
		if err := unix.Lstat(dst, &st); err == nil && !ownedFile(dir, p, dirs) {
			continue // never replace a file fleetgen did not write
		}
		if err := unix.Rename(src, dst); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// rollBack removes the files and folders an update created before its commit
// point.
func rollBack(dir string, j *journal, dirs *dirCache) {
	for _, p := range j.news {
		if ownedFile(dir, p, dirs) {
			unix.Unlink(filepath.Join(dir, filepath.FromSlash(p)))
		}
	}
	ds := append([]string(nil), j.mkdirs...)
	sort.Sort(sort.Reverse(sort.StringSlice(ds)))
	for _, d := range ds {
		if dirs.real(dir, d) {
			unix.Rmdir(filepath.Join(dir, filepath.FromSlash(d))) // fails when not empty: that is the test
		}
	}
}

// view is how Diff reads an output folder that an unfinished update left:
// as the tree before it (hide the files it created) or after it (hide the
// stale files, read changed ones from the staging folder while they are
// there).
type view struct {
	hidden map[string]bool
	staged map[string]string // path → staged file
}

func newView(dir string, j *journal, committed bool) view {
	v := view{hidden: map[string]bool{}, staged: map[string]string{}}
	if j == nil {
		return v
	}
	if !committed {
		for _, p := range j.news {
			v.hidden[p] = true
		}
		return v
	}
	for _, p := range j.dels {
		v.hidden[p] = true
	}
	stage := filepath.Join(dir, MetaDir, j.stage)
	dirs := newDirCache()
	for _, p := range j.puts {
		if dirs.real(stage, path.Dir(p)) {
			v.staged[p] = filepath.Join(stage, filepath.FromSlash(p))
		}
	}
	return v
}
