package tree

import (
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// createWorkers is how many folders createNew makes or fills at once. The
// kernel's part of creating a file (a new inode and directory entry, the
// page of its content) runs on every core, as scanWorkers' reads do.
const createWorkers = 4

// createNew makes the folders mkdirs and the files news (sorted slash paths
// under the tree, none of them there yet) with their content in data,
// createWorkers folders at a time. Each folder is opened from its parent's
// descriptor and each file created relative to its folder's, O_EXCL and
// never through a symlink, as scanWithin reads them: three system calls per
// file, where an os.File from os.Root costs twelve (the walk to its folder
// again, the runtime's poller). Folders are made one depth at a time, so a
// parent exists before its children. On any failure the rest stops, and the
// failure returned is the one of the first folder in name order among those
// that failed; the caller rolls back what was made.
func (t *tree) createNew(mkdirs, news []string, data map[string][]byte) error {
	top, err := t.root.Open(".")
	if err != nil {
		return err
	}
	defer top.Close()
	fs := &folders{root: int(top.Fd()), open: map[string]int{}}
	defer fs.close()

	depth := func(d string) int { return strings.Count(d, "/") }
	levels := slices.Clone(mkdirs)
	slices.SortStableFunc(levels, func(a, b string) int { return depth(a) - depth(b) })
	for i := 0; i < len(levels); {
		k := i + 1
		for k < len(levels) && depth(levels[k]) == depth(levels[i]) {
			k++
		}
		level := levels[i:k]
		if err := inParallel(len(level), func(n int) error {
			d := level[n]
			pfd, err := fs.dir(path.Dir(d))
			if err == nil {
				err = unix.Mkdirat(pfd, path.Base(d), 0o755)
			}
			if err != nil {
				return &createError{"create " + d, err}
			}
			return nil
		}); err != nil {
			return err
		}
		i = k
	}

	var groups [][]string // news by folder
	for i := 0; i < len(news); {
		k := i + 1
		for k < len(news) && path.Dir(news[k]) == path.Dir(news[i]) {
			k++
		}
		groups = append(groups, news[i:k])
		i = k
	}
	return inParallel(len(groups), func(n int) error {
		group := groups[n]
		d := path.Dir(group[0])
		dfd, err := fs.leaf(d)
		if err != nil {
			return &createError{"write " + group[0], err}
		}
		if d != "." {
			defer unix.Close(dfd)
		}
		for _, q := range group {
			if writeHook != nil {
				if err := writeHook(q); err != nil {
					return &createError{"write " + q, err}
				}
			}
			if err := createAt(dfd, path.Base(q), data[q]); err != nil {
				return &createError{"write " + q, err}
			}
		}
		return nil
	})
}

// createError is a failed step of createNew: what, and why.
type createError struct {
	what string
	err  error
}

func (e *createError) Error() string { return e.what + ": " + e.err.Error() }
func (e *createError) Unwrap() error { return e.err }

// inParallel calls fn(0) … fn(n-1), createWorkers at a time, and stops
// taking new ones after a failure; it returns the failure of the lowest n.
func inParallel(n int, fn func(int) error) error {
	var (
		next   atomic.Int64
		failed atomic.Bool
		wg     sync.WaitGroup
		errs   = make([]error, n)
	)
	for range min(createWorkers, n) {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if errs[i] = fn(i); errs[i] != nil {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// folders opens the tree's folders by slash path, each from its parent's
// descriptor, never through a symlink. Parents are kept until close: there
// are few (clusters, manager/fleet, agents); each leaf is its caller's.
type folders struct {
	root int
	mu   sync.Mutex
	open map[string]int
}

// dir returns a kept descriptor of folder d ("." the tree).
func (f *folders) dir(d string) (int, error) {
	if d == "." {
		return f.root, nil
	}
	f.mu.Lock()
	fd, ok := f.open[d]
	f.mu.Unlock()
	if ok {
		return fd, nil
	}
	fd, err := f.leaf(d)
	if err != nil {
		return -1, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if kept, ok := f.open[d]; ok { // opened meanwhile by another worker
		unix.Close(fd)
		return kept, nil
	}
	f.open[d] = fd
	return fd, nil
}

// leaf opens folder d, from its parent's kept descriptor, for the caller to
// close (the tree's own descriptor for ".", not to be closed).
func (f *folders) leaf(d string) (int, error) {
	if d == "." {
		return f.root, nil
	}
	pfd, err := f.dir(path.Dir(d))
	if err != nil {
		return -1, err
	}
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(pfd, path.Base(d), flags, 0)
	for err == unix.EINTR {
		fd, err = unix.Openat(pfd, path.Base(d), flags, 0)
	}
	return fd, err
}

func (f *folders) close() {
	for _, fd := range f.open {
		unix.Close(fd)
	}
}

// createAt writes data to the new file name in the folder dirfd (O_EXCL,
// never through a symlink); a part-written one (a full disk) goes.
func createAt(dirfd int, name string, data []byte) error {
	const flags = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0o644)
	for err == unix.EINTR {
		fd, err = unix.Openat(dirfd, name, flags, 0o644)
	}
	if err != nil {
		return err
	}
	for n := 0; n < len(data) && err == nil; {
		var k int
		switch k, err = unix.Write(fd, data[n:]); {
		case err == unix.EINTR:
			err = nil
		case err == nil && k == 0:
			err = io.ErrShortWrite
		}
		n += max(k, 0)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(dirfd, name, 0)
	}
	return err
}
