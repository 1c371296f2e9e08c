package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTB records what Tool and Missing do to the test.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Skip(args ...any)                  { f.skipped = fmt.Sprint(args...) }
func (f *fakeTB) Fatal(args ...any)                 { f.failed = fmt.Sprint(args...) }
func (f *fakeTB) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

// TestToolMissing: a missing tool skips with the standard message, which
// names the variable and the build.sh command; in CI it fails instead.
func TestToolMissing(t *testing.T) {
	t.Setenv("FLEETGEN_NOTATION", "")
	t.Setenv("FLEETGEN_E2E_CACHE", t.TempDir()) // build.sh's cache holds nothing
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		f := &fakeTB{}
		if p := Tool(f, "notation"); p != "" {
			t.Errorf("CI=%q: Tool returned %q for a missing tool", ci, p)
		}
		msg := f.skipped
		if ci != "" {
			msg = f.failed
			if f.skipped != "" {
				t.Errorf("CI=%q: skipped (%q), want a failure", ci, f.skipped)
			}
		} else if f.failed != "" {
			t.Errorf("failed (%q), want a skip", f.failed)
		}
		for _, want := range []string{MissingTool + "notation; get it: ", "`test/e2e/tools/build.sh notation`", "FLEETGEN_NOTATION"} {
			if !strings.Contains(msg, want) {
				t.Errorf("CI=%q: message %q lacks %q", ci, msg, want)
			}
		}
		if !strings.HasPrefix(msg, MissingTool) {
			t.Errorf("CI=%q: message %q does not start with %q", ci, msg, MissingTool)
		}
	}
}

// TestToolFound: the variable wins; else build.sh's cache; a fixed file is
// looked for where it is.
func TestToolFound(t *testing.T) {
	t.Setenv("CI", "")
	cache := t.TempDir()
	t.Setenv("FLEETGEN_E2E_CACHE", cache)
	t.Setenv("FLEETGEN_ORAS", "/somewhere/oras")
	f := &fakeTB{}
	if p := Tool(f, "oras"); p != "/somewhere/oras" || f.skipped+f.failed != "" {
		t.Errorf("Tool(oras) = %q (%q%q), want $FLEETGEN_ORAS", p, f.skipped, f.failed)
	}

	t.Setenv("FLEETGEN_ORAS", "")
	built := builtPath("oras")
	if !strings.HasPrefix(built, cache+"/") || !strings.Contains(filepath.Base(built), "oras-v") {
		t.Fatalf("build.sh --path oras = %q, want bin/oras-<version> under %s", built, cache)
	}
	if err := os.MkdirAll(filepath.Dir(built), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(built, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p := Tool(f, "oras"); p != built || f.skipped+f.failed != "" {
		t.Errorf("Tool(oras) = %q (%q%q), want build.sh's %s", p, f.skipped, f.failed, built)
	}

	Tool(f, "no-such-tool")
	if !strings.Contains(f.failed, `unknown tool "no-such-tool"`) {
		t.Errorf("an unknown tool: %q, want a failure naming it", f.failed)
	}
}
