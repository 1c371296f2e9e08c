package tree

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// tree is an output folder opened as an os.Root: every file of it is reached
// through that handle, so no name in it (a symlink planted by a pull request,
// a path from a forged journal) leads out of it.
type tree struct {
	dir  string
	root *os.Root

	mu   sync.Mutex
	real map[string]bool // folders checked to be real folders (no symlink on the way)
}

func openTree(dir string) (*tree, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return &tree{dir: dir, root: r, real: map[string]bool{".": true}}, nil
}

func (t *tree) Close() error { return t.root.Close() }

// nonblock opens without blocking on a FIFO planted where a file should be.
const nonblock = syscall.O_NONBLOCK

// readRegular reads name (slash path relative to r) when it is a regular
// file of at most limit bytes; a symlink at name is never followed.
func readRegular(r *os.Root, name string, limit int64) ([]byte, error) {
	fi, err := r.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	f, err := r.OpenFile(name, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, name, limit)
}

// readOpen reads an open file that must be regular, up to limit bytes.
func readOpen(f *os.File, name string, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	buf := make([]byte, 0, fi.Size()+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if int64(len(buf)) > limit {
			return nil, fmt.Errorf("%s: larger than %d bytes", name, limit)
		}
	}
}

// readAt reads the regular file name, an element listed in the folder dirfd,
// without following a symlink there or blocking on a FIFO: whole (an error
// beyond limit bytes), or its first limit bytes. One element opened
// relative to a folder of the tree with O_NOFOLLOW cannot lead out of it.
// It calls the system directly because os.File registers every file with the
// runtime's poller: two fcntl and a failing epoll_ctl more per file, a third
// of the system calls of comparing an unchanged tree (strace -c).
func readAt(dirfd int, name string, limit int64, whole bool) ([]byte, error) {
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0)
	for err == unix.EINTR {
		fd, err = unix.Openat(dirfd, name, flags, 0)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	size := st.Size
	switch {
	case !whole:
		size = min(size, limit)
	case size > limit:
		return nil, fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	buf := make([]byte, size)
	for n := 0; n < len(buf); {
		k, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if k == 0 {
			return buf[:n], nil // shorter than its stat said
		}
		n += k
	}
	return buf, nil
}

// openDirAt opens the folder name, an element listed in the folder dirfd,
// without following a symlink there, for scan (as readAt, and for the same
// reason: an os.File of os.Root's costs four system calls more per folder).
func openDirAt(dirfd int, name string) (*os.File, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0)
	for err == unix.EINTR {
		fd, err = unix.Openat(dirfd, name, flags, 0)
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// maxFile bounds what a render reads of one file of the output folder.
const maxFile = 256 << 20

func (t *tree) readRegular(name string, limit int64) ([]byte, error) {
	return readRegular(t.root, name, limit)
}

// readLock reads the lock file as it is now; nil when there is none.
func readLock(p string) ([]byte, error) {
	r, err := os.OpenRoot(filepath.Dir(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	defer r.Close()
	b, err := readRegular(r, filepath.Base(p), maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, schema.Invalid(fmt.Errorf("read %s: %w", p, err))
	}
	return b, nil
}

// headerOf reads the start of the regular file name in r: whether it is
// fleetgen's, or cut short inside the header. With lstat, a symlink at name
// is not followed (the caller may remove name), else the file was listed as
// regular a moment ago.
func headerOf(r *os.Root, name string, lstat bool) (ok, cut bool) {
	if lstat {
		if fi, err := r.Lstat(name); err != nil || !fi.Mode().IsRegular() {
			return false, false
		}
	}
	f, err := r.OpenFile(name, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return false, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false, false
	}
	buf := make([]byte, len(generate.Header))
	n, _ := io.ReadFull(f, buf)
	if n < len(buf) {
		return false, isCut(buf[:n])
	}
	return string(buf) == generate.Header, false
}

// isCut reports whether data, a whole file, is shorter than generate.Header
// and begins like it (an empty file does): a file fleetgen created and was
// killed while writing, or lost to a power cut before it was flushed.
func isCut(data []byte) bool {
	return len(data) < len(generate.Header) && strings.HasPrefix(generate.Header, string(data))
}

// ownedFile reports whether rel, reached through real folders only, is a
// regular file fleetgen wrote, or one cut short inside the header. A
// journal's replay removes or replaces only such files.
func (t *tree) ownedFile(rel string) bool {
	if !t.realDir(path.Dir(rel)) {
		return false
	}
	ok, cut := headerOf(t.root, rel, true)
	return ok || cut
}

// realDir reports whether every folder from d up to the root is a real
// folder, not a symlink.
func (t *tree) realDir(d string) bool {
	t.mu.Lock()
	ok := t.real[d]
	t.mu.Unlock()
	if ok {
		return true
	}
	if d == "" || !t.realDir(path.Dir(d)) {
		return false
	}
	fi, err := t.root.Lstat(d)
	if err != nil || !fi.IsDir() {
		return false
	}
	t.mu.Lock()
	t.real[d] = true
	t.mu.Unlock()
	return true
}

// ensureDir creates the folders up to d that are missing; it fails when one
// on the way is not a real folder.
func (t *tree) ensureDir(d string) error {
	if t.realDir(d) {
		return nil
	}
	if err := t.ensureDir(path.Dir(d)); err != nil {
		return err
	}
	if err := t.root.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", d, err)
	}
	if !t.realDir(d) {
		return schema.Invalid(fmt.Errorf("create %s in %s: not a folder", d, t.dir))
	}
	return nil
}

// removeEmptyParents removes the folders of removed files, and their parents,
// that are now empty, never the root itself.
func (t *tree) removeEmptyParents(removed []string) {
	seen := map[string]bool{}
	for _, p := range removed {
		for d := path.Dir(p); d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			// Only a real folder, and only an empty one: that is the test.
			if !t.realDir(d) || t.root.Remove(d) != nil {
				break
			}
			t.mu.Lock()
			delete(t.real, d)
			t.mu.Unlock()
		}
	}
}

// createFile writes data to a new file name in r (O_EXCL: never through a
// name that exists, symlink or not), flushed to disk with sync. A
// part-written file (a full disk) is removed.
func createFile(r *os.Root, name string, data []byte, sync bool) error {
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Remove(name)
	}
	return err
}

// syncPath flushes one file or folder (root-relative).
func (t *tree) syncPath(name string) error {
	f, err := t.root.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// syncDirs flushes the folders that hold paths, deepest first.
func (t *tree) syncDirs(paths []string) error {
	seen := map[string]bool{}
	var ds []string
	for _, q := range paths {
		for d := path.Dir(q); !seen[d]; d = path.Dir(d) {
			seen[d] = true
			ds = append(ds, d)
			if d == "." {
				break
			}
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ds)))
	return parallel(len(ds), func(i int) error {
		if !t.realDir(ds[i]) {
			return nil // emptied and removed
		}
		if err := t.syncPath(ds[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("flush %s: %w", ds[i], err)
		}
		return nil
	})
}

// flock locks name in r, created when missing (exclusive) or skipped when
// missing (shared: nil, nil). It calls waiting once when another process
// holds it, then waits.
func flock(r *os.Root, name string, shared bool, waiting func()) (*os.File, error) {
	flags, how := os.O_RDWR|os.O_CREATE, unix.LOCK_EX
	if shared {
		flags, how = os.O_RDONLY, unix.LOCK_SH
	}
	if fi, err := r.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return nil, invalidMeta(filepath.Dir(r.Name()), name+" is not a lock file fleetgen made")
	}
	f, err := r.OpenFile(name, flags|nonblock, 0o644)
	if shared && errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	err = unix.Flock(fd, how|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		if waiting != nil {
			waiting()
		}
		for err = unix.Flock(fd, how); errors.Is(err, unix.EINTR); err = unix.Flock(fd, how) {
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// parallel calls fn(0..n-1) on a bounded pool and returns the error of the
// lowest index that failed, so the result does not depend on scheduling.
func parallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error {
			errs[i] = fn(i)
			return nil
		})
	}
	g.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// workers bounds parallel file I/O: system calls block their thread, so a
// few more workers than cores keep the disk busy.
const workers = 16
