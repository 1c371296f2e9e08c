package charts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

// serveRepo serves an HTTP chart repository: index.yaml (index, with
// %[1]s for the server's URL and %[2]s for the web archive's digest) and
// the web chart's archive at charts/web-1.2.3.tgz.
func serveRepo(t testing.TB, index string) (string, []byte) {
	t.Helper()
	tgz := pack(t, "web", webFiles(t))
	mux := http.NewServeMux()
	var url string
	mux.HandleFunc("/repo/index.yaml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, index, url, strings.TrimPrefix(digestOf(tgz), "sha256:"))
	})
	mux.HandleFunc("/repo/charts/web-1.2.3.tgz", func(w http.ResponseWriter, r *http.Request) { w.Write(tgz) })
	mux.HandleFunc("/repo/charts/bad.tgz", func(w http.ResponseWriter, r *http.Request) { w.Write(append([]byte{1}, tgz...)) })
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	url = s.URL
	return s.URL + "/repo", tgz
}

const index = `apiVersion: v1
entries:
  web:
    - name: web
      version: 1.2.4
      urls: [charts/none.tgz]
    - name: web
      version: 1.2.3
      digest: %[2]s
      urls: [charts/web-1.2.3.tgz]
    - name: web
      version: v2.0.0
      urls: ["%[1]s/repo/charts/web-1.2.3.tgz"]
    - name: web
      version: 0.9.0
      digest: %[2]s
      urls: [charts/bad.tgz]
`

func TestHTTPRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, tgz := serveRepo(t, index)
	ix, err := FetchIndex(ctx, http.DefaultClient, repo+"/")
	if err != nil {
		t.Fatal(err)
	}
	cv, err := ix.Find("web", "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	b, err := FetchArchive(ctx, http.DefaultClient, repo, cv, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if digestOf(b) != digestOf(tgz) {
		t.Errorf("fetched another archive")
	}
	// v2.0.0 is found as 2.0.0, at an absolute URL.
	if cv, err := ix.Find("web", "2.0.0"); err != nil || cv.Version != "v2.0.0" {
		t.Errorf("Find 2.0.0: %v, %v", cv, err)
	} else if _, err := FetchArchive(ctx, http.DefaultClient, repo, cv, DefaultLimits()); err != nil {
		t.Errorf("absolute URL: %v", err)
	}
	cv, _ = ix.Find("web", "0.9.0")
	if _, err := FetchArchive(ctx, http.DefaultClient, repo, cv, DefaultLimits()); !errors.Is(err, ErrDigest) {
		t.Errorf("archive that is not the index's digest: %v: want ErrDigest", err)
	}
	small := DefaultLimits()
	small.ArchiveBytes = 10
	cv, _ = ix.Find("web", "1.2.3")
	if _, err := FetchArchive(ctx, http.DefaultClient, repo, cv, small); !errors.Is(err, ErrLimit) {
		t.Errorf("archive over the bound: %v: want ErrLimit", err)
	}
	cv, _ = ix.Find("web", "1.2.4")
	if _, err := FetchArchive(ctx, http.DefaultClient, repo, cv, DefaultLimits()); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing archive: %v", err)
	}
	for _, v := range []string{"", "*", "^1.2.0", "~1.2", ">=1.0.0", "1.2", "1.2.x", "1.2.3 || 1.2.4", "latest"} {
		if _, err := ix.Find("web", v); !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "not an exact version") {
			t.Errorf("Find %q: %v: want a range refused", v, err)
		}
	}
	if _, err := ix.Find("web", "3.0.0"); !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), `is not in the repository (it has 0.9.0, 1.2.3, 1.2.4, v2.0.0…)`) {
		t.Errorf("missing version: %v", err)
	}
	if _, err := ix.Find("api", "1.0.0"); !errors.Is(err, ErrVersion) {
		t.Errorf("missing chart: %v", err)
	}
}

func TestHTTPRepositoryRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	notIndex, _ := serveRepo(t, "<html>login</html>%.0[1]s%.0[2]s")
	if _, err := FetchIndex(ctx, http.DefaultClient, notIndex); err == nil {
		t.Errorf("an HTML page read as an index")
	}
	if _, err := FetchIndex(ctx, http.DefaultClient, "file:///etc"); err == nil || !strings.Contains(err.Error(), "want http or https") {
		t.Errorf("file URL: %v", err)
	}
	// A password in the repository URL never shows in an error.
	if _, err := FetchIndex(ctx, http.DefaultClient, "http://user:s3cret@127.0.0.1:1/repo"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("unreachable repository: %v: want an error without the password", err)
	}
	big, _ := serveRepo(t, "apiVersion: v1\n# %[1]s %[2]s\n"+strings.Repeat("#", maxIndexBytes))
	if _, err := FetchIndex(ctx, http.DefaultClient, big); !errors.Is(err, ErrLimit) {
		t.Errorf("index over the bound: %v: want ErrLimit", err)
	}
}

func TestResolveURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ base, ref, want string }{
		{"https://charts.example/repo", "charts/web-1.tgz", "https://charts.example/repo/charts/web-1.tgz"},
		{"https://charts.example/repo/", "web-1.tgz", "https://charts.example/repo/web-1.tgz"},
		{"https://charts.example/repo?token=x", "web-1.tgz", "https://charts.example/repo/web-1.tgz?token=x"},
		{"https://charts.example/repo", "/abs/web-1.tgz", "https://charts.example/abs/web-1.tgz"},
		{"https://charts.example/repo", "https://cdn.example/web-1.tgz", "https://cdn.example/web-1.tgz"},
	} {
		if got, err := resolveURL(tc.base, tc.ref); err != nil || got != tc.want {
			t.Errorf("resolveURL(%q, %q) = %q, %v: want %q", tc.base, tc.ref, got, err, tc.want)
		}
	}
}

// TestHTTPChartToMirror is mirror's path for a chart of an HTTP repository,
// then render's: index, exact version, archive checked against the index,
// republished in the mirror as helm push would, fetched back by digest into
// an empty cache on another "machine", rendered, pinned.
func TestHTTPChartToMirror(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo, _ := serveRepo(t, index)
	host := startRegistry(t, nil)

	ix, err := FetchIndex(ctx, http.DefaultClient, repo)
	if err != nil {
		t.Fatal(err)
	}
	cv, err := ix.Find("web", "1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := FetchArchive(ctx, http.DefaultClient, repo, cv, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(repo+" web 1.2.3", tgz, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	a, err := Republish(c, tgz)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(host + "/charts/web:" + c.Version)
	if err := PushOCI(a, tag); err != nil {
		t.Fatal(err)
	}
	locked := tag.Context().Digest(a.Digest) // what the lock records

	fresh := NewCache(t.TempDir())
	got, err := fresh.Fetch(locked, DefaultLimits(), true)
	if err != nil {
		t.Fatal(err)
	}
	mirrored, err := Load(locked.String(), got.Archive, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if mirrored.Digest != c.Digest {
		t.Fatalf("the mirrored archive is not the repository's")
	}
	res, err := Render(ctx, mirrored, Input{Release: release(t, webRelease)}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, u := range res.Images() {
		refs = append(refs, u.Ref)
	}
	if _, err := PinImages(refs, mirror, lockPins); err != nil {
		t.Fatal(err)
	}
}
