package pipeline

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestPreviousUntrusted: what DIR held before comes from pull requests too.
// previous (the ciphertext render keeps) reads a regular file inside DIR and
// nothing else: not through a symlink out of DIR, not a FIFO (which would
// block), not /dev/zero (which would exhaust memory).
func TestPreviousUntrusted(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("MARKER-outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mk := func(name string, make func(p string) error) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := make(p); err != nil {
			t.Fatal(err)
		}
	}
	mk("manager/fleet/ok/kubeconfig.yaml", func(p string) error { return os.WriteFile(p, []byte("sealed"), 0o644) })
	mk("manager/fleet/fifo/kubeconfig.yaml", func(p string) error { return syscall.Mkfifo(p, 0o644) })
	mk("manager/fleet/zero/kubeconfig.yaml", func(p string) error { return os.Symlink("/dev/zero", p) })
	mk("manager/fleet/out/kubeconfig.yaml", func(p string) error { return os.Symlink(outside, p) })
	mk("manager/fleet/big/kubeconfig.yaml", func(p string) error { return os.WriteFile(p, make([]byte, maxPrevious+1), 0o644) })

	prev := previous(dir)
	for name, want := range map[string]bool{"ok": true, "fifo": false, "zero": false, "out": false, "big": false, "missing": false} {
		done := make(chan bool, 1)
		var got []byte
		go func() {
			b, ok := prev("manager/fleet/" + name + "/kubeconfig.yaml")
			got = b
			done <- ok
		}()
		select {
		case ok := <-done:
			if ok != want {
				t.Errorf("%s: previous = %q, %v; want ok %v", name, got, ok, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: previous still blocked after 10s", name)
		}
	}
}
