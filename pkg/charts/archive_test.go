package charts

import (
	"archive/tar"
	"errors"
	"fmt"
	"strings"
	"testing"
)

const minimalChart = "apiVersion: v2\nname: evil\nversion: 0.1.0\n"

// TestLoadAttacks: a chart archive is untrusted; each way out of it, and
// each bound, is refused with an error naming the chart.
func TestLoadAttacks(t *testing.T) {
	t.Parallel()
	ok := entry{name: "evil/Chart.yaml", body: minimalChart}
	many := []entry{ok}
	for i := 0; i < 30; i++ {
		many = append(many, entry{name: fmt.Sprintf("evil/templates/f%d.yaml", i), body: "a: b\n"})
	}
	small := DefaultLimits()
	small.Files, small.FileBytes, small.DecompressedBytes, small.PathDepth, small.Nesting = 20, 100, 1000, 3, 1
	nested := func(depth int) []byte {
		inner := packEntries(t, []entry{{name: "n0/Chart.yaml", body: "apiVersion: v2\nname: n0\nversion: 0.1.0\n"}})
		for i := 1; i <= depth; i++ {
			inner = packEntries(t, []entry{
				{name: fmt.Sprintf("n%d/Chart.yaml", i), body: fmt.Sprintf("apiVersion: v2\nname: n%d\nversion: 0.1.0\n", i)},
				{name: fmt.Sprintf("n%d/charts/n%d-0.1.0.tgz", i, i-1), body: string(inner)},
			})
		}
		return inner
	}
	for name, tc := range map[string]struct {
		tgz  []byte
		lim  Limits
		want string
	}{
		"symlink":           {packEntries(t, []entry{ok, {name: "evil/values.yaml", typ: tar.TypeSymlink, link: "/etc/passwd"}}), DefaultLimits(), `evil/values.yaml is not a regular file`},
		"hard link":         {packEntries(t, []entry{ok, {name: "evil/values.yaml", typ: tar.TypeLink, link: "evil/Chart.yaml"}}), DefaultLimits(), "not a regular file"},
		"device":            {packEntries(t, []entry{ok, {name: "evil/dev", typ: tar.TypeChar}}), DefaultLimits(), "not a regular file"},
		"dot dot":           {packEntries(t, []entry{ok, {name: "evil/../../etc/cron.d/x", body: "x"}}), DefaultLimits(), "a path that leaves the archive"},
		"absolute":          {packEntries(t, []entry{ok, {name: "/etc/passwd", body: "x"}}), DefaultLimits(), "an absolute path"},
		"drive":             {packEntries(t, []entry{ok, {name: "C:/x", body: "x"}}), DefaultLimits(), "an absolute path"},
		"backslash":         {packEntries(t, []entry{ok, {name: `evil\..\x`, body: "x"}}), DefaultLimits(), "backslash"},
		"two folders":       {packEntries(t, []entry{ok, {name: "other/templates/x.yaml", body: "x"}}), DefaultLimits(), "outside the chart's folder"},
		"top-level file":    {packEntries(t, []entry{{name: "Chart.yaml", body: minimalChart}}), DefaultLimits(), "not inside the chart's folder"},
		"duplicate":         {packEntries(t, []entry{ok, ok}), DefaultLimits(), "in the archive twice"},
		"too many files":    {packEntries(t, many), small, "more than 20 files"},
		"file too large":    {packEntries(t, []entry{ok, {name: "evil/big.txt", body: strings.Repeat("x", 101)}}), small, "of 101 bytes: over a bound of 100 bytes"},
		"unpacked too much": {packEntries(t, append([]entry{ok}, many[1:]...)), func() Limits { l := small; l.Files = 100; l.DecompressedBytes = 100; return l }(), "more than 100 bytes unpacked"},
		"too deep":          {packEntries(t, []entry{ok, {name: "evil/a/b/c/d.yaml", body: "x"}}), small, "more than 3 folders deep"},
		"archive too large": {pack(t, "evil", map[string]string{"Chart.yaml": minimalChart}), func() Limits { l := DefaultLimits(); l.ArchiveBytes = 10; return l }(), "archive of"},
		"nesting":           {nested(3), func() Limits { l := DefaultLimits(); l.Nesting = 1; return l }(), "nested more than 1 deep"},
		"bad subchart":      {packEntries(t, []entry{ok, {name: "evil/charts/sub-0.1.0.tgz", body: string(packEntries(t, []entry{{name: "sub/../../x", body: "x"}}))}}), DefaultLimits(), `subchart charts/sub-0.1.0.tgz: sub/../../x: a path that leaves the archive`},
		"not gzip":          {[]byte("PK\x03\x04 a zip"), DefaultLimits(), "not a gzipped tar archive"},
		"empty":             {packEntries(t, nil), DefaultLimits(), "no files"},
		"no Chart.yaml":     {packEntries(t, []entry{{name: "evil/values.yaml", body: "a: 1\n"}}), DefaultLimits(), "Chart.yaml file is missing"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Load("oci://example.com/evil:0.1.0", tc.tgz, tc.lim)
			var ce *Error
			if !errors.As(err, &ce) || ce.Chart != "oci://example.com/evil:0.1.0" {
				t.Fatalf("Load: %v: want a chart error naming the chart", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v: want %q", err, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	tgz := pack(t, "web", webFiles(t))
	c, err := Load("", tgz, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "web" || c.Version != "1.2.3" || c.Label != "web-1.2.3" || c.Digest != digestOf(tgz) {
		t.Errorf("chart %+v", c)
	}
	// Nesting within the bound, and a BOM, load.
	small := DefaultLimits()
	small.Nesting = 1
	bom := packEntries(t, []entry{{name: "x/Chart.yaml", body: "\ufeff" + "apiVersion: v2\nname: x\nversion: 0.1.0\n"}})
	if _, err := Load("", bom, small); err != nil {
		t.Errorf("a Chart.yaml with a byte order mark: %v", err)
	}
}
