package charts

import (
	"errors"
	"path"
	"strings"
	"testing"
)

// FuzzLoad: an archive from a pull request never panics Load, fails only
// with a chart error, and what loads holds only clean relative names.
func FuzzLoad(f *testing.F) {
	f.Add(pack(f, "web", webFiles(f)))
	f.Add(cacheChart(f))
	f.Add(packEntries(f, []entry{{name: "x/Chart.yaml", body: minimalChart}, {name: "x/../y", body: "z"}}))
	lim := DefaultLimits()
	lim.Files, lim.DecompressedBytes, lim.FileBytes = 200, 1<<20, 1<<19
	f.Fuzz(func(t *testing.T, tgz []byte) {
		c, err := Load("fuzz", tgz, lim)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Load: %v: not a chart error", err)
			}
			return
		}
		for _, file := range c.files {
			if file.Name != path.Clean(file.Name) || path.IsAbs(file.Name) || strings.HasPrefix(file.Name, "../") || strings.Contains(file.Name, "\\") {
				t.Errorf("loaded a file named %q", file.Name)
			}
		}
	})
}
