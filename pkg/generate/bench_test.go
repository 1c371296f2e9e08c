package generate_test

import (
	"fmt"
	"testing"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/test/synthetic"
)

// BenchmarkRender renders synthetic fleets (mixed modes, two layers, image
// rewrites) in memory. MB/s counts the bytes of the rendered tree.
func BenchmarkRender(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			f := synthetic.Fleet(n)
			l := synthetic.Lock(f)
			opts := generate.Options{LayerImages: synthetic.LayerImages(f)}
			files, err := generate.Render(f, l, opts)
			if err != nil {
				b.Fatal(err)
			}
			var size int64
			for _, fl := range files {
				size += int64(len(fl.Data))
			}
			b.SetBytes(size)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := generate.Render(f, l, opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(files)), "files")
		})
	}
}
