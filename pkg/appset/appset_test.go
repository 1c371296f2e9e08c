package appset

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/want")

// Clusters reads the cluster Secrets of a YAML stream, as the cases'
// clusters.yaml holds them. test/argocdoracle reads them too.
func testClusters(t testing.TB, path string) []Cluster {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Cluster
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		c, ok, _ := ClusterFromSecret(m)
		if !ok {
			t.Fatalf("%s: a document that is not a cluster Secret", path)
		}
		out = append(out, c)
	}
	return out
}

// TestCases previews every case of testdata/cases against the Secrets of
// testdata/clusters.yaml; testdata/want holds what fleetgen says, and
// test/argocdoracle holds it equal to Argo CD's own generators.
func TestCases(t *testing.T) {
	t.Parallel()
	clusters := testClusters(t, filepath.Join("testdata", "clusters.yaml"))
	files, err := filepath.Glob(filepath.Join("testdata", "cases", "*.yaml"))
	if err != nil || len(files) < 20 {
		t.Fatalf("%d cases, want at least 20 (%v)", len(files), err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := yaml.Unmarshal(data, &obj); err != nil {
				t.Fatal(err)
			}
			got, err := yaml.Marshal(Evaluate(obj, clusters))
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join("testdata", "want", name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(want, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			w, err := os.ReadFile(want)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(string(w), string(got)); d != "" {
				t.Errorf("preview (-want +got):\n%s", d)
			}
		})
	}
}
