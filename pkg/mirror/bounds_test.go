package mirror_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"fleetgen.dev/fleetgen/pkg/mirror"
)

// hostile is a registry (go-containerregistry's, in memory) in front of
// which override answers what it wants to; it counts requests and the body
// bytes override wrote.
type hostile struct {
	next     http.Handler
	override func(w http.ResponseWriter, r *http.Request) bool
	requests atomic.Int64
	written  atomic.Int64
}

func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	if h.override != nil && h.override(&countingWriter{w, &h.written}, r) {
		return
	}
	h.next.ServeHTTP(w, r)
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func newHostile(t *testing.T) (*hostile, string) {
	t.Helper()
	h := &hostile{next: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return h, strings.TrimPrefix(s.URL, "http://")
}

// stream writes prefix then filler forever (until the client goes).
func stream(w http.ResponseWriter, mt, prefix string) {
	w.Header().Set("Content-Type", mt)
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, prefix); err != nil {
		return
	}
	chunk := []byte(strings.Repeat("a", 32<<10))
	for {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// runBounded mirrors src's contoso/app:1.0 to a new registry and returns
// Run's error, which must be a *BoundError naming bound.
func runBounded(t *testing.T, src, bound string) error {
	t.Helper()
	dst := inProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, err := mirror.Run(ctx, []mirror.Pair{{Source: src + "/contoso/app:1.0", Target: dst + "/contoso/app:1.0"}}, mirror.WithBackoff(fastBackoff))
	var be *mirror.BoundError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), bound) {
		t.Fatalf("err = %v, want a *BoundError naming %s", err, bound)
	}
	t.Logf("refused: %v", err)
	return err
}

// TestBoundTagPages: a tag list whose Link header pages forever (issue 38:
// 50,011 requests and 4 GB before) ends after MaxTagPages pages, the run
// failing with the bound named.
func TestBoundTagPages(t *testing.T) {
	t.Parallel()
	h, src := newHostile(t)
	push(t, src+"/contoso/app:1.0", mustRandom(t))
	var page atomic.Int64
	h.override = func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/tags/list") {
			return false
		}
		n := page.Add(1)
		w.Header().Set("Link", fmt.Sprintf(`</v2/contoso/app/tags/list?n=1000&last=t%d>; rel="next"`, n))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"name":"contoso/app","tags":["t%d"]}`, n)
		return true
	}
	runBounded(t, src, "MaxTagPages")
	if n := page.Load(); n > mirror.MaxTagPages+5 {
		t.Errorf("%d tag list pages read, want at most %d", n, mirror.MaxTagPages)
	}
}

// TestBoundTagStream: a tag list streamed without end (issue 38: the mirror
// ran out of memory) is read to MaxListBytes and no further.
func TestBoundTagStream(t *testing.T) {
	t.Parallel()
	h, src := newHostile(t)
	push(t, src+"/contoso/app:1.0", mustRandom(t))
	h.override = func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/tags/list") {
			return false
		}
		stream(w, "application/json", `{"name":"contoso/app","tags":["`)
		return true
	}
	runBounded(t, src, "MaxListBytes")
	// What was read is the bound plus what the sockets buffered.
	if n := h.written.Load(); n > 3*mirror.MaxListBytes {
		t.Errorf("the registry wrote %d bytes of tag list before fleetgen stopped reading, want about %d", n, mirror.MaxListBytes)
	}
}

// TestBoundManifestStream: a manifest streamed without end stops at
// MaxManifestBytes.
func TestBoundManifestStream(t *testing.T) {
	t.Parallel()
	h, src := newHostile(t)
	push(t, src+"/contoso/app:1.0", mustRandom(t))
	h.override = func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/manifests/sha256:") {
			return false
		}
		stream(w, string(types.OCIManifestSchema1), `{"schemaVersion":2,"layers":[`)
		return true
	}
	runBounded(t, src, "MaxManifestBytes")
	if n := h.written.Load(); n > 3*mirror.MaxManifestBytes {
		t.Errorf("the registry wrote %d bytes of manifest before fleetgen stopped reading", n)
	}
}

// TestBoundIndexEntries: an index of more than MaxIndexEntries manifests is
// refused before any of them is fetched.
func TestBoundIndexEntries(t *testing.T) {
	t.Parallel()
	h, src := newHostile(t)
	im := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
	for i := range mirror.MaxIndexEntries + 1 {
		im.Manifests = append(im.Manifests, v1.Descriptor{MediaType: types.OCIManifestSchema1, Size: 100, Digest: v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%064x", i)}})
	}
	raw, err := json.Marshal(im)
	if err != nil {
		t.Fatal(err)
	}
	// The index alone: the manifests it names are nowhere.
	d, _, _ := v1.SHA256(bytes.NewReader(raw))
	h.override = func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/manifests/1.0") && !strings.HasSuffix(r.URL.Path, "/manifests/"+d.String()) {
			return false
		}
		w.Header().Set("Content-Type", string(types.OCIImageIndex))
		w.Header().Set("Docker-Content-Digest", d.String())
		w.Header().Set("Content-Length", fmt.Sprint(len(raw)))
		if r.Method == http.MethodGet {
			w.Write(raw)
		}
		return true
	}
	runBounded(t, src, "MaxIndexEntries")
}

// TestBoundIndexDepth: indexes nested deeper than MaxIndexDepth are refused.
func TestBoundIndexDepth(t *testing.T) {
	t.Parallel()
	_, src := newHostile(t)
	var idx v1.ImageIndex = mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: mustRandom(t)})
	for range mirror.MaxIndexDepth + 1 {
		idx = mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: idx})
	}
	push(t, src+"/contoso/app:1.0", idx)
	runBounded(t, src, "MaxIndexDepth")
}

// TestBoundReferrers: a referrers list of more than MaxIndexEntries
// artifacts is refused.
func TestBoundReferrers(t *testing.T) {
	t.Parallel()
	h, src := newHostile(t)
	push(t, src+"/contoso/app:1.0", mustRandom(t))
	h.override = func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.Contains(r.URL.Path, "/referrers/") {
			return false
		}
		im := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
		for i := range mirror.MaxIndexEntries + 1 {
			im.Manifests = append(im.Manifests, v1.Descriptor{MediaType: types.OCIManifestSchema1, Size: 10, Digest: v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%064x", i)}, ArtifactType: "application/spdx+json"})
		}
		w.Header().Set("Content-Type", string(types.OCIImageIndex))
		json.NewEncoder(w).Encode(im)
		return true
	}
	runBounded(t, src, "MaxIndexEntries")
}

func mustRandom(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
