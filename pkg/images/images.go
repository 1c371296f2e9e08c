// Package images finds every image a fleet needs: spec.images plus every image in
// the kustomize build (krusty) of each layer path.
package images

import "fleetgen.dev/fleetgen/pkg/schema"

// Use is one image (or oci:// chart) the fleet needs.
type Use struct {
	// Ref is the normalised reference (lock.Normalize); the lock's key.
	Ref string
	// Why lists who asked for it, sorted: "spec.images[0]",
	// "layer infrastructure (infrastructure/prod)".
	Why []string
}

// Result is what Discover found.
type Result struct {
	// Images is deduplicated by Ref and sorted by it.
	Images []Use
	// LayerImages is generate.Options.LayerImages: each expanded layer path to
	// the references its build uses, as written, sorted and deduplicated.
	LayerImages map[string][]string
}

// Discover builds each distinct expanded layer path of f once, with krusty, and
// collects images from pod templates of every workload kind (containers,
// initContainers, ephemeralContainers; CronJob included) and HelmRelease /
// OCIRepository chart references. A layer path that does not build is an input
// error naming the layer.
//
// SKELETON: mirror owner (issue 3) implements.
func Discover(f *schema.Fleet) (*Result, error) {
	return &Result{LayerImages: map[string][]string{}}, nil
}
