package tree

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// tree is an output folder opened as an os.Root: no name in it (a planted
// symlink, a path from a forged journal) leads out of it.
type tree struct {
	dir  string
	root *os.Root
	real map[string]bool // folders known to be real folders (no symlink on the way)
}

func openTree(dir string) (*tree, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return &tree{dir: dir, root: r, real: map[string]bool{".": true}}, nil
}

// readRegular reads name (a slash path in r) when it is a regular file of
// at most limit bytes: a symlink there is not followed, a FIFO not waited for.
func readRegular(r *os.Root, name string, limit int64) ([]byte, error) {
	d, err := r.Open(path.Dir(name))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return readAt(int(d.Fd()), path.Base(name), limit, nil)
}

// readAt reads the regular file name (one element, O_NOFOLLOW) of the folder
// dirfd, at most limit bytes, never waiting on a FIFO, into buf when it is
// large enough (the result then shares buf's memory). Direct system calls:
// an os.File per file was a third of the system calls of an unchanged render.
func readAt(dirfd int, name string, limit int64, buf []byte) ([]byte, error) {
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
	if size > limit {
		return nil, &tooLargeError{name: name, size: size, limit: limit}
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
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

// tooLargeError is readAt's refusal of a file larger than its limit.
type tooLargeError struct {
	name        string
	size, limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %d bytes", e.name, e.limit)
}

// openDirAt opens the folder name of the folder dirfd for scan, as readAt
// opens a file (an os.Root's os.File costs four system calls more).
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

// readLock reads the lock file as it is now; nil when there is none.
func readLock(p string) ([]byte, error) {
	r, err := os.OpenRoot(filepath.Dir(p))
	if err == nil {
		defer r.Close()
		var b []byte
		if b, err = readRegular(r, filepath.Base(p), maxFile); err == nil {
			return b, nil
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return nil, problem.Invalid(fmt.Errorf("read %s: %w", p, err))
}

// isCut reports whether data, a whole file, is a strict start of the header
// (empty, say): fleetgen's, cut by a kill or a power loss before a flush.
func isCut(data []byte) bool {
	return len(data) < len(layout.Header) && strings.HasPrefix(layout.Header, string(data))
}

// ownedFile reports whether rel, reached through real folders only, is a
// regular file fleetgen wrote, or cut (isCut): all that replay may touch.
func (t *tree) ownedFile(rel string) bool {
	if layout.FluxSystem(rel) || !t.realDir(path.Dir(rel)) {
		return false
	}
	b, err := readRegular(t.root, rel, maxFile)
	return err == nil && (bytes.HasPrefix(b, []byte(layout.Header)) || isCut(b))
}

// realDir reports whether every folder from d up to the root is a real one.
func (t *tree) realDir(d string) bool {
	if t.real[d] {
		return true
	}
	if d == "" || !t.realDir(path.Dir(d)) {
		return false
	}
	fi, err := t.root.Lstat(d)
	t.real[d] = err == nil && fi.IsDir()
	return t.real[d]
}

// ensureDir creates the missing folders up to d, all real folders.
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
		return problem.Invalid(fmt.Errorf("create %s in %s: not a folder", d, t.dir))
	}
	return nil
}

// removeEmptyParents removes the folders that removed files left empty.
func (t *tree) removeEmptyParents(removed []string) {
	seen := map[string]bool{}
	for _, p := range removed {
		for d := path.Dir(p); d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			// Only a real folder, and only an empty one: that is the test.
			if !t.realDir(d) || t.root.Remove(d) != nil {
				break
			}
			delete(t.real, d)
		}
	}
}

// createFile writes data to a new file name in r (O_EXCL), flushed with sync;
// a part-written one (a full disk) goes. p is its tree path, for writeHook.
func createFile(r *os.Root, name string, data []byte, sync bool, p string) error {
	if writeHook != nil && p != "" {
		if err := writeHook(p); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
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
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("flush %s: %w", filepath.Join(t.dir, name), err)
	}
	return nil
}

// flock locks name in r, created when missing (exclusive) or skipped (shared:
// nil, nil); it calls waiting when another process holds it, then waits.
func flock(r *os.Root, name string, shared bool, waiting func()) (*os.File, error) {
	flags, how := os.O_RDWR|os.O_CREATE, unix.LOCK_EX
	if shared {
		flags, how = os.O_RDONLY, unix.LOCK_SH
	}
	if fi, err := r.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return nil, invalidMeta(r.Name(), name+" is not a lock file fleetgen made")
	}
	f, err := r.OpenFile(name, flags|syscall.O_NONBLOCK, 0o644) // a planted FIFO does not block
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
