package tree

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
)

// The tests below forge DIR/.fleetgen as a pull request can (git add -f):
// journals in this version's format (v2, JSON) and in the first one's (v1,
// which named the staged files by path and the lock by its path). They use only
// what both versions have, so that they can be run against the old code too,
// where the v1 cases fail (issue 20, item 2).

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

const marker = "MARKER-outside"

// TestForgedStageSymlink: a staging folder that is a symlink, with a
// committed journal naming it, is refused: Diff (render --check) prints
// nothing from where it points and Write moves nothing from there, whether
// it leads out of DIR or to another folder inside it.
func TestForgedStageSymlink(t *testing.T) {
	t.Parallel()
	journals := map[string]struct{ stage, text string }{
		"v1": {"stage-y", "fleetgen journal v1\nstage stage-y\nput a.yaml\n"},
		"v2": {"stage-0123456789abcdef", `{"version":2,"stage":"stage-0123456789abcdef","puts":["a.yaml"]}`},
	}
	for name, jl := range journals {
		for _, inside := range []bool{false, true} {
			t.Run(name+map[bool]string{false: " out of DIR", true: " inside DIR"}[inside], func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				files := []layout.File{file("a.yaml", "a\n")}
				if _, err := Write(dir, files); err != nil {
					t.Fatal(err)
				}
				target := t.TempDir()
				if inside {
					target = filepath.Join(dir, "theirs")
					must(t, os.Mkdir(target, 0o755))
				}
				// The staged file under the name either version would use.
				for _, n := range []string{"a.yaml", "0"} {
					must(t, os.WriteFile(filepath.Join(target, n), []byte(h+marker+"\n"), 0o644))
				}
				must(t, os.Symlink(target, filepath.Join(dir, MetaDir, jl.stage)))
				must(t, os.WriteFile(filepath.Join(dir, MetaDir, committedFile), []byte(jl.text), 0o644))

				d, err := Diff(dir, files)
				if strings.Contains(d, marker) {
					t.Errorf("Diff printed a file the forged stage points to:\n%s", d)
				}
				if err == nil {
					t.Errorf("Diff = %q, nil; want a refusal", d)
				}
				if _, err := Write(dir, files); err == nil {
					t.Error("Write: got no error, want a refusal")
				}
				if b, _ := os.ReadFile(filepath.Join(dir, "a.yaml")); strings.Contains(string(b), marker) {
					t.Error("Write moved the forged stage's file into DIR")
				}
				for _, n := range []string{"a.yaml", "0"} {
					if b, err := os.ReadFile(filepath.Join(target, n)); err != nil || string(b) != h+marker+"\n" {
						t.Errorf("%s where the stage points: %q, %v", n, b, err)
					}
				}
			})
		}
	}
}

// TestForgedJournalLockElsewhere: a committed journal whose lock line names
// (v1) or hashes (v2) a lock in another folder makes Write delete nothing
// there, not even a file named like fleetgen's staged lock.
func TestForgedJournalLockElsewhere(t *testing.T) {
	t.Parallel()
	staged := []byte("# lock\n")
	sum := hexSum(staged)
	for name, forge := range map[string]func(elsewhere string) string{
		"v1": func(elsewhere string) string {
			return "fleetgen journal v1\nlock " + sum + " .fleet.lock.x.tmp " + filepath.Join(elsewhere, "fleet.lock.yaml") + "\n"
		},
		"v2": func(elsewhere string) string {
			return `{"version":2,"lockSum":"` + sum + `","lockPath":"` + hexSum([]byte(filepath.Join(elsewhere, "fleet.lock.yaml"))) + `"}`
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			elsewhere := t.TempDir()
			victims := map[string][]byte{
				"fleet.lock.yaml":                       staged,
				".fleet.lock.x.tmp":                     staged,
				".fleet.lock.yaml." + sum[:16] + ".tmp": staged,
				".fleet.lock." + sum[:16] + ".tmp":      staged,
			}
			for n, b := range victims {
				must(t, os.WriteFile(filepath.Join(elsewhere, n), b, 0o644))
			}
			base := t.TempDir()
			dir := filepath.Join(base, "out")
			lockPath := filepath.Join(base, "fleet.lock.yaml")
			files := []layout.File{file("a.yaml", "a\n")}
			if _, err := WriteWith(dir, files, Options{Lock: &Lock{Path: lockPath, New: []byte("# mine\n")}}); err != nil {
				t.Fatal(err)
			}
			must(t, os.WriteFile(filepath.Join(dir, MetaDir, committedFile), []byte(forge(elsewhere)), 0o644))
			Diff(dir, files)
			WriteWith(dir, files, Options{Lock: &Lock{Path: lockPath, Old: []byte("# mine\n"), New: []byte("# mine\n")}})
			for n, want := range victims {
				if b, err := os.ReadFile(filepath.Join(elsewhere, n)); err != nil || string(b) != string(want) {
					t.Errorf("%s in the other folder: %q, %v", n, b, err)
				}
			}
		})
	}
}
