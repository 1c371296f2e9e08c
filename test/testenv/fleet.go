package testenv

import (
	"testing"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// TempTree writes files (slash paths) into a new temporary folder and
// returns it.
func TempTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	WriteTree(t, dir, files)
	return dir
}

// Fleet is a defaulted fleet in folder dir with three clusters (prod-eu-1
// and prod-us-1 labelled env=prod, dev-1 env=dev), the given layers and
// spec.images, for tests of the layer builds.
func Fleet(dir string, layers []schema.Layer, images ...string) *schema.Fleet {
	f := &schema.Fleet{
		APIVersion: schema.APIVersion, Kind: schema.Kind,
		Metadata: schema.Metadata{Name: "contoso"},
		Dir:      dir,
		Spec: schema.Spec{
			Registry: schema.Registry{Host: "contoso.azurecr.io"},
			Images:   images,
			Layers:   layers,
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
