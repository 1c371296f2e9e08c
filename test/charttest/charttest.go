// Package charttest makes Helm charts for tests: archives as `helm package`
// writes them, pushed to a registry as `helm push` does, or served from an
// HTTP chart repository on loopback. It is apart from testenv, which
// packages fleetgen imports (internal/inert) test with: pkg/charts would
// make an import cycle there.
package charttest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"fleetgen.dev/fleetgen/pkg/charts"
)

// Archive packs a chart as `helm package` does: files (paths inside
// the chart's folder, "Chart.yaml", "templates/x.yaml", "charts/sub/…")
// under one top folder named chart, in path order, with fixed times, so the
// same files always make the same archive.
func Archive(t testing.TB, chart string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	mtime := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		body := files[p]
		hd := &tar.Header{Name: chart + "/" + p, Typeflag: tar.TypeReg, Mode: 0o644, ModTime: mtime, Size: int64(len(body))}
		if err := tw.WriteHeader(hd); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Push pushes the chart archive tgz to ref (repository:version) as
// `helm push` does and returns its manifest digest. The chart may be over
// fleetgen's bounds (charts.DefaultLimits): a test of them pushes one.
func Push(t testing.TB, ref string, tgz []byte) string {
	t.Helper()
	lim := charts.DefaultLimits()
	lim.FileBytes, lim.DecompressedBytes, lim.ArchiveBytes = 1<<30, 1<<30, 1<<30
	c, err := charts.Load("", tgz, lim)
	if err != nil {
		t.Fatal(err)
	}
	a, err := charts.Republish(c, tgz)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := charts.PushOCI(a, tag); err != nil {
		t.Fatal(err)
	}
	return a.Digest
}

// Repo serves an HTTP chart repository on loopback, as `helm repo
// index` lays one out: index.yaml listing each archive (name-version.tgz,
// with its digest) and the archives. It returns the repository's URL; the
// server stops with the test.
func Repo(t testing.TB, archives ...[]byte) string {
	t.Helper()
	type entry struct {
		name, version string
		tgz           []byte
	}
	files := map[string][]byte{}
	var entries []entry
	for _, tgz := range archives {
		c, err := charts.Load("", tgz, charts.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, entry{c.Name, c.Version, tgz})
		files["/"+c.Name+"-"+c.Version+".tgz"] = tgz
	}
	var index strings.Builder
	index.WriteString("apiVersion: v1\nentries:\n")
	sort.Slice(entries, func(i, j int) bool { return entries[i].name+entries[i].version < entries[j].name+entries[j].version })
	last := ""
	for _, e := range entries {
		if e.name != last {
			fmt.Fprintf(&index, "  %s:\n", e.name)
			last = e.name
		}
		fmt.Fprintf(&index, "  - name: %s\n    version: %s\n    digest: %x\n    urls: [%s-%s.tgz]\n", e.name, e.version, sha256.Sum256(e.tgz), e.name, e.version)
	}
	files["/index.yaml"] = []byte(index.String())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
