package tree

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWriteFullTmpfs fills a real small file system, when this process may
// mount one: DIR and the lock stay old, byte for byte.
func TestWriteFullTmpfs(t *testing.T) {
	files0, lock0 := bigTree(0)
	files1, lock1 := bigTree(1)
	mnt := filepath.Join(t.TempDir(), "small")
	must(t, os.Mkdir(mnt, 0o755))
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("mount tmpfs: %v (TestWriteFullDisk's injected ENOSPC still runs)", err)
	}
	defer unix.Unmount(mnt, 0)
	dir := filepath.Join(mnt, "out")
	lockPath := filepath.Join(mnt, "fleet.lock.yaml")
	small := files0[:40]
	if _, err := WriteWith(dir, small, Options{Lock: &Lock{Path: lockPath, New: lock0}}); err != nil {
		t.Fatal(err)
	}
	before := read(t, dir)
	if _, err := WriteWith(dir, files1, Options{Lock: &Lock{Path: lockPath, Old: lock0, New: lock1}}); err == nil {
		t.Fatal("a 1 MiB file system took the whole tree")
	}
	if got, _ := os.ReadFile(lockPath); !bytes.Equal(got, lock0) {
		t.Error("full tmpfs: lock changed")
	}
	if d := diffMaps(before, read(t, dir)); d != "" {
		t.Errorf("full tmpfs: tree changed: %s", d)
	}
	if d, err := Diff(dir, small); err != nil || d != "" {
		t.Errorf("full tmpfs: Diff = %q, %v", d, err)
	}
}
