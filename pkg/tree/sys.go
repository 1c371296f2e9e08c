package tree

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"fleetgen.dev/fleetgen/pkg/generate"
)

// The file helpers below call the system directly: os.OpenFile registers
// every file with the runtime poller (two fcntl pairs and a failing epoll_ctl
// per file, measured with strace), which is most of the syscalls of a render
// on a disk where each one counts.

// createFile writes data to a new file at p (O_EXCL: never through a name that
// exists, symlink or not) and returns its stat, taken before close.
func createFile(p string, data []byte) (unix.Stat_t, error) {
	return createFileSync(p, data, false)
}

// createFileSync is createFile, and with sync the file is flushed to disk
// (fsync) before it is closed.
func createFileSync(p string, data []byte, sync bool) (unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return st, err
	}
	err = writeAll(fd, data)
	if err == nil && sync {
		err = unix.Fsync(fd)
	}
	if err == nil {
		err = unix.Fstat(fd, &st)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		// O_EXCL made it ours: a part-written file (a full disk) goes.
		unix.Unlink(p)
	}
	return st, err
}

func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		data = data[n:]
	}
	return nil
}

// readFile reads the regular file at p without following a symlink there;
// size is a hint from an earlier stat.
func readFile(p string, size int64) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// owned reports whether the regular file at p starts with generate.Header.
func owned(p string) (bool, error) {
	ok, _, err := ownedOrCut(p)
	return ok, err
}

// ownedOrCut is owned, and also reports whether the file is shorter than the
// header and begins like it: a file fleetgen created and was killed while
// writing (an empty file, when the kill came between open and write).
func ownedOrCut(p string) (ok, cut bool, err error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, false, err
	}
	defer unix.Close(fd)
	buf := make([]byte, len(generate.Header))
	got := 0
	for got < len(buf) {
		n, err := unix.Read(fd, buf[got:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, false, err
		}
		if n == 0 {
			break
		}
		got += n
	}
	if got < len(buf) {
		return false, isCut(buf[:got]), nil
	}
	return string(buf) == generate.Header, false, nil
}

// isCut reports whether data, a whole file, is shorter than generate.Header
// and begins like it (an empty file does).
func isCut(data []byte) bool {
	return len(data) < len(generate.Header) && strings.HasPrefix(generate.Header, string(data))
}

// ownedFile reports whether root/rel, reached through real folders only (no
// symlink on the way), is a regular file fleetgen wrote, or one cut short
// inside the header: by a kill between open and write, or by a power loss
// after an update that was not flushed (see commit). Such a file holds
// nothing; a journal's replay removes or replaces it like one of fleetgen's.
func ownedFile(root, rel string, dirs *dirCache) bool {
	ok, cut := headerOf(root, rel, dirs)
	return ok || cut
}

// headerOf is ownedOrCut of root/rel when that is a regular file reached
// through real folders only; false, false otherwise.
func headerOf(root, rel string, dirs *dirCache) (ok, cut bool) {
	if !dirs.real(root, path.Dir(rel)) {
		return false, false
	}
	full := filepath.Join(root, filepath.FromSlash(rel))
	var st unix.Stat_t
	if unix.Lstat(full, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, false
	}
	ok, cut, err := ownedOrCut(full)
	if err != nil {
		return false, false
	}
	return ok, cut
}

// dirCache remembers folders below a root checked to be real folders, not
// symlinks, so that an operation replayed from a journal (which sits in the
// untrusted output folder) never reaches outside it.
type dirCache struct{ ok map[string]bool }

func newDirCache() *dirCache { return &dirCache{ok: map[string]bool{}} }

// real reports whether every folder from root/d up to root is a real folder.
func (c *dirCache) real(root, d string) bool {
	if d == "." || d == "" {
		return true
	}
	key := root + "\x00" + d
	if c.ok[key] {
		return true
	}
	if !c.real(root, path.Dir(d)) {
		return false
	}
	var st unix.Stat_t
	if unix.Lstat(filepath.Join(root, filepath.FromSlash(d)), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	c.ok[key] = true
	return true
}

// ensure creates the folders up to root/d that are missing; it fails when one
// on the way is not a real folder.
func (c *dirCache) ensure(root, d string) error {
	if d == "." || c.ok[root+"\x00"+d] {
		return nil
	}
	if err := c.ensure(root, path.Dir(d)); err != nil {
		return err
	}
	full := filepath.Join(root, filepath.FromSlash(d))
	if err := unix.Mkdir(full, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("create %s: %w", d, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(full, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("create %s: not a folder", d)
	}
	c.ok[root+"\x00"+d] = true
	return nil
}

// flock takes an exclusive lock on the file at p, created when missing. It
// calls waiting once when another process holds it, then waits.
func flock(p string, shared bool, waiting func()) (*os.File, error) {
	flags := os.O_RDWR | os.O_CREATE
	how := unix.LOCK_EX
	if shared {
		flags, how = os.O_RDONLY, unix.LOCK_SH
	}
	// O_NONBLOCK: a FIFO planted at this name must not hang the open.
	fh, err := os.OpenFile(p, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, err
	}
	err = unix.Flock(int(fh.Fd()), how|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		if waiting != nil {
			waiting()
		}
		for {
			err = unix.Flock(int(fh.Fd()), how)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
	}
	if err != nil {
		fh.Close()
		return nil, err
	}
	return fh, nil
}

// flushes counts the flushes before a commit point, for tests.
var flushes atomic.Int64

// syncFS flushes the file system that holds p: one call instead of an fsync
// per file, before the commit point.
func syncFS(p string) error {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Syncfs(fd)
}

// flusher flushes the file system in the background while an update writes
// its files, one syncfs after another as long as files keep coming: the disk
// writes the first files while the rest are created, and the flush before
// the commit point waits only for the last ones. Its errors are left to that
// flush, which reports them.
//
// A nil *flusher does nothing: updates of fewer than flushAheadFiles new
// files have one flush only.
type flusher struct {
	kick, quit, done chan struct{}
	once             sync.Once
}

// flushAheadFiles is the fewest new files for which an update flushes ahead.
const flushAheadFiles = 1000

func startFlusher(p string) *flusher {
	f := &flusher{kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for {
			select {
			case <-f.quit:
				return
			case <-f.kick:
				syncFS(p)
			}
		}
	}()
	return f
}

// wrote tells f that files were written since its last flush began.
func (f *flusher) wrote() {
	if f == nil {
		return
	}
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// stop ends f, after the flush it may be running.
func (f *flusher) stop() {
	if f == nil {
		return
	}
	f.once.Do(func() { close(f.quit) })
	<-f.done
}

// fsyncPath flushes one file or folder.
func fsyncPath(p string) error {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsync(fd)
}
