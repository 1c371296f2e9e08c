package layers_test

import (
	"testing"

	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// writeTree writes files (slash paths) into a new temporary folder and
// returns it.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	testenv.WriteTree(t, dir, files)
	return dir
}

// fleet is a fleet in dir with three clusters (two env=prod, one env=dev)
// and the given layers and images.
func fleet(dir string, ls []schema.Layer, imgs ...string) *schema.Fleet {
	f := &schema.Fleet{
		APIVersion: schema.APIVersion, Kind: schema.Kind,
		Metadata: schema.Metadata{Name: "contoso"},
		Dir:      dir,
		Spec: schema.Spec{
			Registry: schema.Registry{Host: "contoso.azurecr.io"},
			Images:   imgs,
			Layers:   ls,
			Clusters: []schema.Cluster{
				{Name: "prod-eu-1", Labels: map[string]string{"env": "prod"}},
				{Name: "prod-us-1", Labels: map[string]string{"env": "prod"}},
				{Name: "dev-1", Labels: map[string]string{"env": "dev"}},
			},
		},
	}
	schema.Default(f)
	return f
}

// discover builds f's model and discovers its images, as the pipeline does.
func discover(f *schema.Fleet) (*images.Result, error) {
	m, err := layers.Load(f)
	if err != nil {
		return nil, err
	}
	return images.Discover(f, m)
}
