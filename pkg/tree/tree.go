// Package tree writes a rendered file set to disk and compares it with what is
// there. It owns only files that start with generate.Header, and its own
// folder MetaDir.
package tree

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Stats counts what Write did, and how long each phase took.
type Stats struct {
	Written, Unchanged, Removed int
	// Listed counts the folders read from disk; the others' entries came
	// from the stat cache (their stamps matched).
	Listed int
	// Plan is finishing a killed update, listing dir and comparing (through
	// Prepare, counted from Prepare: the reading ahead overlaps whatever the
	// caller did meanwhile); Write is
	// writing new and staged files (and flushing a few staged ones); Flush
	// the flush of the file system before the commit point (only when an
	// update replaces more than syncEachMax files, see commit); Commit the
	// commit, stale files' removal, staged
	// files' renames and the stat cache.
	Plan, Write, Flush, Commit time.Duration
}

// tmpPrefix starts the name of the temporary files earlier versions made
// beside each file; Write removes such leftovers and Diff ignores them.
const tmpPrefix = ".fleetgen-tmp-"

// Lock is fleet.lock.yaml as WriteWith commits it: in the same commit point
// as the tree, so that a reader never sees a tree that names client IDs the
// lock lacks.
type Lock struct {
	// Path is fleet.lock.yaml.
	Path string
	// Old is what the render read from Path (nil: no file). When the file no
	// longer holds it at commit time (another render or a mirror ran
	// meanwhile), WriteWith fails and writes nothing.
	Old []byte
	// New is the lock to write; equal to Old when it does not change.
	New []byte
}

// Options are WriteWith's and DiffWith's.
type Options struct {
	// Lock, when set, is committed with the tree.
	Lock *Lock
	// Waiting is called once when another render holds the output folder and
	// the call waits for it.
	Waiting func()
	// Input, when set (lower-case hex), names everything the files were made
	// from; it is kept with the stat cache, for Prepared.Unchanged.
	Input string
}

// writeHook, when set by a test, is called before each file is written (with
// its slash path) and fails the write with the error it returns.
var writeHook func(p string) error

// Write is WriteWith without a lock.
func Write(dir string, files []generate.File) (Stats, error) {
	return WriteWith(dir, files, Options{})
}

// WriteWith makes dir hold files, and opt.Lock its new content: new and
// changed files are written, identical ones left alone, files an earlier
// render wrote (they start with generate.Header) that files no longer has are
// removed with the folders that leaves empty, and no other file is touched.
//
// The update is atomic for the whole tree and the lock (see journal): after a
// failure, a kill or a full disk at any point, dir and the lock hold the old
// content or the new, and the next WriteWith finishes or undoes what a killed
// one left. A power loss never empties a file that was there before (what
// replaces a file is flushed before the commit point); one during an update
// that only adds files may leave some of them empty, which the next
// WriteWith writes again. Files are created only with O_EXCL, in dir or in a
// staging folder under dir/MetaDir, and reached through real folders, so
// names planted in dir (symlinks named like fleetgen's files) cannot redirect
// a write out of it. Every path is checked and every existing file compared
// before anything in the tree changes, so an invalid path or a foreign file
// in the way (an input error, *schema.InvalidError) leaves dir as it was. A
// second WriteWith of the same dir waits for the first (flock on
// dir/MetaDir/lock).
func WriteWith(dir string, files []generate.File, opt Options) (st Stats, err error) {
	if err := checkPaths(files); err != nil {
		return st, err
	}
	lockPath := ""
	if opt.Lock != nil {
		if lockPath, err = filepath.Abs(opt.Lock.Path); err != nil {
			return st, err
		}
	}
	fi, lerr := os.Lstat(dir)
	created := false
	switch {
	case lerr == nil && !fi.IsDir():
		return st, schema.Invalid(fmt.Errorf("output %s is not a folder", dir))
	case errors.Is(lerr, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return st, fmt.Errorf("create %s: %w", dir, err)
		}
		if err := os.Mkdir(dir, 0o755); err == nil {
			created = true
		} else if !errors.Is(err, fs.ErrExist) {
			return st, fmt.Errorf("create %s: %w", dir, err)
		}
	case lerr != nil:
		return st, fmt.Errorf("read %s: %w", dir, lerr)
	}
	if created {
		// Nothing written on failure: not even the folder.
		defer func() {
			if err != nil {
				os.RemoveAll(dir)
			}
		}()
	}
	meta := filepath.Join(dir, MetaDir)
	if err := unix.Mkdir(meta, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return st, fmt.Errorf("create %s: %w", meta, err)
	}
	if fi, err := os.Lstat(meta); err != nil || !fi.IsDir() {
		return st, schema.Invalid(fmt.Errorf("%s is not a folder fleetgen made; remove it", meta))
	}
	if err := ignoreMeta(meta); err != nil {
		return st, err
	}
	held, err := flock(filepath.Join(meta, lockFile), false, opt.Waiting)
	if err != nil {
		return st, fmt.Errorf("lock %s: %w", dir, err)
	}
	defer held.Close()
	return update(dir, meta, lockPath, files, opt, nil, time.Now())
}

// update is WriteWith once dir/MetaDir exists and is locked. ahead, when not
// nil, is what Prepare read of the tree meanwhile.
func update(dir, meta, lockPath string, files []generate.File, opt Options, ahead *readAhead, start time.Time) (Stats, error) {
	var st Stats
	if opt.Input != "" && !isHex(opt.Input) {
		return st, fmt.Errorf("write %s: Options.Input %q: want lower-case hex", dir, opt.Input)
	}
	// Finish what a killed render left before looking at the tree.
	j, committed, err := readJournal(dir, lockPath)
	if err != nil {
		return st, err
	}
	if j != nil {
		ahead = nil // read before the update was finished
	}
	if err := finish(dir, j, committed); err != nil {
		return st, err
	}
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

	p, err := plan(dir, meta, files, true, ahead)
	if errors.Is(err, errStaleListing) {
		p, err = plan(dir, meta, files, false, nil)
	}
	if err != nil {
		return st, err
	}
	p.stats.Plan = time.Since(start)
	p.input, p.count = opt.Input, len(files)
	if p.input == "" {
		p.count = 0
	}
	if p.input != p.oldInput || p.count != p.oldCount {
		p.stateDirty = true
	}
	for _, l := range p.leftovers {
		unix.Unlink(filepath.Join(dir, filepath.FromSlash(l)))
	}
	if len(p.j.news)+len(p.j.puts)+len(p.j.dels) == 0 && newLock == nil {
		if p.stateDirty {
			err = saveState(meta, p.state())
		}
		p.stats.Unchanged = len(files)
		return p.stats, err
	}
	if err := commit(dir, meta, files, p, lockPath, newLock); err != nil {
		return Stats{}, err
	}
	p.stats.Written = len(p.j.news) + len(p.j.puts)
	p.stats.Unchanged = len(files) - p.stats.Written
	p.stats.Removed = len(p.j.dels)
	return p.stats, nil
}

// Prepared is an output folder held for one update (its lock taken), whose
// listing, stat cache and file stats are being read in the background while
// the caller renders: the syscalls of comparing an unchanged tree then run
// beside the render instead of after it.
type Prepared struct {
	dir, meta, lockPath string
	held                *os.File
	start               time.Time
	done                chan struct{}
	ahead               *readAhead
	// stateRead is closed once state, the stat cache, is read; the tree is
	// read from the first call of ReadAhead on. headerRead is closed once
	// headerInput, the input the cache's first line names, is read.
	stateRead   chan struct{}
	state       *state
	headerRead  chan struct{}
	headerInput string
	reading     sync.Once
}

// Prepare locks dir for one update and starts reading it ahead. It changes
// nothing in dir: it returns nil (and the caller calls WriteWith) when dir
// has no MetaDir yet, or holds the journal of a killed update, which only
// WriteWith finishes. lockPath is the lock the update will commit ("" for
// none). Close releases dir.
func Prepare(dir, lockPath string, opt Options) (*Prepared, error) {
	if lockPath != "" {
		var err error
		if lockPath, err = filepath.Abs(lockPath); err != nil {
			return nil, err
		}
	}
	meta := filepath.Join(dir, MetaDir)
	clean := func() bool {
		var st unix.Stat_t
		if unix.Lstat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR ||
			unix.Lstat(meta, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR ||
			unix.Lstat(filepath.Join(meta, lockFile), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return false
		}
		for _, n := range []string{preparedFile, committedFile} {
			if unix.Lstat(filepath.Join(meta, n), &st) == nil {
				return false
			}
		}
		return true
	}
	if !clean() {
		return nil, nil
	}
	held, err := flock(filepath.Join(meta, lockFile), false, opt.Waiting)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	// Another render may have been killed while this one waited.
	if !clean() {
		held.Close()
		return nil, nil
	}
	p := &Prepared{dir: dir, meta: meta, lockPath: lockPath, held: held, start: time.Now(),
		done: make(chan struct{}), stateRead: make(chan struct{}), headerRead: make(chan struct{})}
	go func() {
		var once sync.Once
		header := func(in string) {
			once.Do(func() {
				p.headerInput = in
				close(p.headerRead)
			})
		}
		p.state = loadStateThen(meta, header)
		header("") // no file: no input
		close(p.stateRead)
	}()
	return p, nil
}

// ReadAhead starts reading the tree in the background: listing and file
// stats, which Write waits for. Unchanged starts it when it returns false.
func (p *Prepared) ReadAhead() {
	p.readAhead(nil)
}

// readAhead is ReadAhead given the stats of the cached files when they are
// taken already.
func (p *Prepared) readAhead(stats map[string]fileStat) {
	if p == nil {
		return
	}
	p.reading.Do(func() {
		go func() {
			defer close(p.done)
			<-p.stateRead
			p.ahead = readTreeAhead(p.dir, p.state, stats)
		}()
	})
}

// Unchanged reports whether the prepared folder holds, untouched, the output
// of the update that recorded input (Options.Input, not ""): every file that
// update wrote is there and still matches its stamp (inode, size and times;
// a file changed too close to its stamp is read and hashed). A render whose
// inputs are input then has nothing to write. It reads the stat cache and
// stats the files it lists, nothing else; when it returns false, the tree is
// being read ahead for Write.
func (p *Prepared) Unchanged(input string) bool {
	if p == nil {
		return false
	}
	// Another input than the cache's first line names: no need to wait
	// for the rest of it.
	<-p.headerRead
	if input == "" || p.headerInput != input {
		p.readAhead(nil)
		return false
	}
	<-p.stateRead
	s := p.state
	if s.input != input || s.count == 0 || s.count != len(s.files) {
		p.readAhead(nil)
		return false
	}
	paths := make([]string, 0, len(s.files))
	for q := range s.files {
		paths = append(paths, q)
	}
	stats := statAll(p.dir, paths, nil)
	settled := true
	for q, stamp := range s.files {
		fs, ok := stats[q]
		st := fs.stat()
		if ok && stamp.matches(&st) {
			continue
		}
		if ok && stamp.racy && stamp.sameStat(&st) {
			data, err := readFile(filepath.Join(p.dir, filepath.FromSlash(q)), st.Size)
			if err == nil && sha256.Sum256(data) == stamp.sum {
				settled = false
				continue
			}
		}
		p.readAhead(stats)
		return false
	}
	for _, d := range s.dirs {
		settled = settled && d.known && !d.racy
	}
	if !settled {
		p.settle(stats)
	}
	return true
}

// settle saves the stat cache of an unchanged tree whose cache had stamps
// too recent to trust (checked by content now) or folders without a stamp
// (those an update wrote into, listed now): the next render, unchanged or
// not, trusts them without reading. It is best effort, as a render's.
func (p *Prepared) settle(stats map[string]fileStat) {
	s := p.state
	ra := readTreeAhead(p.dir, s, stats)
	if ra.err != nil {
		return
	}
	files := make(map[string]stamp, len(s.files))
	for q, stamp := range s.files {
		st := stats[q].stat()
		files[q] = stampOf(&st, stamp.sum)
	}
	dirs := ra.existing.stamped(ra.dstamps, 0)
	others := ra.existing.others(func(q string) bool { _, ok := files[q]; return ok })
	saveState(p.meta, &state{files: files, dirs: dirs, others: others, input: s.input, count: s.count})
}

// Write is WriteWith on the prepared folder; opt.Lock must name the lock
// given to Prepare. It can be called once.
func (p *Prepared) Write(files []generate.File, opt Options) (Stats, error) {
	p.readAhead(nil)
	<-p.done
	if err := checkPaths(files); err != nil {
		return Stats{}, err
	}
	lockPath := ""
	if opt.Lock != nil {
		var err error
		if lockPath, err = filepath.Abs(opt.Lock.Path); err != nil {
			return Stats{}, err
		}
	}
	if lockPath != p.lockPath {
		return Stats{}, fmt.Errorf("write %s: prepared for lock %q, not %q", p.dir, p.lockPath, lockPath)
	}
	return update(p.dir, p.meta, lockPath, files, opt, p.ahead, p.start)
}

// Close waits for the reading ahead and releases the folder.
func (p *Prepared) Close() error {
	if p == nil {
		return nil
	}
	<-p.stateRead
	started := true
	p.reading.Do(func() { started = false })
	if started {
		<-p.done
	}
	return p.held.Close()
}

// readAhead is what Prepare read of a tree: the stat cache, the listing and
// the stat of every regular file listed.
type readAhead struct {
	state    *state
	existing listing
	dstamps  map[string]dirStamp
	stats    map[string]fileStat
	err      error
}

// fileStat is the part of a stat that plan uses (a third of a Stat_t's
// size, for 35,000 files read ahead).
type fileStat struct {
	mode                    uint32
	ino, size, mtime, ctime int64
}

func (f fileStat) stat() unix.Stat_t {
	return unix.Stat_t{Mode: f.mode, Ino: uint64(f.ino), Size: f.size, Mtim: unix.NsecToTimespec(f.mtime), Ctim: unix.NsecToTimespec(f.ctime)}
}

func readTreeAhead(dir string, cached *state, stats map[string]fileStat) *readAhead {
	ra := &readAhead{state: cached}
	// Every folder and file the cache lists is stat-ed first, in parallel:
	// the folders' stats decide which listings the cache stands for, the
	// files' which contents it does. stats, when given, holds the files'.
	var paths []string
	if stats == nil {
		paths = make([]string, 0, len(cached.files)+len(cached.dirs))
		for q := range cached.files {
			paths = append(paths, q)
		}
	}
	for q := range cached.dirs {
		if q != "." {
			paths = append(paths, q)
		}
	}
	ra.stats = statAll(dir, paths, stats)
	ra.existing, ra.dstamps, ra.err = scanWith(dir, ra.state, ra.stats)
	if ra.err != nil {
		return ra
	}
	var missing []string // listed, not in the cache
	for q, k := range ra.existing.files {
		if _, ok := ra.stats[q]; !ok && k == regular {
			missing = append(missing, q)
		}
	}
	sort.Strings(missing) // folder by folder
	ra.stats = statAll(dir, missing, ra.stats)
	return ra
}

// statAll lstats paths (relative to dir) in parallel into into (nil: a new
// map); a path that cannot be stat-ed is left out.
func statAll(dir string, paths []string, into map[string]fileStat) map[string]fileStat {
	if into == nil {
		into = make(map[string]fileStat, len(paths))
	}
	sts := make([]fileStat, len(paths))
	ok := make([]bool, len(paths))
	// Relative to one descriptor of dir: each stat walks only the path
	// inside the tree, not dir's own path again.
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return into
	}
	defer unix.Close(root)
	parallel(len(paths), func(i int) error {
		var st unix.Stat_t
		if unix.Fstatat(root, filepath.FromSlash(paths[i]), &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			sts[i] = fileStat{mode: st.Mode, ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
			ok[i] = true
		}
		return nil
	})
	for i, q := range paths {
		if ok[i] {
			into[q] = sts[i]
		}
	}
	return into
}

// readLock reads the lock file as it is now; nil when there is none.
func readLock(p string) ([]byte, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); errors.Is(err, unix.ENOENT) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, schema.Invalid(fmt.Errorf("%s is not a regular file", p))
	}
	b, err := readFile(p, st.Size)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return b, nil
}

// action is what an update does with one rendered file.
type action uint8

const (
	keep   action = iota // identical on disk
	create               // new: written in place before the commit point
	stage                // changed, or below a stale file: staged, renamed after it
)

type updatePlan struct {
	j          journal
	acts       []action
	sums       [][32]byte
	stamps     map[string]stamp // the stat cache after the update, so far
	dirs       map[string]dirStamp
	others     map[string]fileKind
	stateDirty bool
	leftovers  []string
	stats      Stats
	// input and count: the state's Options.Input and file count, before
	// and after the update.
	oldInput, input string
	oldCount, count int
}

// plan compares files with dir and decides every step of the update. It
// changes nothing. With useCache, folders whose stamp in the stat cache still
// matches are not listed again; a cached entry found missing fails with
// errStaleListing (plan again without the cache).
func plan(dir, meta string, files []generate.File, useCache bool, ahead *readAhead) (*updatePlan, error) {
	if ahead != nil && (ahead.err != nil || !useCache) {
		ahead = nil
	}
	var (
		oldState *state
		cached   *state
		existing listing
		dstamps  map[string]dirStamp
		err      error
	)
	if ahead != nil {
		oldState, existing, dstamps = ahead.state, ahead.existing, ahead.dstamps
		cached = oldState
	} else {
		oldState = loadState(meta)
		if useCache {
			cached = oldState
		}
		if existing, dstamps, err = scanWith(dir, cached, nil); err != nil {
			return nil, err
		}
	}
	// lstat is the stat of a listed file: read ahead, or now.
	lstat := func(q string, st *unix.Stat_t) error {
		if ahead != nil {
			if s, ok := ahead.stats[q]; ok {
				*st = s.stat()
				return nil
			}
		}
		return unix.Lstat(filepath.Join(dir, filepath.FromSlash(q)), st)
	}
	old := oldState.files
	n := len(files)
	p := &updatePlan{acts: make([]action, n), sums: make([][32]byte, n), leftovers: existing.leftovers}
	p.stats.Listed = existing.listed
	fresh := make([]stamp, n)
	have := make([]bool, n)
	var conflicts []string
	var mu sync.Mutex
	conflict := func(s string) {
		mu.Lock()
		conflicts = append(conflicts, s)
		mu.Unlock()
	}
	var dirty atomic.Bool
	err = parallel(n, func(i int) error {
		f := files[i]
		p.sums[i] = sha256.Sum256(f.Data)
		kind, ok := existing.files[f.Path]
		if !ok {
			if existing.dirs[f.Path] {
				conflict(f.Path + " is a folder")
			}
			p.acts[i] = create
			return nil
		}
		if kind != regular {
			conflict(f.Path + " is not a regular file")
			return nil
		}
		full := filepath.Join(dir, filepath.FromSlash(f.Path))
		var st unix.Stat_t
		if err := lstat(f.Path, &st); err != nil {
			if errors.Is(err, unix.ENOENT) && cached != nil {
				return errStaleListing
			}
			return fmt.Errorf("read %s: %w", f.Path, err)
		}
		if s, ok := old[f.Path]; ok && s.matches(&st) {
			// The file is what an earlier render wrote, byte for byte.
			if s.sum == p.sums[i] {
				fresh[i], have[i] = s, true
			} else {
				p.acts[i] = stage
			}
			return nil
		}
		data, err := readFile(full, st.Size)
		if err != nil {
			return fmt.Errorf("read %s: %w", f.Path, err)
		}
		if !bytes.HasPrefix(data, []byte(generate.Header)) {
			if isCut(data) {
				// Empty, or cut inside the header: a file of a render the
				// power went out under (see commit), holding nothing.
				p.acts[i] = stage
				return nil
			}
			conflict(f.Path + " exists and was not written by fleetgen")
			return nil
		}
		if bytes.Equal(data, f.Data) {
			fresh[i], have[i] = stampOf(&st, p.sums[i]), true
			// A racy stamp of this very file stays as it is, so that an
			// unchanged tree leaves the state file alone.
			if s, ok := old[f.Path]; !ok || !s.sameStat(&st) || s.sum != p.sums[i] {
				dirty.Store(true)
			}
		} else {
			p.acts[i] = stage
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	want := make(map[string]bool, n)
	for _, f := range files {
		want[f.Path] = true
	}
	var others []string
	for q, kind := range existing.files {
		if !want[q] && kind == regular {
			others = append(others, q)
		}
	}
	sort.Strings(others)
	isStale := make([]bool, len(others))
	err = parallel(len(others), func(i int) error {
		full := filepath.Join(dir, filepath.FromSlash(others[i]))
		var st unix.Stat_t
		if err := lstat(others[i], &st); err != nil {
			if errors.Is(err, unix.ENOENT) && cached != nil {
				return errStaleListing
			}
			return fmt.Errorf("read %s: %w", others[i], err)
		}
		s, listed := old[others[i]]
		if listed && s.matches(&st) {
			isStale[i] = true
			return nil
		}
		ok, cut, err := ownedOrCut(full)
		if err != nil {
			return fmt.Errorf("read %s: %w", others[i], err)
		}
		// A cut file is ours only where the stat cache says a render
		// wrote it: an empty file elsewhere (.gitkeep) is the user's.
		isStale[i] = ok || cut && listed
		return nil
	})
	if err != nil {
		return nil, err
	}
	stale := map[string]bool{}
	for i, q := range others {
		if isStale[i] {
			stale[q] = true
			p.j.dels = append(p.j.dels, q)
		}
	}
	// A wanted file below an existing file (a/b/c over the file a/b) is in the
	// way unless that file is stale and ours; then the new file waits for the
	// stale one to go, after the commit point.
	for i, f := range files {
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			if _, ok := existing.files[d]; ok {
				if !stale[d] {
					conflicts = append(conflicts, d+" is in the way of "+f.Path)
				} else if p.acts[i] == create {
					p.acts[i] = stage
				}
			}
		}
	}
	if len(conflicts) > 0 {
		sort.Strings(conflicts)
		return nil, schema.Invalid(fmt.Errorf("write %s: refusing to overwrite files fleetgen does not own:\n  %s", dir, strings.Join(conflicts, "\n  ")))
	}
	mkdirs := map[string]bool{}
	p.stamps = make(map[string]stamp, n)
	for i, f := range files {
		switch p.acts[i] {
		case keep:
			if have[i] {
				p.stamps[f.Path] = fresh[i]
			}
		case create:
			p.j.news = append(p.j.news, f.Path)
			for d := path.Dir(f.Path); d != "." && !existing.dirs[d] && !mkdirs[d]; d = path.Dir(d) {
				mkdirs[d] = true
			}
		case stage:
			p.j.puts = append(p.j.puts, f.Path)
		}
	}
	for d := range mkdirs {
		p.j.mkdirs = append(p.j.mkdirs, d)
	}
	sort.Strings(p.j.mkdirs)
	sort.Strings(p.j.news)
	sort.Strings(p.j.puts)

	// The folders of the tree after the update, stamped where the update
	// leaves their entries alone; and the entries that are not fleetgen's.
	touched := map[string]bool{}
	for _, l := range [][]string{p.j.news, p.j.puts, p.j.mkdirs, p.leftovers} {
		for _, q := range l {
			touched[path.Dir(q)] = true
		}
	}
	for _, q := range p.j.dels {
		// Removing q may remove its emptied folders, up to below dir.
		for d := path.Dir(q); ; d = path.Dir(d) {
			touched[d] = true
			if d == "." {
				break
			}
		}
	}
	p.dirs = existing.stamped(dstamps, len(p.j.mkdirs))
	for d := range touched {
		if _, ok := p.dirs[d]; ok {
			p.dirs[d] = dirStamp{}
		}
	}
	for _, d := range p.j.mkdirs {
		p.dirs[d] = dirStamp{}
	}
	p.others = existing.others(func(q string) bool { return want[q] || stale[q] })
	p.stateDirty = dirty.Load() || len(old) != len(p.stamps) || !sameState(oldState, p.dirs, p.others)
	p.oldInput, p.oldCount = oldState.input, oldState.count
	return p, nil
}

// sameState reports whether the cache already holds dirs and others.
func sameState(old *state, dirs map[string]dirStamp, others map[string]fileKind) bool {
	if len(old.dirs) != len(dirs) || len(old.others) != len(others) {
		return false
	}
	for d, s := range dirs {
		o, ok := old.dirs[d]
		if !ok || o.known != s.known || (s.known && (o.ino != s.ino || o.mtime != s.mtime || o.ctime != s.ctime)) {
			return false
		}
	}
	for q, k := range others {
		if o, ok := old.others[q]; !ok || o != k {
			return false
		}
	}
	return true
}

// state is the stat cache after the update.
func (p *updatePlan) state() *state {
	return &state{files: p.stamps, dirs: p.dirs, others: p.others, input: p.input, count: p.count}
}

// commit carries out an update planned by plan: journal, writes, flush,
// commit point, roll-forward, stat cache. On an error before the commit point
// it rolls back.
func commit(dir, meta string, files []generate.File, p *updatePlan, lockPath string, newLock []byte) (err error) {
	j := &p.j
	if len(j.puts) > 0 {
		j.stage = stagePrefix + randomName()
	}
	if newLock != nil {
		sum := sha256.Sum256(newLock)
		j.lockPath, j.lockTmp, j.lockSum = lockPath, lockTmpPrefix+randomName()+lockTmpSuffix, hex.EncodeToString(sum[:])
	}
	prepared := filepath.Join(meta, preparedFile)
	if _, err := createFile(prepared, j.marshal()); err != nil {
		return fmt.Errorf("write %s: %w", prepared, err)
	}
	done := false
	defer func() {
		if !done {
			// Before the commit point: undo. A kill here leaves the same to
			// the next render.
			finish(dir, j, false)
		}
	}()
	if err := fsyncPath(prepared); err != nil {
		return fmt.Errorf("write %s: %w", prepared, err)
	}
	if err := fsyncPath(meta); err != nil {
		return fmt.Errorf("write %s: %w", meta, err)
	}

	t := time.Now()
	// What replaces a file (the staged files, the lock) is on disk before
	// the commit point: a power loss leaves the old content or the new,
	// never a file emptied. A few staged files are flushed one by one (the
	// lock always is), many by one flush of the file system, which the disk
	// starts on while they are written. New files are not flushed, as cp -r
	// does not flush them: no old content is at stake, and after a power
	// loss the next render takes a file left empty, or cut inside the
	// header, for a leftover of its own and writes it again (plan).
	syncEach := len(j.puts) <= syncEachMax
	flush := !syncEach
	var fl *flusher
	if flush && len(j.news)+len(j.puts) >= flushAheadFiles {
		fl = startFlusher(meta)
		defer fl.stop()
	}
	for _, d := range j.mkdirs {
		if err := unix.Mkdir(filepath.Join(dir, filepath.FromSlash(d)), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	fl.wrote()
	idx := make(map[string]int, len(files))
	for i, f := range files {
		idx[f.Path] = i
	}
	// New files folder by folder, in path order (as cp -r creates them), so
	// that two workers rarely write into the same folder.
	groups := groupByDir(j.news)
	var stamps sync.Map
	err = parallel(len(groups), func(g int) error {
		defer fl.wrote()
		for _, q := range groups[g] {
			i := idx[q]
			if writeHook != nil {
				if err := writeHook(q); err != nil {
					return fmt.Errorf("write %s: %w", q, err)
				}
			}
			st, err := createFile(filepath.Join(dir, filepath.FromSlash(q)), files[i].Data)
			if err != nil {
				return fmt.Errorf("write %s: %w", q, err)
			}
			stamps.Store(q, stampOf(&st, p.sums[i]))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if j.stage != "" {
		root := filepath.Join(meta, j.stage)
		if err := unix.Mkdir(root, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", root, err)
		}
		dirs := newDirCache()
		for _, q := range j.puts {
			if err := dirs.ensure(root, path.Dir(q)); err != nil {
				return err
			}
			if writeHook != nil {
				if err := writeHook(q); err != nil {
					return fmt.Errorf("write %s: %w", q, err)
				}
			}
			if _, err := createFileSync(filepath.Join(root, filepath.FromSlash(q)), files[idx[q]].Data, syncEach); err != nil {
				return fmt.Errorf("write %s: %w", q, err)
			}
			fl.wrote()
		}
		if syncEach {
			// The staged files' folders too, deepest first, up to MetaDir:
			// their entries are what the roll-forward finds the files by.
			if err := fsyncFolders(root, j.puts); err != nil {
				return err
			}
			if err := fsyncPath(meta); err != nil {
				return fmt.Errorf("write %s: %w", meta, err)
			}
		}
	}
	var lockTmp string
	if j.lockPath != "" {
		lockTmp = filepath.Join(filepath.Dir(lockPath), j.lockTmp)
		if _, err := createFile(lockTmp, newLock); err != nil {
			return fmt.Errorf("write %s: %w", lockPath, err)
		}
		if err := fsyncPath(lockTmp); err != nil {
			return fmt.Errorf("write %s: %w", lockPath, err)
		}
	}
	fl.stop()
	p.stats.Write = time.Since(t)
	t = time.Now()
	// One flush of the file system for every file above, then the commit point.
	if flush {
		if err := syncFS(meta); err != nil {
			return fmt.Errorf("flush %s: %w", dir, err)
		}
		flushes.Add(1)
	}
	p.stats.Flush = time.Since(t)
	t = time.Now()
	defer func() { p.stats.Commit = time.Since(t) }()
	if lockTmp != "" {
		if err := os.Rename(lockTmp, lockPath); err != nil {
			return fmt.Errorf("write %s: %w", lockPath, err)
		}
		done = true
		fsyncPath(filepath.Dir(lockPath))
	}
	// Without a lock change this rename is the commit point; with one, the
	// update is committed already and the next render finishes it should this
	// fail.
	if err := os.Rename(prepared, filepath.Join(meta, committedFile)); err != nil {
		return fmt.Errorf("commit %s: %w", dir, err)
	}
	done = true

	dirs := newDirCache()
	if err := rollForward(dir, j, dirs); err != nil {
		return err
	}
	stamps.Range(func(k, v any) bool {
		p.stamps[k.(string)] = v.(stamp)
		return true
	})
	for _, q := range j.puts {
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(dir, filepath.FromSlash(q)), &st) == nil {
			p.stamps[q] = stampOf(&st, p.sums[idx[q]])
		}
	}
	// Folders the roll-forward emptied and removed are gone from the tree.
	gone := map[string]bool{}
	for _, q := range j.dels {
		for d := path.Dir(q); d != "." && !gone[d]; d = path.Dir(d) {
			gone[d] = true
			var st unix.Stat_t
			if unix.Lstat(filepath.Join(dir, filepath.FromSlash(d)), &st) != nil {
				delete(p.dirs, d)
			}
		}
	}
	if err := saveState(meta, p.state()); err != nil {
		return err
	}
	return cleanMeta(meta)
}

// syncEachMax is the most staged files an update flushes one by one (fsync
// each) rather than with a flush of the whole file system: that flush would
// also write whatever else is waiting for the disk, a fresh render's tree
// moments earlier, say.
const syncEachMax = 32

// fsyncFolders flushes root and every folder below it that holds one of
// paths (slash paths relative to root), deepest first.
func fsyncFolders(root string, paths []string) error {
	seen := map[string]bool{}
	var ds []string
	for _, q := range paths {
		for d := path.Dir(q); d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			ds = append(ds, d)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ds)))
	for _, d := range append(ds, ".") {
		full := filepath.Join(root, filepath.FromSlash(d))
		if err := fsyncPath(full); err != nil {
			return fmt.Errorf("write %s: %w", full, err)
		}
	}
	return nil
}

// groupByDir splits sorted slash paths into runs that share a folder.
func groupByDir(paths []string) [][]string {
	var out [][]string
	for i := 0; i < len(paths); {
		d := path.Dir(paths[i])
		k := i + 1
		for k < len(paths) && path.Dir(paths[k]) == d {
			k++
		}
		out = append(out, paths[i:k])
		i = k
	}
	return out
}

func randomName() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
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
			// rmdir fails on a folder that is not empty, or not a folder: that
			// is the test.
			if unix.Rmdir(filepath.Join(dir, filepath.FromSlash(d))) != nil {
				break
			}
		}
	}
}

type fileKind int

const (
	regular fileKind = iota
	other            // device, FIFO, socket, …: never ours
	symlink          // never ours either; only scan tells it from other
)

type listing struct {
	files     map[string]fileKind // slash paths relative to dir
	dirs      map[string]bool
	leftovers []string // temporary files of earlier versions (regular or symlink)
	listed    int      // folders read from disk rather than the stat cache
}

// stamped returns the stamp, from dstamps (scanWith's), of every folder
// of the listing and of the tree's root, with room for extra more.
func (l listing) stamped(dstamps map[string]dirStamp, extra int) map[string]dirStamp {
	out := make(map[string]dirStamp, len(l.dirs)+extra+1)
	for d := range l.dirs {
		out[d] = dstamps[d]
	}
	out["."] = dstamps["."]
	return out
}

// others returns the listed entries that are not fleetgen's (ours says
// which are), for the stat cache.
func (l listing) others(ours func(q string) bool) map[string]fileKind {
	out := map[string]fileKind{}
	for q, k := range l.files {
		if !ours(q) {
			out[q] = k
		}
	}
	return out
}

// scan lists dir without following symlinks, leaving out MetaDir, .git
// folders and leftovers; a missing dir is empty.
func scan(dir string) (listing, error) {
	l, _, err := scanWith(dir, nil, nil)
	return l, err
}

// entry is one name in a folder.
type entry struct {
	name string
	path string // relative to the tree, when known (from the stat cache)
	dir  bool
	kind fileKind // when not a folder
}

// scanWith is scan reading, from the stat cache cached (nil: none), the
// entries of every folder whose stamp still matches, and listing the others.
// It returns the stamp of every folder it saw, taken before listing it; a
// folder's stat is taken from pre when there (statAll's), else read.
func scanWith(dir string, cached *state, pre map[string]fileStat) (listing, map[string]dirStamp, error) {
	l := listing{files: map[string]fileKind{}, dirs: map[string]bool{}}
	stamps := map[string]dirStamp{}
	if cached != nil {
		l.files = make(map[string]fileKind, len(cached.files)+len(cached.others))
		l.dirs = make(map[string]bool, len(cached.dirs))
		stamps = make(map[string]dirStamp, len(cached.dirs))
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); errors.Is(err, unix.ENOENT) {
		return l, stamps, nil
	} else if err != nil {
		return l, nil, fmt.Errorf("read %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return l, nil, schema.Invalid(fmt.Errorf("output %s is not a folder", dir))
	}
	var children map[string][]entry
	if cached != nil && len(cached.dirs) > 0 {
		children = cached.children()
	}
	var walk func(rel string, st *unix.Stat_t) error
	walk = func(rel string, st *unix.Stat_t) error {
		full := filepath.Join(dir, filepath.FromSlash(rel))
		ds := dirStampOf(st)
		stamps[rel] = ds
		var ents []entry
		if old, ok := cached.dir(rel); ok && old.matches(st) {
			ents = children[rel]
		} else {
			var err error
			if ents, err = readDir(full); err != nil {
				return fmt.Errorf("read %s: %w", full, err)
			}
			l.listed++
		}
		for _, e := range ents {
			p := e.path
			if p == "" {
				p = e.name
				if rel != "." {
					p = rel + "/" + e.name
				}
			}
			switch {
			case e.dir:
				if e.name == ".git" || p == MetaDir {
					continue
				}
				var sub unix.Stat_t
				if s, ok := pre[p]; ok {
					sub = s.stat()
				} else if err := unix.Lstat(filepath.Join(full, e.name), &sub); err != nil {
					return fmt.Errorf("read %s: %w", p, err)
				}
				if sub.Mode&unix.S_IFMT != unix.S_IFDIR {
					// Replaced since it was listed or cached: list the
					// parent again.
					return errStaleListing
				}
				l.dirs[p] = true
				if err := walk(p, &sub); err != nil {
					return err
				}
			case strings.HasPrefix(e.name, tmpPrefix):
				if e.kind == regular || e.kind == symlink {
					l.leftovers = append(l.leftovers, p)
				}
			case e.kind == regular:
				l.files[p] = regular
			default:
				l.files[p] = other
			}
		}
		return nil
	}
	if err := walk(".", &st); err != nil {
		if errors.Is(err, errStaleListing) && cached != nil {
			return scanWith(dir, nil, nil)
		}
		if errors.Is(err, errStaleListing) {
			err = fmt.Errorf("read %s: changed while being listed", dir)
		}
		return l, nil, err
	}
	return l, stamps, nil
}

// errStaleListing: a folder's entries, listed or cached, no longer match it.
var errStaleListing = errors.New("stale listing")

func (s *state) dir(rel string) (dirStamp, bool) {
	if s == nil {
		return dirStamp{}, false
	}
	d, ok := s.dirs[rel]
	return d, ok
}

// readDir lists a folder without following a symlink in its place, typed
// from the listing where the file system says (one lstat otherwise).
func readDir(full string) ([]entry, error) {
	fd, err := unix.Open(full, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), full)
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(des))
	for _, d := range des {
		e := entry{name: d.Name()}
		switch t := d.Type(); {
		case t.IsDir():
			e.dir = true
		case t.IsRegular():
			e.kind = regular
		case t&fs.ModeSymlink != 0:
			e.kind = symlink
		default:
			e.kind = other
		}
		out = append(out, e)
	}
	return out, nil
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
	}
	return ""
}

// checkPaths rejects empty, absolute, unclean, escaping, reserved and
// duplicate paths, and a path that is also another path's folder.
func checkPaths(files []generate.File) error {
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

// ignoreMeta writes MetaDir/.gitignore ("*") once, so that Git leaves
// fleetgen's lock, journal and stat cache out of a commit of the output folder
// without the user's help. O_EXCL|O_NOFOLLOW: a planted name is never followed.
func ignoreMeta(meta string) error {
	p := filepath.Join(meta, ".gitignore")
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	_, werr := unix.Write(fd, []byte("# fleetgen's own files (lock, journal, stat cache): never committed.\n*\n"))
	if cerr := unix.Close(fd); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write %s: %w", p, werr)
	}
	return nil
}
