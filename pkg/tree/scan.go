package tree

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// scanWithin reads the tree without following symlinks: each folder opened
// from its parent's descriptor (openDirAt), from the root down, and each
// file read relative to its folder's (readAt), as cp -r does, within b's
// budget (nil: none beyond maxFile per file). A file whose content is its
// entry in want is listed with want's bytes: a render holds one copy of
// what did not change, not two.
//
// Folders are read scanWorkers at a time (GOMAXPROCS when more): an
// unchanged re-render is mostly this read, and the kernel's part of it
// (open, fstat, read, close of every file) runs on every core. Which
// problem a parallel read meets first depends on scheduling, so on any
// error the tree is read again one folder at a time, in name order, and
// that read's error is the one returned: the same for the same tree,
// whatever the machine.
//
// With keep, a file (anything but a folder) whose path keep refuses is left
// out of the listing, unread; folders are all listed and walked.
func (t *tree) scanWithin(b *budget, want map[string][]byte, keep func(string) bool) (listing, error) {
	l, err := t.scan(b, want, keep, max(scanWorkers, runtime.GOMAXPROCS(0)))
	if err == nil {
		return l, nil
	}
	b.reset()
	return t.scan(b, want, keep, 1)
}

// scanWorkers is how many folders scanWithin reads at once at least. On two
// cores, reading the 10,000-cluster benchmark's 45,000 files took 455 ms one
// folder at a time, 390-427 ms two at a time and 261-273 ms four at a time;
// eight bought nothing more (docs/performance.md).
const scanWorkers = 4

// scan is scanWithin with at most workers folders read at once.
func (t *tree) scan(b *budget, want map[string][]byte, keep func(string) bool, workers int) (listing, error) {
	s := &scanner{t: t, b: b, want: want, keep: keep, extra: make(chan []byte, workers-1),
		l: listing{files: map[string][]byte{}, dirs: map[string]bool{}}}
	for range workers - 1 {
		s.extra <- nil
	}
	top, err := t.root.Open(".")
	if err != nil {
		return s.l, fmt.Errorf("read %s: %w", t.dir, err)
	}
	s.folder(top, ".", nil)
	maps.Copy(t.real, s.l.dirs)
	return s.l, s.err
}

// scanner is one scan of a tree: its listing so far and its first error.
type scanner struct {
	t    *tree
	b    *budget
	want map[string][]byte
	keep func(string) bool // nil: every file
	// extra holds a buffer for each folder that may be read beside the
	// caller's: taken to read one, given back after, so that a large tree's
	// read does not leave a buffer of garbage per folder.
	extra chan []byte

	mu     sync.Mutex // guards l and err
	l      listing
	err    error
	failed atomic.Bool
}

func (s *scanner) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.failed.Store(true)
}

// folder lists f (at rel) into s, reading each file into buf (grown as
// needed, and returned for the next folder), and each subfolder beside it
// when a token is free, else in turn. It closes f, and returns once every
// subfolder is read.
func (s *scanner) folder(f *os.File, rel string, buf []byte) []byte {
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		s.fail(fmt.Errorf("read %s: %w", filepath.Join(s.t.dir, rel), err))
		return buf
	}
	// In name order (ReadDir gives the file system's), so that a read one
	// folder at a time meets the tree's problems in the same order anywhere.
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	type found struct {
		p    string
		data []byte
		dir  bool
	}
	var (
		list      = make([]found, 0, len(ents))
		leftovers []string
		wg        sync.WaitGroup
	)
entries:
	for _, e := range ents {
		if s.failed.Load() {
			break
		}
		p := path.Join(rel, e.Name())
		if err := s.b.spend(p, entryCost); err != nil {
			s.fail(err)
			break
		}
		var data []byte
		switch typ := e.Type(); {
		case typ.IsDir() && e.Name() != ".git" && p != MetaDir:
			select {
			case sub := <-s.extra:
				wg.Go(func() { s.extra <- s.subfolder(f, e.Name(), p, sub) })
			default:
				buf = s.subfolder(f, e.Name(), p, buf)
			}
		case typ.IsDir():
			continue
		case s.keep != nil && !s.keep(p):
			continue
		case strings.HasPrefix(e.Name(), tmpPrefix) && (typ.IsRegular() || typ&fs.ModeSymlink != 0):
			leftovers = append(leftovers, p)
			continue
		case typ.IsRegular():
			read, err := readAt(int(f.Fd()), e.Name(), s.b.limit(), buf)
			if err := s.b.refuse(p, err); err != nil {
				s.fail(err)
				break entries
			}
			if err := s.b.spend(p, int64(len(read))); err != nil {
				s.fail(err)
				break entries
			}
			if err == nil {
				buf = read
				if w, ok := s.want[p]; ok && bytes.Equal(w, read) {
					data = w
				} else {
					data = append([]byte{}, read...)
				}
			}
		}
		list = append(list, found{p, data, e.IsDir()})
	}
	wg.Wait() // f stays open for the subfolders read beside this one
	s.mu.Lock()
	for _, x := range list {
		if x.dir {
			s.l.dirs[x.p] = true
		} else {
			s.l.files[x.p] = x.data
		}
	}
	s.l.leftovers = append(s.l.leftovers, leftovers...)
	s.mu.Unlock()
	return buf
}

// subfolder opens the folder name of f (at p) and lists it.
func (s *scanner) subfolder(f *os.File, name, p string, buf []byte) []byte {
	sub, err := openDirAt(int(f.Fd()), name)
	if err != nil {
		s.fail(fmt.Errorf("read %s: %w", filepath.Join(s.t.dir, p), err))
		return buf
	}
	return s.folder(sub, p, buf)
}
