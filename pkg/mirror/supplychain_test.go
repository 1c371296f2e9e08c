package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// withReferrers starts an in-process registry with the OCI 1.1 referrers API.
func withReferrers(t testing.TB) string {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// mirrorChain pushes testenv.SupplyChain to src, mirrors it to dst and checks
// that every artifact arrived by digest, is listed where a verifier looks
// (referrers API or tag index, the .sig tag) and is in the lock entry.
func mirrorChain(t *testing.T, src, dst string) {
	t.Helper()
	chain, err := testenv.SupplyChain(src+"/team/app:1.0", rand.New(rand.NewSource(7)))
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := mirror.Plan(schema.Registry{Host: dst}, []string{src + "/team/app:1.0"})
	if err != nil {
		t.Fatal(err)
	}
	entries, stats, err := mirror.Run(context.Background(), pairs, anon, mirror.WithBackoff(fastBackoff))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Digest != chain.Index.String() {
		t.Fatalf("entries %+v, want the index %s", entries, chain.Index)
	}
	var want []lock.Referrer
	for d, at := range chain.Artifacts() {
		r := lock.Referrer{Digest: d.String(), ArtifactType: at}
		if d == chain.Signature {
			r.Tag = chain.SignatureTag
		}
		want = append(want, r)
	}
	lock.SortReferrers(want)
	if got := entries[0].Referrers; !equalReferrers(got, want) {
		t.Errorf("lock referrers:\n got %+v\nwant %+v", got, want)
	}
	if stats.Referrers != 4 {
		t.Errorf("stats.Referrers = %d, want 4", stats.Referrers)
	}
	repo, err := name.NewRepository(dst + "/team/app")
	if err != nil {
		t.Fatal(err)
	}
	for d := range chain.Artifacts() {
		if desc, err := remote.Head(repo.Digest(d.String())); err != nil || desc.Digest != d {
			t.Errorf("artifact %s at the target: %v", d, err)
		}
	}
	if desc, err := remote.Head(repo.Tag(chain.SignatureTag)); err != nil || desc.Digest != chain.Signature {
		t.Errorf("tag %s at the target: %v", chain.SignatureTag, err)
	}
	for subject, ref := range map[v1.Hash]v1.Hash{chain.Index: chain.SBOM, chain.AMD64: chain.Attestation, chain.SBOM: chain.SBOMSignature} {
		idx, err := remote.Referrers(repo.Digest(subject.String()))
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Manifests) != 1 || im.Manifests[0].Digest != ref {
			t.Errorf("referrers of %s at the target: %+v, want %s", subject, im.Manifests, ref)
		}
	}

	// A second run finds everything present and writes the same entries.
	again, stats, err := mirror.Run(context.Background(), pairs, anon, mirror.WithBackoff(fastBackoff))
	if err != nil {
		t.Fatal(err)
	}
	if stats.Present != 1 || stats.BytesPushed != 0 || !equalReferrers(again[0].Referrers, want) {
		t.Errorf("second run: %+v, entries %+v", stats, again)
	}
}

func equalReferrers(a, b []lock.Referrer) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSupplyChainReferrersAPI: between two registries with the referrers API.
func TestSupplyChainReferrersAPI(t *testing.T) {
	t.Parallel()
	mirrorChain(t, withReferrers(t), withReferrers(t))
}

// TestSupplyChainTagIndex: between two registries without it (the
// sha256-<hex> tag index path), go-containerregistry's in-process ones.
func TestSupplyChainTagIndex(t *testing.T) {
	t.Parallel()
	mirrorChain(t, inProcess(t), inProcess(t))
}

// TestE2ESupplyChain: between two Debian docker-registry processes
// (distribution 2.8: no referrers API, the tag index path).
func TestE2ESupplyChain(t *testing.T) {
	t.Parallel()
	mirrorChain(t, testenv.Registry(t), testenv.Registry(t))
}

// TestSupplyChainAcrossKinds: from a registry with the API to one without:
// the target's tag index is written.
func TestSupplyChainAcrossKinds(t *testing.T) {
	t.Parallel()
	mirrorChain(t, withReferrers(t), inProcess(t))
}

// refusing is a registry that refuses artifact manifests (one with a subject
// or under a cosign tag), as some older registries do.
type refusing struct{ next http.Handler }

func (h refusing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"subject"`)) || strings.HasSuffix(r.URL.Path, ".sig") || bytes.Contains(body, []byte("cosign")) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"errors":[{"code":"MANIFEST_INVALID","message":"artifact manifests are not supported"}]}`)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	h.next.ServeHTTP(w, r)
}

// TestSupplyChainRefusedByTarget: a target that refuses artifact manifests
// fails the image, naming the registry and the way out; with referrers off
// the image is mirrored alone and the lock names no referrers.
func TestSupplyChainRefusedByTarget(t *testing.T) {
	t.Parallel()
	src := inProcess(t)
	s := httptest.NewServer(refusing{registry.New(registry.Logger(log.New(io.Discard, "", 0)))})
	t.Cleanup(s.Close)
	dst := strings.TrimPrefix(s.URL, "http://")
	if _, err := testenv.SupplyChain(src+"/team/app:1.0", rand.New(rand.NewSource(7))); err != nil {
		t.Fatal(err)
	}
	pairs, err := mirror.Plan(schema.Registry{Host: dst}, []string{src + "/team/app:1.0"})
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := mirror.Run(context.Background(), pairs, anon, mirror.WithBackoff(fastBackoff))
	if err == nil || !errors.Is(err, mirror.ErrArtifactRefused) {
		t.Fatalf("Run against a refusing target: entries %+v, err %v", entries, err)
	}
	for _, w := range []string{"registry " + dst + " refused an artifact manifest", "--no-referrers"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	entries, _, err = mirror.Run(context.Background(), pairs, anon, mirror.WithBackoff(fastBackoff), mirror.WithReferrers(false))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Referrers != nil {
		t.Errorf("with referrers off: %+v", entries)
	}
}

// TestSupplyChainBounded: artifacts that refer to artifacts deeper than
// MaxReferrerDepth fail the image, naming the bound, instead of being walked
// without end.
func TestSupplyChainBounded(t *testing.T) {
	t.Parallel()
	src := withReferrers(t)
	img, err := testenv.Image(rand.New(rand.NewSource(9)), nil, 1, 1024)
	if err != nil {
		t.Fatal(err)
	}
	push(t, src+"/team/app:1.0", img)
	repo, err := name.NewRepository(src + "/team/app")
	if err != nil {
		t.Fatal(err)
	}
	subject := img
	for i := 0; i <= mirror.MaxReferrerDepth; i++ {
		d, err := subject.Digest()
		if err != nil {
			t.Fatal(err)
		}
		sz, err := subject.Size()
		if err != nil {
			t.Fatal(err)
		}
		mt, err := subject.MediaType()
		if err != nil {
			t.Fatal(err)
		}
		a := testenv.ArtifactImage("text/plain", testenv.SignatureType, "level "+string(rune('0'+i)), &v1.Descriptor{MediaType: mt, Digest: d, Size: sz})
		ad, err := a.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(repo.Digest(ad.String()), a); err != nil {
			t.Fatal(err)
		}
		subject = a
	}
	pairs, err := mirror.Plan(schema.Registry{Host: withReferrers(t)}, []string{src + "/team/app:1.0"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = mirror.Run(context.Background(), pairs, anon, mirror.WithBackoff(fastBackoff))
	if err == nil || !strings.Contains(err.Error(), "levels below the image: want at most 4 (or --no-referrers)") {
		t.Fatalf("Run of a chain %d deep: %v", mirror.MaxReferrerDepth+1, err)
	}
}
