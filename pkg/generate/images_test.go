package generate_test

import (
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// TestImageClashes: a layer that uses one image name with two tags the lock
// pins differently is reported by ImageClashes (which validate runs) and
// refused by Render in the same words, at the layer, without quoting the
// image the layer holds.
func TestImageClashes(t *testing.T) {
	t.Parallel()
	f, err := schema.Parse("fleet.yaml", []byte(`apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: demo}
spec:
  registry: {host: registry.example}
  source: {kind: git, url: "https://git.example/fleet.git"}
  layers:
    - name: apps
      path: ./apps
  clusters:
    - name: c1
      registration: {mode: capi}
`))
	if err != nil {
		t.Fatal(err)
	}
	schema.Default(f)
	if err := schema.Validate(f); err != nil {
		t.Fatal(err)
	}
	const planted = "planted.example/evil"
	l := lock.New()
	l.SetImages([]lock.Image{
		{Source: planted + ":1", Target: "registry.example/evil:1", Digest: "sha256:" + strings.Repeat("1", 64)},
		{Source: planted + ":2", Target: "registry.example/evil:2", Digest: "sha256:" + strings.Repeat("2", 64)},
	})
	layerImages := map[string][]string{"apps": {planted + ":1", planted + ":2"}}

	errs := generate.ImageClashes(f, l, layerImages)
	if len(errs) != 1 {
		t.Fatalf("ImageClashes = %v, want one error", errs)
	}
	_, renderErr := generate.Render(f, l, generate.Options{LayerImages: layerImages})
	if renderErr == nil || renderErr.Error() != errs.Error() {
		t.Errorf("Render: %v\nwant the same error as ImageClashes: %v", renderErr, errs)
	}
	got := errs.Error()
	if !strings.Contains(got, "spec.layers[0]: layer apps (apps) uses one image name with different tags or digests") {
		t.Errorf("error %q does not name the layer and the problem", got)
	}
	if strings.Contains(got, "planted") || strings.Contains(got, "evil") {
		t.Errorf("error %q quotes the layer's image", got)
	}
	if errs := generate.ImageClashes(f, l, map[string][]string{"apps": {planted + ":1"}}); len(errs) != 0 {
		t.Errorf("one tag: ImageClashes = %v, want none", errs)
	}
}
