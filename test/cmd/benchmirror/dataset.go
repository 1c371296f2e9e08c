package main

import (
	"fmt"
	"math/rand"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The data set: references shaped like a fleet's, and their blobs.

// item is one reference of the data set.
type item struct {
	repo, tag string
	img       v1.Image      // or
	idx       v1.ImageIndex // a two-platform index
}

// dataset returns the data set's references, shaped like a fleet's.
func dataset(rng *rand.Rand, scale float64) ([]item, error) {
	size := func(n float64) int { return max(int(n*scale*mib), 1024) }
	blob := func(n int) v1.Layer {
		b := make([]byte, n)
		rng.Read(b)
		return static.NewLayer(b, types.DockerLayer)
	}
	image := func(layers ...v1.Layer) (v1.Image, error) {
		return mutate.AppendLayers(empty.Image, layers...)
	}
	var amdBase, armBase []v1.Layer
	for i := 0; i < 4; i++ {
		amdBase = append(amdBase, blob(size(40)))
	}
	for i := 0; i < 2; i++ {
		armBase = append(armBase, blob(size(40)))
	}
	orgs := []string{"platform", "apps", "infra", "data"}
	var items []item
	indexes := 0
	for r := 0; r < 28; r++ {
		repo := fmt.Sprintf("%s/svc-%02d", orgs[r%len(orgs)], r)
		repoLayer := blob(size(6))
		tags := 4
		if r < 12 {
			tags = 5
		}
		for tg := 0; tg < tags; tg++ {
			it := item{repo: repo, tag: fmt.Sprintf("1.%d.0", tg)}
			amd, err := image(amdBase[r%len(amdBase)], repoLayer, blob(size(2)))
			if err != nil {
				return nil, err
			}
			if tg == 0 && indexes < 12 {
				indexes++
				arm, err := image(armBase[r%len(armBase)], blob(size(2)))
				if err != nil {
					return nil, err
				}
				it.idx = mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
					mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
					mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
				)
			} else {
				it.img = amd
			}
			items = append(items, it)
		}
	}
	for _, c := range []string{"charts/podinfo", "charts/cert-manager"} {
		b := make([]byte, 20<<10)
		rng.Read(b)
		chart := static.NewLayer(b, "application/vnd.cncf.helm.chart.content.v1.tar+gzip")
		img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), chart)
		if err != nil {
			return nil, err
		}
		img = mutate.ConfigMediaType(img, "application/vnd.cncf.helm.config.v1+json")
		items = append(items, item{repo: c, tag: "1.0.0", img: img})
	}
	return items, nil
}

// blobsOf returns every blob (configs and layers) of the data set by digest,
// with its size and a repository of the source that holds it.
func blobsOf(items []item) (map[v1.Hash]int64, map[v1.Hash]string, error) {
	sizes, where := map[v1.Hash]int64{}, map[v1.Hash]string{}
	addImage := func(repo string, img v1.Image) error {
		m, err := img.Manifest()
		if err != nil {
			return err
		}
		for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
			sizes[d.Digest] = d.Size
			where[d.Digest] = repo
		}
		return nil
	}
	for _, it := range items {
		if it.img != nil {
			if err := addImage(it.repo, it.img); err != nil {
				return nil, nil, err
			}
			continue
		}
		im, err := it.idx.IndexManifest()
		if err != nil {
			return nil, nil, err
		}
		for _, c := range im.Manifests {
			img, err := it.idx.Image(c.Digest)
			if err != nil {
				return nil, nil, err
			}
			if err := addImage(it.repo, img); err != nil {
				return nil, nil, err
			}
		}
	}
	return sizes, where, nil
}

// sized is a layer whose size is known, so that uploading it asks the source
// nothing but the bytes.
type sized struct {
	v1.Layer
	size int64
}

func (s sized) Size() (int64, error) { return s.size, nil }

// must returns v, panicking on err: for values of in-memory images, which
// cannot fail.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
