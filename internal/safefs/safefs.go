// Package safefs reads files named by untrusted input: only regular files, of
// bounded size, opened without blocking, and only inside one folder, symlinks
// included.
//
// fleet.yaml, its {file: …} references and fleet.lock.yaml come from pull
// requests. A plain os.ReadFile on them would follow a symlink to the runner's
// kubeconfig, block forever on a FIFO (open(2) waits for a writer) and read
// /dev/zero until memory runs out.
package safefs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Errors a read is refused with, wrapped in an *fs.PathError; test with
// errors.Is.
var (
	// ErrOutside: the name is absolute, climbs out with "..", or resolves
	// outside the root through a symlink.
	ErrOutside = errors.New("path leaves the folder")
	// ErrNotRegular: a FIFO, device, socket or folder.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: more bytes than the caller's limit.
	ErrTooLarge = errors.New("file too large")
)

// Root reads files inside one folder. Symlinks are followed only while they
// stay inside it (os.Root does the resolving, one openat(2) per component, so
// a symlink swapped in between a check and a read cannot lead out either).
type Root struct {
	r *os.Root
}

// OpenRoot opens dir as a Root; Close releases it.
func OpenRoot(dir string) (*Root, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Root{r: r}, nil
}

// Close releases the folder's descriptor.
func (r *Root) Close() error { return r.r.Close() }

// ReadFile reads name, a path relative to the root, when it is a regular file
// of at most max bytes inside the root. Refusals wrap ErrOutside,
// ErrNotRegular or ErrTooLarge; a missing file wraps fs.ErrNotExist.
func (r *Root) ReadFile(name string, max int64) ([]byte, error) {
	fh, err := r.open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return readRegular(fh, name, max)
}

// Check reports whether name, a path relative to the root, is a regular file
// of at most max bytes inside the root, as ReadFile would, without reading it:
// nil, or the error ReadFile would return. A folder is not an error (callers
// walk trees).
func (r *Root) Check(name string, max int64) error {
	fh, err := r.open(name)
	if err != nil {
		return err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return &fs.PathError{Op: "read", Path: name, Err: err}
	}
	switch {
	case st.IsDir():
		return nil
	case !st.Mode().IsRegular():
		return &fs.PathError{Op: "read", Path: name, Err: ErrNotRegular}
	case st.Size() > max:
		return &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)}
	}
	return nil
}

// open opens name inside the root for reading, without blocking (O_NONBLOCK:
// open(2) of a FIFO would wait for a writer) and without taking a terminal.
func (r *Root) open(name string) (*os.File, error) {
	if !filepath.IsLocal(name) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: ErrOutside}
	}
	fh, err := r.r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		switch {
		case r.escapes(err):
			err = ErrOutside
		case errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.ENODEV), errors.Is(err, syscall.EOPNOTSUPP):
			// A socket (ENXIO on Linux, EOPNOTSUPP on macOS), or a device
			// without a driver, cannot be opened: not a regular file either.
			err = ErrNotRegular
		default:
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
		}
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return fh, nil
}

// escapes reports whether err is os.Root's refusal of a path that leaves it.
// That error is unexported; an absolute name yields the same value without a
// system call, so it is taken from there rather than matched by its text.
func (r *Root) escapes(err error) bool {
	_, probe := r.r.Open("/")
	var pe *fs.PathError
	if !errors.As(probe, &pe) {
		return false
	}
	return errors.Is(err, pe.Err)
}

// ReadFile reads name inside dir; see Root.ReadFile.
func ReadFile(dir, name string, max int64) ([]byte, error) {
	r, err := OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadFile(name, max)
}

// readRegular checks with fstat(2) that fh is a regular file (the open was
// non-blocking, so a FIFO got this far without a writer) and reads at most
// max bytes of it; a file that grows while being read is still cut at max+1.
func readRegular(fh *os.File, name string, max int64) ([]byte, error) {
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: ErrNotRegular}
	}
	if st.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)}
	}
	data, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)}
	}
	return data, nil
}
