package publish

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestReadTreeSpecialFiles: a layer folder a pull request commits may hold a
// FIFO (open(2) would wait for a writer forever), a sparse 8 GiB file or a
// big one (read whole): each is an input error naming the file, at once
// (issue 20, items 3 and 4). Symlinks are still skipped with a warning.
func TestReadTreeSpecialFiles(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		make func(t *testing.T, p string)
		want string
	}{
		"fifo": {func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "apps/x/bad.yaml is not a regular file"},
		"sparse": {func(t *testing.T, p string) {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, 8<<30); err != nil {
				t.Fatal(err)
			}
		}, "apps/x/bad.yaml is larger than 16 MiB"},
		"big": {func(t *testing.T, p string) {
			if err := os.WriteFile(p, make([]byte, maxLayerFile+1), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "apps/x/bad.yaml is larger than 16 MiB"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			testenv.WriteTree(t, dir, map[string]string{"deploy.yaml": "kind: ConfigMap\n", "x/ok.yaml": "a: 1\n"})
			tc.make(t, filepath.Join(dir, "x", "bad.yaml"))
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				done <- readTree(dir, "apps", func(string, file) {}, nil, "", slog.New(slog.DiscardHandler))
			}()
			select {
			case err := <-done:
				if d := time.Since(start); d > time.Second {
					t.Errorf("readTree took %v", d)
				}
				if !problem.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("readTree: %v, want an input error containing %q", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				if f, err := os.OpenFile(filepath.Join(dir, "x", "bad.yaml"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				t.Fatal("readTree blocked")
			}
		})
	}
}

// TestReadTreeSkipsSymlinks: a symlink in a layer folder is not published
// (nor followed), as before.
func TestReadTreeSkipsSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{"deploy.yaml": "kind: ConfigMap\n"})
	if err := os.Symlink("/etc/hostname", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := readTree(dir, "apps", func(rel string, _ file) { got = append(got, rel) }, nil, "", slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "apps/deploy.yaml" {
		t.Fatalf("read %v, want [apps/deploy.yaml]", got)
	}
}
