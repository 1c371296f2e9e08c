package generate_test

import (
	"bytes"
	"errors"
	"flag"
	"math/rand"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

var update = flag.Bool("update", false, "rewrite golden files")

const goldenDir = "testdata/golden"

// goldenCase is one testdata/golden/<name>/ input, loaded.
type goldenCase struct {
	name  string
	dir   string
	fleet *schema.Fleet
	lock  *lock.Lock
	opts  generate.Options
}

func goldenCases(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatal("no golden cases")
	}
	return names
}

// loadCase loads fleet.yaml (schema.Load: parse, default, validate),
// fleet.lock.yaml and layer-images.yaml of a golden case.
func loadCase(t testing.TB, name string) *goldenCase {
	t.Helper()
	c, err := tryLoadCase(t, name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return c
}

// tryLoadCase is loadCase returning schema.Load's error: an error case may
// be caught by validation before Render sees it.
func tryLoadCase(t testing.TB, name string) (*goldenCase, error) {
	t.Helper()
	dir := filepath.Join(goldenDir, name)
	f, err := schema.Load(filepath.Join(dir, "fleet.yaml"), schema.LoadOptions{
		LookupEnv: func(string) (string, bool) { return "", false },
	})
	if err != nil {
		return nil, err
	}
	l, err := lock.Load(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatalf("load lock of %s: %v", name, err)
	}
	c := &goldenCase{name: name, dir: dir, fleet: f, lock: l, opts: generate.DefaultOptions()}
	if data, err := os.ReadFile(filepath.Join(dir, "layer-images.yaml")); err == nil {
		if err := yaml.UnmarshalStrict(data, &c.opts.LayerImages); err != nil {
			t.Fatalf("layer-images.yaml of %s: %v", name, err)
		}
	}
	// layer-decryption.yaml lists, per layer, the clusters whose build of it
	// holds SOPS-encrypted objects (what layers.Model.Decrypts says).
	if data, err := os.ReadFile(filepath.Join(dir, "layer-decryption.yaml")); err == nil {
		var decrypt map[string][]string
		if err := yaml.UnmarshalStrict(data, &decrypt); err != nil {
			t.Fatalf("layer-decryption.yaml of %s: %v", name, err)
		}
		c.opts.LayerDecryption = func(cluster, layer string) bool { return slices.Contains(decrypt[layer], cluster) }
	}
	return c, nil
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, name := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			var files []layout.File
			c, err := tryLoadCase(t, name)
			if err == nil {
				files, err = generate.Render(c.fleet, c.lock, c.opts)
			} else if !strings.HasPrefix(name, "error-") {
				t.Fatalf("load: %v", err)
			}
			want := filepath.Join(goldenDir, name, "want")
			if *update {
				writeWant(t, want, files, err)
			}
			if _, statErr := os.Stat(filepath.Join(want, "error.txt")); statErr == nil {
				wantErr, _ := os.ReadFile(filepath.Join(want, "error.txt"))
				if err == nil {
					t.Fatalf("Render: no error, want:\n%s", wantErr)
				}
				if !problem.IsInvalid(err) {
					t.Errorf("Render error is not an input error (problem.IsInvalid): %T", err)
				}
				var es problem.Errors
				if errors.As(err, &es) {
					for _, e := range es {
						if e.ErrorCode() == "" {
							t.Errorf("an error without a code: %v", e)
						}
					}
				}
				if diff := cmp.Diff(string(wantErr), err.Error()+"\n"); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			got := map[string]string{}
			for _, f := range files {
				got[f.Path] = string(f.Data)
			}
			wantFiles := testenv.ReadTree(t, want)
			for p, w := range wantFiles {
				g, ok := got[p]
				if !ok {
					t.Errorf("missing file %s", p)
					continue
				}
				if diff := cmp.Diff(w, g); diff != "" {
					t.Errorf("%s (-want +got):\n%s", p, diff)
				}
			}
			for p := range got {
				if _, ok := wantFiles[p]; !ok {
					t.Errorf("extra file %s", p)
				}
			}
		})
	}
}

// writeWant replaces dir with the rendered tree, or error.txt.
func writeWant(t testing.TB, dir string, files []layout.File, renderErr error) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if renderErr != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "error.txt"), []byte(renderErr.Error()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// renderCase renders a golden case that must succeed.
func renderCase(t testing.TB, c *goldenCase) []layout.File {
	t.Helper()
	files, err := generate.Render(c.fleet, c.lock, c.opts)
	if err != nil {
		t.Fatalf("Render %s: %v", c.name, err)
	}
	return files
}

// successCases are the golden cases that render without error.
func successCases(t testing.TB) []*goldenCase {
	t.Helper()
	var out []*goldenCase
	for _, name := range goldenCases(t) {
		if strings.HasPrefix(name, "error-") {
			continue
		}
		out = append(out, loadCase(t, name))
	}
	return out
}

func TestFileFormat(t *testing.T) {
	t.Parallel()
	for _, c := range successCases(t) {
		files := renderCase(t, c)
		if !sort.SliceIsSorted(files, func(i, j int) bool { return files[i].Path < files[j].Path }) {
			t.Errorf("%s: files not sorted by path", c.name)
		}
		for _, f := range files {
			name := c.name + ":" + f.Path
			s := string(f.Data)
			if !strings.HasPrefix(s, layout.Header) {
				t.Errorf("%s: does not start with layout.Header", name)
			}
			if !strings.HasSuffix(s, "\n") || strings.HasSuffix(s, "\n\n") {
				t.Errorf("%s: want exactly one trailing newline", name)
			}
			if strings.Contains(s, "\r") {
				t.Errorf("%s: contains CR", name)
			}
			for i, line := range strings.Split(s, "\n") {
				if strings.TrimRight(line, " \t") != line {
					t.Errorf("%s:%d: trailing whitespace", name, i+1)
				}
			}
			for _, noise := range []string{"status:", "creationTimestamp", ": null"} {
				if strings.Contains(s, noise) {
					t.Errorf("%s: contains %q", name, noise)
				}
			}
			if strings.Count(s, "\n---\n") > 0 && f.Path != "manager/namespace.yaml" {
				t.Errorf("%s: multi-document", name)
			}
			if path.Clean(f.Path) != f.Path || strings.HasPrefix(f.Path, "/") || strings.Contains(f.Path, "..") {
				t.Errorf("%s: unclean path", name)
			}
			wantSecret := strings.HasSuffix(f.Path, "/kubeconfig.yaml")
			if f.Secret != wantSecret {
				t.Errorf("%s: Secret = %v, want %v", name, f.Secret, wantSecret)
			}
			if strings.Contains(s, "fake-token-for-tests-only") {
				t.Errorf("%s: kubeconfig token in plain text (want base64 data)", name)
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	for _, c := range successCases(t) {
		t.Run(c.name, func(t *testing.T) {
			first := renderCase(t, c)
			second := renderCase(t, c)
			if diff := cmp.Diff(first, second); diff != "" {
				t.Fatalf("two renders differ (-first +second):\n%s", diff)
			}
			for seed := int64(1); seed <= 5; seed++ {
				shuffled := loadCase(t, c.name)
				rng := rand.New(rand.NewSource(seed))
				s := &shuffled.fleet.Spec
				rng.Shuffle(len(s.Clusters), func(i, j int) { s.Clusters[i], s.Clusters[j] = s.Clusters[j], s.Clusters[i] })
				rng.Shuffle(len(s.Layers), func(i, j int) { s.Layers[i], s.Layers[j] = s.Layers[j], s.Layers[i] })
				rng.Shuffle(len(s.Groups), func(i, j int) { s.Groups[i], s.Groups[j] = s.Groups[j], s.Groups[i] })
				for k, v := range shuffled.opts.LayerImages {
					rng.Shuffle(len(v), func(i, j int) { v[i], v[j] = v[j], v[i] })
					shuffled.opts.LayerImages[k] = v
				}
				shuffled.opts.Workers = int(seed) // also vary the parallelism
				got := renderCase(t, shuffled)
				if diff := cmp.Diff(first, got); diff != "" {
					t.Fatalf("seed %d: shuffled input renders differently (-want +got):\n%s", seed, diff)
				}
			}
		})
	}
}

func TestRenderDoesNotChangeInput(t *testing.T) {
	t.Parallel()
	c := loadCase(t, "mixed")
	before, err := yaml.Marshal(c.fleet)
	if err != nil {
		t.Fatal(err)
	}
	lockBefore := c.lock.Marshal()
	renderCase(t, c)
	after, _ := yaml.Marshal(c.fleet)
	if !bytes.Equal(before, after) {
		t.Error("Render changed the fleet")
	}
	if !bytes.Equal(lockBefore, c.lock.Marshal()) {
		t.Error("Render changed the lock")
	}
}

func TestRenderEmptyFleet(t *testing.T) {
	t.Parallel()
	f := &schema.Fleet{
		Metadata: schema.Metadata{Name: "empty"},
		Spec: schema.Spec{
			Source: schema.Source{Kind: schema.SourceGit, URL: "https://example.com/x.git"},
		},
	}
	schema.Default(f)
	files, err := generate.Render(f, nil, generate.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, fl := range files {
		paths = append(paths, fl.Path)
	}
	want := []string{
		"clusters/manager/manager.yaml",
		"manager/kustomization.yaml",
		"manager/namespace.yaml",
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}

func TestRenderRejectsCollisions(t *testing.T) {
	t.Parallel()
	f := &schema.Fleet{
		Metadata: schema.Metadata{Name: "x"},
		Spec: schema.Spec{
			Manager: schema.Manager{Name: "hub"},
			Source:  schema.Source{Kind: schema.SourceGit, URL: "https://example.com/x.git"},
			// clusters/hub/manager.yaml twice: the manager's entry point and
			// the cluster's layer.
			Layers:   []schema.Layer{{Name: "manager", Path: "."}},
			Clusters: []schema.Cluster{{Name: "hub", Registration: schema.Registration{Mode: schema.ModeCAPI}}},
		},
	}
	schema.Default(f)
	_, err := generate.Render(f, nil, generate.DefaultOptions())
	if err == nil || !problem.IsInvalid(err) {
		t.Fatalf("Render = %v, want an input error", err)
	}
}
