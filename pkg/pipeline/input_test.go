package pipeline

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// copyTree copies the example folder src to a temporary folder.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestUnchangedInputs: a render whose inputs and output folder are as the
// last render left them writes nothing, and every change to what a render
// reads (fleet.yaml's folder, options, variables fleet.yaml may read, the
// output's own files) makes it render in full again.
func TestUnchangedInputs(t *testing.T) {
	// Nothing in the environment that fleet.yaml could read (it turns the
	// shortcut off), and no age key.
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "FLEETGEN_KUBECONFIG_") {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
	root := copyTree(t, filepath.Join("..", "..", "examples", "quickstart"))
	out := filepath.Join(root, "out") // inside the fleet's folder, as in the README
	var logs bytes.Buffer
	cfg := Config{File: filepath.Join(root, "fleet.yaml"), OutDir: out, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	render := func(c Config) (skipped bool) {
		t.Helper()
		logs.Reset()
		if err := Render(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(logs.String(), "msg=unchanged")
	}
	write := func(rel, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(rel string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if render(cfg) {
		t.Fatal("first render skipped")
	}
	if !render(cfg) {
		t.Fatalf("render of unchanged inputs was not skipped:\n%s", logs.String())
	}

	// A layer file: the render runs and its output follows.
	base := "apps/base/kustomization.yaml"
	orig := read(base)
	write(base, orig+"labels:\n  - pairs: {tier: web}\n")
	if render(cfg) {
		t.Error("render skipped after a layer file changed")
	}
	if !render(cfg) {
		t.Error("second render after the layer change not skipped")
	}

	// An output file edited by hand is put back.
	var someOut string
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if someOut == "" && err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".yaml") && !strings.Contains(p, ".fleetgen") {
			someOut = p
		}
		return nil
	})
	rel, _ := filepath.Rel(root, someOut)
	want := read(rel)
	write(rel, want+"# edited\n")
	if render(cfg) {
		t.Errorf("render skipped after %s was edited", rel)
	}
	if got := read(rel); got != want {
		t.Errorf("%s not put back: %q", rel, got)
	}

	// Options, and variables fleet.yaml may read.
	plain := cfg
	plain.AllowPlaintextSecrets = true
	if render(plain) {
		t.Error("render skipped with other options")
	}
	if !render(plain) {
		t.Error("second render with the same options not skipped")
	}
	t.Setenv("FLEETGEN_KUBECONFIG_ANY", "x")
	if render(plain) || render(plain) {
		t.Error("render skipped while a FLEETGEN_KUBECONFIG_ variable is set")
	}
	os.Unsetenv("FLEETGEN_KUBECONFIG_ANY")
	render(plain)

	// A file added anywhere in the fleet's folder, a symlink among them.
	write("notes.txt", "x\n")
	if render(plain) {
		t.Error("render skipped after a file was added to the fleet's folder")
	}
	if err := os.Symlink("notes.txt", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if render(plain) {
		t.Error("render skipped after a symlink was added to the fleet's folder")
	}

	// A layer that reads a file in the output folder (not hashed): no
	// render is skipped while it does.
	if err := os.MkdirAll(filepath.Join(out, "extra"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("out/extra/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: podinfo}\n")
	write(base, strings.Replace(orig, "  - podinfo.yaml\n", "  - podinfo.yaml\n  - ../../out/extra/cm.yaml\n", 1))
	for i := range 2 {
		if render(plain) {
			t.Errorf("render %d skipped while a layer reads the output folder", i+1)
		}
	}
}

// TestCheckOutDir: the output folder may not be the fleet's folder or hold
// it, also through a symlink; a folder beside or inside it is fine.
func TestCheckOutDir(t *testing.T) {
	root := t.TempDir()
	fleet := filepath.Join(root, "fleet")
	if err := os.MkdirAll(fleet, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(fleet, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(fleet, "fleet.yaml")
	for out, refused := range map[string]bool{
		fleet: true, root: true, link: true, filepath.Join(fleet, ".."): true,
		filepath.Join(fleet, "out"): false, filepath.Join(root, "out"): false,
	} {
		err := checkOutDir(Config{File: file, OutDir: out})
		if refused != (err != nil) || err != nil && !schema.IsInvalid(err) {
			t.Errorf("-o %s: checkOutDir = %v, want refused %v (an input error)", out, err, refused)
		}
	}
}
