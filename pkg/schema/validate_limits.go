package schema

import (
	"fmt"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// Expansion caps: what a small fleet.yaml may make fleetgen render. A layer
// becomes one Flux Kustomization per cluster it selects, and each of those
// carries the layer's substitute values and the cluster's labels, so a
// 47 KB fleet.yaml of 600 layers and 600 clusters asks for 360,000
// Kustomizations, and one 4 MiB substitute value on 200 clusters for 800 MiB
// of output. Validate refuses both before anything is built or rendered
// (docs/security.md, "Bounds"). The 10,000-cluster benchmark fleet
// (test/synthetic: 23,334 layer Kustomizations, about 0.8 MiB of substitute
// bytes) stays far below both.
//
// A large fleet is a large fleet.yaml: past LargeFleet clusters both caps
// grow with the cluster count (LayersPerCluster layer Kustomizations per
// cluster), to at most twice, so that 100,000 clusters may each select five
// layers while what a small file can ask for stays where it was (Caps).
const (
	// MaxLayerKustomizations bounds the layer Kustomizations of a fleet of
	// up to LargeFleet clusters: the sum over spec.layers of the clusters
	// each one selects.
	MaxLayerKustomizations = 250_000
	// MaxSubstituteBytes bounds, for a fleet of up to LargeFleet clusters,
	// the bytes of postBuild.substitute the layer Kustomizations hold
	// together: for each layer and each cluster it selects, the keys and
	// values of the layer's substitute, the cluster's labels and its name.
	MaxSubstituteBytes = 64 << 20
	// LayersPerCluster is how many layer Kustomizations per cluster the
	// caps admit past LargeFleet clusters.
	LayersPerCluster = 5
	// LargeFleet is the cluster count past which the caps grow:
	// MaxLayerKustomizations / LayersPerCluster.
	LargeFleet = MaxLayerKustomizations / LayersPerCluster
	// maxCapScale is how far the caps grow: twice, at 2 × LargeFleet
	// clusters and beyond.
	maxCapScale = 2
)

// Caps returns the expansion caps of a fleet of n clusters: the layer
// Kustomizations and the bytes of postBuild.substitute it may make.
// Up to LargeFleet clusters they are MaxLayerKustomizations and
// MaxSubstituteBytes; past it, LayersPerCluster Kustomizations per cluster
// and the substitute bytes in the same proportion, up to maxCapScale times
// the base (500,000 and 128 MiB from 100,000 clusters on).
func Caps(n int) (kustomizations, substituteBytes int64) {
	k := min(max(int64(n)*LayersPerCluster, MaxLayerKustomizations), maxCapScale*MaxLayerKustomizations)
	return k, MaxSubstituteBytes * k / MaxLayerKustomizations
}

// limits checks the expansion caps. It runs on what fleet.yaml says (no layer
// build, no file read), in time linear in layers × clusters.
func (v *validator) limits() {
	f := v.f
	labelBytes := make([]int64, len(f.Spec.Clusters))
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		n := int64(len("cluster") + len(c.Name))
		for k, val := range c.Labels {
			n += int64(len(k) + len(val))
		}
		labelBytes[i] = n
	}
	var kustomizations, substBytes int64
	worst, worstBytes := -1, int64(0) // the layer that adds most substitute bytes
	for li := range f.Spec.Layers {
		l := &f.Spec.Layers[li]
		var own int64
		for k, val := range l.Substitute {
			own += int64(len(k) + len(val))
		}
		var n, b int64
		for ci := range f.Spec.Clusters {
			if !Selects(l.Selector, f.Spec.Clusters[ci].Labels) {
				continue
			}
			n++
			b += own + labelBytes[ci]
		}
		kustomizations += n
		substBytes += b
		if b > worstBytes {
			worst, worstBytes = li, b
		}
	}
	maxKusts, maxSubst := Caps(len(f.Spec.Clusters))
	if kustomizations > maxKusts {
		v.add(problem.Other("spec.layers", "%d layers on %d clusters make %d layer Kustomizations (each layer counts once per cluster it selects), more than fleetgen renders for %d clusters (%d: %d, or %d per cluster past %d clusters, at most %d): want fewer layers or narrower selectors, or split the fleet (docs/security.md, Bounds)",
			len(f.Spec.Layers), len(f.Spec.Clusters), kustomizations, len(f.Spec.Clusters), maxKusts,
			MaxLayerKustomizations, LayersPerCluster, LargeFleet, maxCapScale*MaxLayerKustomizations))
	}
	if substBytes > maxSubst {
		p := "spec.layers"
		if worst >= 0 {
			p = fmt.Sprintf("spec.layers[%d].substitute", worst)
		}
		v.add(problem.Other(p, "the layer Kustomizations would carry %d MiB of postBuild.substitute (substitute values and cluster labels, once per cluster each layer selects; this layer adds %d MiB), more than fleetgen renders (%d MiB): want shorter values (a large value belongs in a file of the layer) (docs/security.md, Bounds)",
			substBytes>>20, worstBytes>>20, maxSubst>>20))
	}
}
