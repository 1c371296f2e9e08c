package synthetic_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/synthetic"
)

// TestWriteLoadsAndRendersLikeFleet: what Write puts on disk loads into the
// same fleet Fleet returns, so CLI and in-memory benchmarks measure the same.
func TestWriteLoadsAndRendersLikeFleet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 50
	if err := synthetic.Write(dir, n); err != nil {
		t.Fatal(err)
	}
	loaded, err := schema.Load(filepath.Join(dir, "fleet.yaml"), schema.LoadOptions{})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	l, err := lock.Load(filepath.Join(dir, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	f := synthetic.Fleet(n)
	opts := generate.Options{LayerImages: synthetic.LayerImages(f)}
	want, err := generate.Render(f, synthetic.Lock(f), opts)
	if err != nil {
		t.Fatalf("render Fleet: %v", err)
	}
	got, err := generate.Render(loaded, l, opts)
	if err != nil {
		t.Fatalf("render loaded: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-Fleet +Write/Load):\n%s", diff)
	}
	modes := map[string]int{}
	for _, c := range f.Spec.Clusters {
		modes[c.Registration.Mode]++
	}
	if len(modes) != 4 {
		t.Errorf("modes = %v, want all four", modes)
	}
}
