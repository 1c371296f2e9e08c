package mirror_test

import (
	"context"
	"errors"
	"io"
	"log"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// fastBackoff keeps failing tests quick.
var fastBackoff = remote.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 3}

// inProcess starts go-containerregistry's in-process registry and returns its
// host:port.
func inProcess(t testing.TB) string {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// push writes img (a v1.Image or v1.ImageIndex) to ref and returns its digest.
func push(t testing.TB, ref string, img any) string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	var d v1.Hash
	switch x := img.(type) {
	case v1.Image:
		err = remote.Write(r, x)
		if err == nil {
			d, err = x.Digest()
		}
	case v1.ImageIndex:
		err = remote.WriteIndex(r, x)
		if err == nil {
			d, err = x.Digest()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// dataset pushes a small set to src: an image, a two-platform index and a
// second image sharing the first one's base layer, and returns refs -> digest.
func dataset(t testing.TB, src string) map[string]string {
	t.Helper()
	rng := rand.New(rand.NewSource(1))
	base, err := testenv.Layer(rng, 4096)
	if err != nil {
		t.Fatal(err)
	}
	a, err := testenv.Image(rng, []v1.Layer{base}, 2, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b, err := testenv.Image(rng, []v1.Layer{base}, 1, 1024)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := testenv.Index(rng, [][]v1.Layer{{base}}, 1, 1024)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		src + "/team/app:1.0":            push(t, src+"/team/app:1.0", a),
		src + "/team/worker:2.0":         push(t, src+"/team/worker:2.0", b),
		src + "/kubereboot/kured:1.12.0": push(t, src+"/kubereboot/kured:1.12.0", idx),
	}
}

func refsOf(m map[string]string) []string {
	var out []string
	for r := range m {
		out = append(out, r)
	}
	return out
}

// checkMirrored fails t unless every entry's target resolves to its digest and
// the entries match want.
func checkMirrored(t testing.TB, entries []lock.Image, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, e := range entries {
		got[e.Source] = e.Digest
		d, err := remote.Head(mustRef(t, e.Target))
		if err != nil {
			t.Errorf("target %s: %v", e.Target, err)
			continue
		}
		if d.Digest.String() != e.Digest {
			t.Errorf("target %s has %s, want %s", e.Target, d.Digest, e.Digest)
		}
		// Every manifest and blob must be readable at the target.
		desc, err := remote.Get(mustRef(t, e.Target))
		if err != nil {
			t.Fatal(err)
		}
		if desc.MediaType.IsIndex() {
			idx, err := desc.ImageIndex()
			if err != nil {
				t.Fatal(err)
			}
			im, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			if len(im.Manifests) != 2 {
				t.Errorf("index %s has %d manifests, want 2", e.Target, len(im.Manifests))
			}
			for _, m := range im.Manifests {
				img, err := idx.Image(m.Digest)
				if err != nil {
					t.Fatal(err)
				}
				checkImage(t, img)
			}
		} else {
			img, err := desc.Image()
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, img)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("lock entries (-want +got):\n%s", d)
	}
}

func checkImage(t testing.TB, img v1.Image) {
	t.Helper()
	if _, err := img.RawConfigFile(); err != nil {
		t.Errorf("config: %v", err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			t.Errorf("layer: %v", err)
			continue
		}
		_, err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Errorf("layer: %v", err)
		}
	}
}

func mustRef(t testing.TB, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunInProcess(t *testing.T) {
	src, dst := inProcess(t), inProcess(t)
	refs := dataset(t, src)
	pairs, err := mirror.Plan(schema.Registry{Host: dst, Prefix: "mirror"}, refsOf(refs))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		events []mirror.Event
	)
	ctx := context.Background()
	entries, stats, err := mirror.Run(ctx, pairs, mirror.WithJobs(4), mirror.WithKeychain(authn.NewMultiKeychain()),
		mirror.WithProgress(func(e mirror.Event) {
			if e.Done {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	checkMirrored(t, entries, refs)
	if stats.Copied != 3 || stats.Present != 0 {
		t.Errorf("stats = %+v, want 3 copied", stats)
	}
	if stats.BytesPushed == 0 {
		t.Errorf("stats = %+v, want bytes pushed", stats)
	}
	if len(events) != 3 {
		t.Errorf("%d done events, want 3", len(events))
	}

	// A second run copies nothing.
	entries2, stats2, err := mirror.Run(ctx, pairs, mirror.WithKeychain(authn.NewMultiKeychain()))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(entries, entries2); d != "" {
		t.Errorf("second run entries (-first +second):\n%s", d)
	}
	if stats2.Copied != 0 || stats2.Present != 3 || stats2.BytesPushed != 0 {
		t.Errorf("second run stats = %+v, want 3 present and nothing pushed", stats2)
	}
}

func TestRunMissingSource(t *testing.T) {
	src, dst := inProcess(t), inProcess(t)
	refs := dataset(t, src)
	all := append(refsOf(refs), src+"/nope/b:1", src+"/nope/a:1")
	pairs, err := mirror.Plan(schema.Registry{Host: dst}, all)
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := mirror.Run(context.Background(), pairs, mirror.WithBackoff(fastBackoff), mirror.WithKeychain(authn.NewMultiKeychain()))
	if err == nil {
		t.Fatal("Run succeeded with missing sources")
	}
	// Both failures, sorted.
	msg := err.Error()
	ia, ib := strings.Index(msg, "/nope/a:1 ->"), strings.Index(msg, "/nope/b:1 ->")
	if ia < 0 || ib < 0 || ia > ib {
		t.Errorf("error does not list both failures in order:\n%s", msg)
	}
	if len(entries) != 3 {
		t.Errorf("%d entries for the images that did copy, want 3", len(entries))
	}
}

func TestRunTargetCredentials(t *testing.T) {
	// The keychain is asked about the source only; the target gets the fixed
	// credentials (the in-process registry ignores them, so this checks wiring).
	src, dst := inProcess(t), inProcess(t)
	refs := dataset(t, src)
	pairs, err := mirror.Plan(schema.Registry{Host: dst}, refsOf(refs))
	if err != nil {
		t.Fatal(err)
	}
	kc := &recordingKeychain{}
	if _, _, err := mirror.Run(context.Background(), pairs, mirror.WithKeychain(kc), mirror.WithTargetCredentials("ci", "not-a-real-password")); err != nil {
		t.Fatal(err)
	}
	for _, r := range kc.asked {
		if r == dst {
			t.Errorf("keychain asked about the target %s despite target credentials", dst)
		}
	}
	if len(kc.asked) == 0 {
		t.Error("keychain never asked about the source")
	}
}

type recordingKeychain struct {
	mu    sync.Mutex
	asked []string
}

func (k *recordingKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.asked = append(k.asked, r.RegistryStr())
	return authn.Anonymous, nil
}

func TestRunCancelled(t *testing.T) {
	src, dst := inProcess(t), inProcess(t)
	refs := dataset(t, src)
	pairs, err := mirror.Plan(schema.Registry{Host: dst}, refsOf(refs))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = mirror.Run(ctx, pairs, mirror.WithKeychain(authn.NewMultiKeychain()))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context: %v, want context.Canceled", err)
	}
}

// corrupting serves the registry h but flips a byte in every blob it returns
// whose digest is bad, and counts those GETs.
type corrupting struct {
	h    http.Handler
	bad  string
	gets atomic.Int64
}

func (c *corrupting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+c.bad) {
		c.h.ServeHTTP(w, r)
		return
	}
	c.gets.Add(1)
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	if len(body) > 0 {
		body[len(body)/2] ^= 0xff
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(body)
}

func TestRunDigestMismatchNotRetried(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	img, err := testenv.Image(rng, nil, 1, 8192)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	bad, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	h := &corrupting{h: registry.New(registry.Logger(log.New(io.Discard, "", 0))), bad: bad.String()}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	src := strings.TrimPrefix(s.URL, "http://")
	push(t, src+"/team/app:1", img)
	h.gets.Store(0)

	pairs, err := mirror.Plan(schema.Registry{Host: inProcess(t)}, []string{src + "/team/app:1"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = mirror.Run(context.Background(), pairs, mirror.WithKeychain(authn.NewMultiKeychain()), mirror.WithBackoff(fastBackoff))
	if err == nil {
		t.Fatal("Run copied a corrupted blob")
	}
	if !strings.Contains(err.Error(), "blob "+bad.String()+" (from "+src+")") {
		t.Errorf("error does not name the blob %s and the registry that served it: %v", bad, err)
	}
	if n := h.gets.Load(); n != 1 {
		t.Errorf("the corrupted blob was read %d times, want 1 (a digest mismatch is not retried)", n)
	}
}
