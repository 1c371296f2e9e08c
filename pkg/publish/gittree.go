package publish

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// dirNode is a folder being edited. A child with a nil dir and a tree mode is
// an untouched subtree kept by hash.
type dirNode struct {
	entries map[string]*dirEntry
}

type dirEntry struct {
	mode filemode.FileMode
	hash plumbing.Hash
	dir  *dirNode // loaded (edited) subtree, or nil
}

func loadDir(st storer.EncodedObjectStorer, h plumbing.Hash) (*dirNode, error) {
	n := &dirNode{entries: map[string]*dirEntry{}}
	if h.IsZero() {
		return n, nil
	}
	t, err := object.GetTree(st, h)
	if err != nil {
		return nil, err
	}
	for _, e := range t.Entries {
		n.entries[e.Name] = &dirEntry{mode: e.Mode, hash: e.Hash}
	}
	return n, nil
}

// child returns the loaded subfolder name, creating it when create is set and
// there is no entry of that name; nil when absent (or not a folder) and not
// created.
func (n *dirNode) child(st storer.EncodedObjectStorer, name string, create bool) (*dirNode, error) {
	e, ok := n.entries[name]
	if ok && e.mode == filemode.Dir {
		if e.dir == nil {
			d, err := loadDir(st, e.hash)
			if err != nil {
				return nil, err
			}
			e.dir = d
		}
		return e.dir, nil
	}
	if ok || !create {
		return nil, nil
	}
	d := &dirNode{entries: map[string]*dirEntry{}}
	n.entries[name] = &dirEntry{mode: filemode.Dir, dir: d}
	return d, nil
}

// walk calls fn for every file entry at or under slash path scope, with its
// path; a missing scope calls nothing.
func (n *dirNode) walk(st storer.EncodedObjectStorer, scope string, fn func(p string, e *dirEntry) error) error {
	parts := strings.Split(scope, "/")
	d := n
	for _, part := range parts[:len(parts)-1] {
		var err error
		if d, err = d.child(st, part, false); err != nil || d == nil {
			return err
		}
	}
	last := parts[len(parts)-1]
	e, ok := d.entries[last]
	if !ok {
		return nil
	}
	if e.mode != filemode.Dir {
		return fn(scope, e)
	}
	sub, err := d.child(st, last, false)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(sub.entries))
	for name := range sub.entries {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := sub.walk(st, name, func(p string, e *dirEntry) error { return fn(scope+"/"+p, e) }); err != nil {
			return err
		}
	}
	return nil
}

// lookup returns the entry at parts, nil when there is none. conflict names
// the path where the tree holds a file that would have to be a folder, or a
// folder (not emptied by removals) where a file goes.
func (n *dirNode) lookup(st storer.EncodedObjectStorer, parts []string) (e *dirEntry, conflict string, err error) {
	d := n
	for i, part := range parts[:len(parts)-1] {
		pe, ok := d.entries[part]
		if !ok {
			return nil, "", nil
		}
		if pe.mode != filemode.Dir {
			return nil, strings.Join(parts[:i+1], "/"), nil
		}
		if d, err = d.child(st, part, false); err != nil {
			return nil, "", err
		}
	}
	e, ok := d.entries[parts[len(parts)-1]]
	if !ok {
		return nil, "", nil
	}
	if e.mode == filemode.Dir {
		sub, err := d.child(st, parts[len(parts)-1], false)
		if err != nil {
			return nil, "", err
		}
		if len(sub.entries) > 0 {
			return nil, strings.Join(parts, "/"), nil
		}
		return nil, "", nil
	}
	return e, "", nil
}

func (n *dirNode) remove(st storer.EncodedObjectStorer, parts []string) error {
	if len(parts) == 1 {
		delete(n.entries, parts[0])
		return nil
	}
	d, err := n.child(st, parts[0], false)
	if err != nil || d == nil {
		return err
	}
	return d.remove(st, parts[1:])
}

// put places a file at parts; lookup has ruled out conflicts.
func (n *dirNode) put(st storer.EncodedObjectStorer, parts []string, mode filemode.FileMode, h plumbing.Hash) error {
	if len(parts) == 1 {
		n.entries[parts[0]] = &dirEntry{mode: mode, hash: h}
		return nil
	}
	d, err := n.child(st, parts[0], true)
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("%s is not a folder", parts[0])
	}
	return d.put(st, parts[1:], mode, h)
}

// write stores n (and its edited subtrees) and returns its hash; empty reports
// a folder with no entries, which Git does not keep.
func (n *dirNode) write(st storer.EncodedObjectStorer) (h plumbing.Hash, empty bool, err error) {
	t := &object.Tree{}
	for name, e := range n.entries {
		if e.dir != nil {
			sub, subEmpty, err := e.dir.write(st)
			if err != nil {
				return plumbing.ZeroHash, false, err
			}
			if subEmpty {
				continue
			}
			e.hash = sub
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: e.mode, Hash: e.hash})
	}
	if len(t.Entries) == 0 {
		return plumbing.ZeroHash, true, nil
	}
	sort.Sort(object.TreeEntrySorter(t.Entries))
	obj := st.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, false, err
	}
	h, err = st.SetEncodedObject(obj)
	return h, false, err
}
