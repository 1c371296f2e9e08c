package schema

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/problem"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenCases lists testdata/golden/<case>/ folders.
func goldenCases(t testing.TB) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "golden", "*", "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no golden cases")
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	sort.Strings(dirs)
	return dirs
}

// caseEnv serves {env: VAR} from the files of <case>/env/, so that tests do
// not depend on the process environment.
func caseEnv(t testing.TB, dir string) func(string) (string, bool) {
	t.Helper()
	env := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "env", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		env[filepath.Base(f)] = string(b)
	}
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// loadCase loads <case>/fleet.yaml and returns what the golden files hold:
// want/error.txt (the errors, file names relative to the case) or
// want/fleet.json (the defaulted fleet), with want/warnings.txt when
// Warnings has any.
func loadCase(t testing.TB, dir string) (*Fleet, map[string]string) {
	t.Helper()
	f, err := Load(filepath.Join(dir, "fleet.yaml"), LoadOptions{LookupEnv: caseEnv(t, dir)})
	if err != nil {
		var es problem.Errors
		if !errors.As(err, &es) {
			t.Fatalf("Load: want problem.Errors, got %T: %v", err, err)
		}
		for _, e := range es {
			if e.ErrorCode() == "" {
				t.Errorf("an error without a code: %v", e)
			}
		}
		msg := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
		return nil, map[string]string{"error.txt": msg + "\n"}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// What Load read for each reference (its size: contents may be credentials).
	var refs strings.Builder
	for _, r := range f.refs() {
		fmt.Fprintf(&refs, "%s: %d bytes\n", r.path, len(r.ref.Data))
	}
	got := map[string]string{"fleet.json": string(b) + "\n", "refs.txt": refs.String()}
	if ws := Warnings(f); len(ws) > 0 {
		for _, w := range ws {
			if w.ErrorCode() == "" {
				t.Errorf("a warning without a code: %v", w)
			}
		}
		got["warnings.txt"] = strings.ReplaceAll(ws.Error(), dir+string(filepath.Separator), "") + "\n"
	}
	return f, got
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, dir := range goldenCases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			_, got := loadCase(t, dir)
			wantDir := filepath.Join(dir, "want")
			if *update {
				if err := os.RemoveAll(wantDir); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(wantDir, 0o755); err != nil {
					t.Fatal(err)
				}
				for name, content := range got {
					if err := os.WriteFile(filepath.Join(wantDir, name), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			want := map[string]string{}
			entries, err := os.ReadDir(wantDir)
			if err != nil {
				t.Fatalf("%v (run go test ./pkg/schema -update)", err)
			}
			for _, e := range entries {
				b, err := os.ReadFile(filepath.Join(wantDir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				want[e.Name()] = string(b)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("want/ mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGoldenExpectations keeps the golden cases honest: cases named valid*
// load, every other case fails, and bad-input cases fail with one line.
func TestGoldenExpectations(t *testing.T) {
	t.Parallel()
	for _, dir := range goldenCases(t) {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			_, got := loadCase(t, dir)
			msg, failed := got["error.txt"]
			switch {
			case strings.HasPrefix(name, "valid"):
				if failed {
					t.Fatalf("want a valid fleet, got:\n%s", msg)
				}
			case !failed:
				t.Fatal("want errors, got a valid fleet")
			case strings.HasPrefix(name, "bad-input-") && strings.Count(msg, "\n") != 1:
				t.Errorf("want one line of error, got:\n%s", msg)
			}
		})
	}
}
