package tree

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestCreateNewMakes: folders one depth at a time (a parent before its
// children, whatever the workers), every file with its bytes.
func TestCreateNewMakes(t *testing.T) {
	dir := t.TempDir()
	tr, err := openTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.root.Close()
	var mkdirs, news []string
	data := map[string][]byte{"top.yaml": []byte("top\n")}
	for _, c := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		for _, d := range []string{"clusters/" + c, "clusters/" + c + "/argocd", "manager/fleet/" + c} {
			mkdirs = append(mkdirs, d)
			p := d + "/x.yaml"
			news, data[p] = append(news, p), []byte(p+"\n")
		}
	}
	mkdirs = append(mkdirs, "clusters", "manager", "manager/fleet")
	news = append(news, "top.yaml")
	sortStrings(mkdirs, news)
	if err := tr.createNew(mkdirs, news, data); err != nil {
		t.Fatal(err)
	}
	got := read(t, dir) // folders as path + "/"
	if len(got) != len(news)+len(mkdirs) {
		t.Errorf("%d files and folders, want %d", len(got), len(news)+len(mkdirs))
	}
	for _, d := range mkdirs {
		if _, ok := got[d+"/"]; !ok {
			t.Errorf("folder %s missing", d)
		}
	}
	for _, p := range news {
		if got[p] != string(data[p]) {
			t.Errorf("%s = %q, want %q", p, got[p], data[p])
		}
	}
}

// TestCreateNewFirstFailure: two folders fail; the error names the first
// in name order every time, whichever worker met its failure first.
func TestCreateNewFirstFailure(t *testing.T) {
	for range 20 {
		dir := t.TempDir()
		tr, err := openTree(dir)
		if err != nil {
			t.Fatal(err)
		}
		var news []string
		data := map[string][]byte{}
		for _, c := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
			p := c + "/x.yaml"
			news, data[p] = append(news, p), []byte("x\n")
		}
		mkdirs := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
		var mu sync.Mutex
		writeHook = func(p string) error {
			mu.Lock()
			defer mu.Unlock()
			if p == "c/x.yaml" || p == "i/x.yaml" {
				return syscall.ENOSPC
			}
			return nil
		}
		err = tr.createNew(mkdirs, news, data)
		writeHook = nil
		tr.root.Close()
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "write c/x.yaml") {
			t.Fatalf("createNew = %v, want ENOSPC at c/x.yaml", err)
		}
	}
}

// TestCreateNewNoSymlink: a folder on the way that became a symlink (to a
// folder outside the tree) after the plan is never written through, nor
// is a file name that did.
func TestCreateNewNoSymlink(t *testing.T) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "out"), filepath.Join(base, "outside")
	for _, d := range []string{dir, outside, filepath.Join(dir, "clusters")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "agents")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "planted.yaml"), filepath.Join(dir, "clusters", "planted.yaml")); err != nil {
		t.Fatal(err)
	}
	tr, err := openTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.root.Close()
	for _, tc := range []struct{ mkdirs, news []string }{
		{[]string{"agents/c"}, []string{"agents/c/values.yaml"}},
		{nil, []string{"agents/values.yaml"}},
		{nil, []string{"clusters/planted.yaml"}},
	} {
		data := map[string][]byte{tc.news[0]: []byte("x\n")}
		if err := tr.createNew(tc.mkdirs, tc.news, data); err == nil {
			t.Errorf("createNew(%q) through a symlink: no error", tc.news)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("written outside the tree: %v", ents)
	}
}

func sortStrings(ls ...[]string) {
	for _, l := range ls {
		for i := 1; i < len(l); i++ {
			for k := i; k > 0 && l[k] < l[k-1]; k-- {
				l[k], l[k-1] = l[k-1], l[k]
			}
		}
	}
}
