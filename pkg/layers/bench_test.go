package layers_test

import (
	"path/filepath"
	"testing"

	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/synthetic"
)

// BenchmarkModel10k builds the model of the synthetic 10,000-cluster fleet
// (make bench's: three layers, one of them an app of apps whose
// Kustomizations nest two deep), discovers its images and checks it.
//
//	go test -run '^$' -bench Model10k -benchtime 3x ./pkg/layers
func BenchmarkModel10k(b *testing.B) {
	dir := b.TempDir()
	if err := synthetic.Write(dir, 10000); err != nil {
		b.Fatal(err)
	}
	f, err := schema.Load(filepath.Join(dir, "fleet.yaml"), schema.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		m, err := layers.Load(f, layers.DefaultOptions())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := images.Discover(f, m); err != nil {
			b.Fatal(err)
		}
		if errs := m.Check(f); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
