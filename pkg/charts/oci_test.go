package charts

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// startRegistry serves go-containerregistry's in-process registry behind
// wrap (nil: as it is) and returns its host.
func startRegistry(t testing.TB, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

func pushWeb(t testing.TB, host string) (*Chart, *Artifact, name.Digest) {
	t.Helper()
	tgz := pack(t, "web", webFiles(t))
	c, err := Load("", tgz, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	a, err := Republish(c, tgz)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(host + "/mirror/charts/web:1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if err := PushOCI(a, tag); err != nil {
		t.Fatal(err)
	}
	return c, a, tag.Context().Digest(a.Digest)
}

// TestRepublishPull: a chart republished as `helm push` lays it out pulls
// back by digest, byte for byte, and loads as the same chart.
func TestRepublishPull(t *testing.T) {
	t.Parallel()
	host := startRegistry(t, nil)
	c, a, ref := pushWeb(t, host)
	var m map[string]any
	if err := json.Unmarshal(a.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["mediaType"]; ok {
		t.Errorf("manifest has a mediaType field; helm push writes none")
	}
	want := map[string]any{
		"schemaVersion": float64(2),
		"config":        map[string]any{"mediaType": ConfigMediaType, "digest": digestOf(a.Config), "size": float64(len(a.Config))},
		"layers":        []any{map[string]any{"mediaType": ContentMediaType, "digest": c.Digest, "size": float64(len(a.Archive))}},
		"annotations": map[string]any{
			"org.opencontainers.image.title":       "web",
			"org.opencontainers.image.version":     "1.2.3",
			"org.opencontainers.image.description": "a test chart",
			"org.opencontainers.image.created":     "2025-01-02T03:04:05Z",
		},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}
	again, err := Republish(c, a.Archive)
	if err != nil || again.Digest != a.Digest {
		t.Errorf("republished twice: %v, %s and %s: want one digest", err, a.Digest, again.Digest)
	}
	got, err := PullOCI(ref, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("pulled (-pushed +pulled):\n%s", diff)
	}
	var cfg map[string]any
	if err := json.Unmarshal(got.Config, &cfg); err != nil || cfg["name"] != "web" || cfg["apiVersion"] != "v2" {
		t.Errorf("config %s: want Chart.yaml as JSON", got.Config)
	}
	if _, err := Load(ref.String(), got.Archive, DefaultLimits()); err != nil {
		t.Error(err)
	}
	if _, err := Republish(c, append([]byte{0}, a.Archive...)); !errors.Is(err, ErrDigest) {
		t.Errorf("republish other bytes: %v: want ErrDigest", err)
	}
}

func TestPullRefuses(t *testing.T) {
	t.Parallel()
	var tamper atomic.Value // the digest whose blob is served altered
	tamper.Store("")
	host := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d := tamper.Load().(string)
			if d == "" || !strings.HasSuffix(r.URL.Path, "/blobs/"+d) || r.Method != http.MethodGet {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			b := rec.Body.Bytes()
			b[len(b)/2] ^= 1
			w.WriteHeader(rec.Code)
			w.Write(b)
		})
	})
	c, _, ref := pushWeb(t, host)

	small := DefaultLimits()
	small.ArchiveBytes = 100
	if _, err := PullOCI(ref, small); !errors.Is(err, ErrLimit) {
		t.Errorf("archive over the bound: %v", err)
	}
	tamper.Store(c.Digest)
	if _, err := PullOCI(ref, DefaultLimits()); err == nil {
		t.Errorf("altered archive pulled")
	}
	tamper.Store("")

	img, err := random.Image(100, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(host + "/mirror/not-a-chart:1")
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	if _, err := PullOCI(tag.Context().Digest(d.String()), DefaultLimits()); err == nil || !strings.Contains(err.Error(), "want an OCI image manifest") {
		t.Errorf("image pulled as a chart: %v", err)
	}
}

// TestCache: Fetch pulls once, then works with no registry; a cache entry
// that does not match its digest is refused; a digest is never a path.
func TestCache(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	host := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			h.ServeHTTP(w, r)
		})
	})
	_, a, ref := pushWeb(t, host)
	dir := t.TempDir()
	cache := NewCache(dir)
	if _, err := cache.Fetch(ref, DefaultLimits(), false); !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "run `fleetgen mirror`") {
		t.Fatalf("offline, empty cache: %v: want ErrNotCached", err)
	}
	got, err := cache.Fetch(ref, DefaultLimits(), true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Archive, a.Archive) {
		t.Errorf("fetched archive differs")
	}
	before := requests.Load()
	got, err = cache.Fetch(ref, DefaultLimits(), true)
	if err != nil || !bytes.Equal(got.Archive, a.Archive) {
		t.Fatalf("cached: %v", err)
	}
	if n := requests.Load() - before; n != 0 {
		t.Errorf("a cached chart made %d requests", n)
	}
	// Alter the archive in the cache: refused, not refetched silently.
	p := filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(ref.DigestStr(), "sha256:"))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("manifest not at its content address: %v", err)
	}
	ap := filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digestOf(a.Archive), "sha256:"))
	if err := os.WriteFile(ap, append([]byte("x"), a.Archive[1:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Fetch(ref, DefaultLimits(), true); !errors.Is(err, ErrDigest) {
		t.Errorf("altered cache entry: %v: want ErrDigest", err)
	}
	for _, d := range []string{"sha256:../../../../etc/passwd", "sha512:" + strings.Repeat("a", 128), "../x"} {
		if _, err := cache.Get(d, 10); err == nil || errors.Is(err, ErrNotCached) {
			t.Errorf("Get(%q): %v: want a refusal", d, err)
		}
	}
}
