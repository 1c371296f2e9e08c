package safefs

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// within fails the test when fn has not returned after a few seconds: a read
// that blocks (a FIFO without a writer) must fail the test, not hang it.
func within(t *testing.T, fn func() ([]byte, error)) ([]byte, error) {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := fn()
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("read still blocked after 10s")
		return nil, nil
	}
}

func TestRootReadFile(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("MARKER-outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("certs/ca.pem", "ca")
	write("big", string(make([]byte, 101)))
	link("certs/ca.pem", "inside-link")
	link("../"+filepath.Base(outside)+"/secret", "relative-out")
	link(secret, "absolute-out")
	link("/dev/zero", "zero")
	link(outside, "outdir")
	link("certs/../../"+filepath.Base(outside), "climb")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := map[string]struct {
		name    string
		want    string
		wantErr error
	}{
		"plain":                 {name: "certs/ca.pem", want: "ca"},
		"dot slash":             {name: "./certs/ca.pem", want: "ca"},
		"symlink inside":        {name: "inside-link", want: "ca"},
		"absolute":              {name: secret, wantErr: ErrOutside},
		"dot dot":               {name: "../" + filepath.Base(outside) + "/secret", wantErr: ErrOutside},
		"dot dot inside":        {name: "certs/../certs/ca.pem", want: "ca"},
		"symlink relative out":  {name: "relative-out", wantErr: ErrOutside},
		"symlink absolute out":  {name: "absolute-out", wantErr: ErrOutside},
		"symlink to /dev/zero":  {name: "zero", wantErr: ErrOutside},
		"folder symlink out":    {name: "outdir/secret", wantErr: ErrOutside},
		"symlink climbs out":    {name: "climb/secret", wantErr: ErrOutside},
		"fifo":                  {name: "fifo", wantErr: ErrNotRegular},
		"folder":                {name: "certs", wantErr: ErrNotRegular},
		"too large":             {name: "big", wantErr: ErrTooLarge},
		"missing":               {name: "nope", wantErr: fs.ErrNotExist},
		"empty name":            {name: "", wantErr: ErrOutside},
		"missing under symlink": {name: "outdir/nope", wantErr: ErrOutside},
	}
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := within(t, func() ([]byte, error) { return r.ReadFile(tc.name, 100) })
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ReadFile(%q) = %q, %v; want an error wrapping %v", tc.name, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("ReadFile(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
			}
		})
	}
}

// TestDevices: a device is refused before anything is read from it.
func TestDevices(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"zero", "null", "urandom"} {
		got, err := within(t, func() ([]byte, error) { return ReadFile("/dev", name, 5) })
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(/dev, %s) = %q, %v; want an error wrapping ErrNotRegular", name, got, err)
		}
	}
}

// TestCheck: Check refuses what ReadFile refuses, without reading, and lets
// folders through (callers walk trees).
func TestCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ok"), []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sparse"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "sparse"), 8<<30); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.ReadFile("sock", 10); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(sock) = %v, want ErrNotRegular", err)
	}
	for name, want := range map[string]error{
		"ok": nil, "sub": nil, "fifo": ErrNotRegular, "sparse": ErrTooLarge, "sock": ErrNotRegular,
		"zero": ErrOutside, "../x": ErrOutside, "nope": fs.ErrNotExist,
	} {
		_, err := within(t, func() ([]byte, error) { return nil, r.Check(name, 1<<20) })
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("Check(%q) = %v, want %v", name, err, want)
		}
	}
}
