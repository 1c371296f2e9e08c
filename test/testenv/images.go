package testenv

import (
	"math/rand"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Image returns a reproducible random image: the base layers, then n layers of
// size bytes each drawn from rng.
func Image(rng *rand.Rand, base []v1.Layer, n int, size int64) (v1.Image, error) {
	layers := append([]v1.Layer(nil), base...)
	for i := 0; i < n; i++ {
		l, err := Layer(rng, size)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	return mutate.AppendLayers(empty.Image, layers...)
}

// Layer returns a reproducible random layer of about size bytes.
func Layer(rng *rand.Rand, size int64) (v1.Layer, error) {
	return random.Layer(size, types.DockerLayer, random.WithSource(rand.NewSource(rng.Int63())))
}

// Platforms are the two platforms of Index.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// Index returns a reproducible two-platform index (linux/amd64, linux/arm64)
// whose images each have the base layers (per platform: base[i]) and n layers
// of size bytes of their own.
func Index(rng *rand.Rand, base [][]v1.Layer, n int, size int64) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for i, p := range Platforms {
		var b []v1.Layer
		if i < len(base) {
			b = base[i]
		}
		img, err := Image(rng, b, n, size)
		if err != nil {
			return nil, err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = p.OS, p.Architecture
		img, err = mutate.ConfigFile(img, cfg)
		if err != nil {
			return nil, err
		}
		p := p
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}
