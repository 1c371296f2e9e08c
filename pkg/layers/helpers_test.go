package layers_test

import (
	"testing"

	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

func writeTree(t testing.TB, files map[string]string) string { return testenv.TempTree(t, files) }

func fleet(dir string, ls []schema.Layer, imgs ...string) *schema.Fleet {
	return testenv.Fleet(dir, ls, imgs...)
}

// discover builds f's model and discovers its images, as the pipeline does.
func discover(f *schema.Fleet) (*images.Result, error) {
	m, err := layers.Load(f, layers.DefaultOptions())
	if err != nil {
		return nil, err
	}
	return images.Discover(f, m)
}
