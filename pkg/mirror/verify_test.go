package mirror_test

import (
	"context"
	"errors"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
	"fleetgen.dev/fleetgen/test/testenv"
)

// hostRecorder passes requests on and records the hosts they went to.
type hostRecorder struct {
	mu    sync.Mutex
	hosts map[string]int
}

func (h *hostRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	if h.hosts == nil {
		h.hosts = map[string]int{}
	}
	h.hosts[req.URL.Host]++
	h.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// TestRunVerify: with spec.verify, an image signed by the policy's key (a
// bundle referrer), one signed keyless by the policy's identity (legacy
// .sig) and one no policy covers are mirrored, each signature with its
// image and recorded in the lock entry; an unsigned image and one signed by
// another key are refused before anything of theirs is copied, the error
// naming image, policy and reason. Every request goes to the two registries:
// no Rekor, Fulcio or TUF request.
func TestRunVerify(t *testing.T) {
	t.Parallel()
	src, dst := inProcess(t), inProcess(t)
	key, other := testenv.NewKey(t), testenv.NewKey(t)
	ss := testenv.NewSigstore(t)
	rng := rand.New(rand.NewSource(3))
	pushImg := func(repo string) (name.Repository, v1.Hash, v1.Descriptor) {
		img, err := testenv.Image(rng, nil, 1, 512)
		if err != nil {
			t.Fatal(err)
		}
		ref := src + "/" + repo + ":1.0"
		d, err := v1.NewHash(push(t, ref, img))
		if err != nil {
			t.Fatal(err)
		}
		sz, _ := img.Size()
		mt, _ := img.MediaType()
		r, _ := name.NewRepository(src + "/" + repo)
		return r, d, v1.Descriptor{MediaType: mt, Digest: d, Size: sz}
	}
	repo, d, desc := pushImg("contoso/keyed")
	keyedSig := testenv.PushBundle(t, repo, desc, key.Bundle(t, testenv.CosignStatement(d)))
	repo, d, _ = pushImg("contoso/keyless")
	payload := testenv.SimpleSigning(repo.String(), d)
	keylessSig := testenv.PushLegacy(t, repo, d, []testenv.LegacyLayer{{Payload: payload, Annotations: ss.Legacy(t, identity, issuer, payload, zeroTime)}})
	pushImg("contoso/unsigned")
	repo, d, desc = pushImg("contoso/stranger")
	testenv.PushBundle(t, repo, desc, other.Bundle(t, testenv.CosignStatement(d)))
	pushImg("thirdparty/tool")

	f := &schema.Fleet{Spec: schema.Spec{Verify: []schema.VerifyPolicy{
		{Images: []string{src + "/contoso/keyless"}, Cosign: &schema.CosignVerify{
			Identities:  []schema.KeylessIdentity{{Issuer: issuer, Subject: identity}},
			TrustedRoot: &schema.FileRef{File: "root.json", Data: ss.TrustedRoot}}},
		{Images: []string{src + "/contoso/**"}, Cosign: &schema.CosignVerify{Keys: []schema.FileRef{{File: "cosign.pub", Data: key.PublicPEM}}}},
	}}}
	ps, err := verify.Compile(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, r := range []string{"contoso/keyed", "contoso/keyless", "contoso/unsigned", "contoso/stranger", "thirdparty/tool"} {
		refs = append(refs, src+"/"+r+":1.0")
	}
	pairs, err := mirror.Plan(schema.Registry{Host: dst}, refs)
	if err != nil {
		t.Fatal(err)
	}
	rec := &hostRecorder{}
	entries, _, err := mirror.Run(context.Background(), pairs, anon, mirror.WithBackoff(fastBackoff), mirror.WithTransport(rec), mirror.WithVerify(ps))
	var ve *verify.Error
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want refusals", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"mirror " + src + "/contoso/stranger:1.0 -> " + dst + "/contoso/stranger:1.0: verify signature of sha256:",
		"policy spec.verify[1]: wrong key",
		"mirror " + src + "/contoso/unsigned:1.0 -> " + dst + "/contoso/unsigned:1.0: verify signature of sha256:",
		"policy spec.verify[1]: no signature",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n != 2 {
		t.Errorf("%d failures, want 2:\n%s", n, msg)
	}
	got := map[string]string{}
	for _, e := range entries {
		if e.Verified != nil {
			got[e.Source] = e.Verified.Policy + " " + e.Verified.Signature
			if e.Verified.PolicyDigest == "" {
				t.Errorf("%s: no policy digest", e.Source)
			}
			found := false
			for _, r := range e.Referrers {
				found = found || r.Digest == e.Verified.Signature
			}
			if !found {
				t.Errorf("%s: the verifying signature is not among the copied referrers %+v", e.Source, e.Referrers)
			}
		} else {
			got[e.Source] = "unverified"
		}
	}
	want := map[string]string{
		src + "/contoso/keyed:1.0":   "spec.verify[1] " + keyedSig.String(),
		src + "/contoso/keyless:1.0": "spec.verify[0] " + keylessSig.String(),
		src + "/thirdparty/tool:1.0": "unverified",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	for _, r := range []string{"contoso/unsigned", "contoso/stranger"} {
		if _, err := remote.Head(mustRef(t, dst+"/"+r+":1.0")); err == nil {
			t.Errorf("%s was copied although it failed verification", r)
		}
	}
	for h := range rec.hosts {
		if h != src && h != dst {
			t.Errorf("a request to %s: verification must be offline", h)
		}
	}
}

const (
	issuer   = "https://token.actions.githubusercontent.com"
	identity = "release@contoso.example"
)

var zeroTime time.Time

// TestVerifyAtMirror: Verify refuses a covered
// image whose lock names no verification, or a signature at the mirror that
// another key made; it passes the one the policy's key made.
func TestVerifyAtMirror(t *testing.T) {
	ctx := context.Background()
	key, other := testenv.NewKey(t), testenv.NewKey(t)
	host := inProcess(t)
	f := &schema.Fleet{Spec: schema.Spec{Verify: []schema.VerifyPolicy{{Cosign: &schema.CosignVerify{Keys: []schema.FileRef{{File: "k.pub", Data: key.PublicPEM}}}}}}}
	ps, err := verify.Compile(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	var images []lock.Image
	for i, signer := range []*testenv.Key{key, other, nil} {
		img, _ := random.Image(128, 1)
		repo := []string{"good", "stranger", "unlocked"}[i]
		ref, _ := name.NewTag(host + "/" + repo + ":1")
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		sz, _ := img.Size()
		mt, _ := img.MediaType()
		e := lock.Image{Source: "ghcr.io/contoso/" + repo + ":1", Target: ref.String(), Digest: d.String()}
		if signer != nil {
			sig := testenv.PushBundle(t, ref.Context(), v1.Descriptor{MediaType: mt, Digest: d, Size: sz}, signer.Bundle(t, testenv.CosignStatement(d)))
			e.Verified = &lock.Verified{Policy: ps[0].Name, PolicyDigest: ps[0].Digest, Signature: sig.String()}
		}
		images = append(images, e)
	}
	err = mirror.Verify(ctx, schema.Registry{Host: host}, images, ps)
	var ue *mirror.UnsignedError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want *UnsignedError", err)
	}
	if len(ue.Images) != 2 || !strings.Contains(ue.Images[0], "stranger") || !strings.Contains(ue.Images[0], "wrong key") ||
		!strings.Contains(ue.Images[1], "unlocked") || !strings.Contains(ue.Images[1], "locked without a signature") {
		t.Errorf("refused %q", ue.Images)
	}
	if err := mirror.Verify(ctx, schema.Registry{Host: host}, images[:1], ps); err != nil {
		t.Errorf("the good signature: %v", err)
	}
}

// sourceLog passes requests on and records those to one host: method and
// path.
type sourceLog struct {
	host string
	mu   sync.Mutex
	asks []string
}

func (s *sourceLog) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == s.host {
		s.mu.Lock()
		s.asks = append(s.asks, req.Method+" "+req.URL.Path)
		s.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestRunVerifyListsOnce: with spec.verify, what refers to an image is
// listed once, for verification and the supply chain together: a warm run
// (everything present) asks the source nothing twice, and still verifies
// both a bundle referrer and a legacy .sig signature and records them; a
// signature deleted from the mirror is copied again.
func TestRunVerifyListsOnce(t *testing.T) {
	t.Parallel()
	src, dst := inProcess(t), inProcess(t)
	key := testenv.NewKey(t)
	rng := rand.New(rand.NewSource(5))
	sigs := map[string]v1.Hash{}
	var refs []string
	for _, r := range []string{"contoso/bundled", "contoso/legacy"} {
		img, err := testenv.Image(rng, nil, 1, 512)
		if err != nil {
			t.Fatal(err)
		}
		ref := src + "/" + r + ":1.0"
		d, err := v1.NewHash(push(t, ref, img))
		if err != nil {
			t.Fatal(err)
		}
		repo, _ := name.NewRepository(src + "/" + r)
		if r == "contoso/bundled" {
			sz, _ := img.Size()
			mt, _ := img.MediaType()
			sigs[ref] = testenv.PushBundle(t, repo, v1.Descriptor{MediaType: mt, Digest: d, Size: sz}, key.Bundle(t, testenv.CosignStatement(d)))
		} else {
			payload := testenv.SimpleSigning(repo.String(), d)
			sigs[ref] = testenv.PushLegacy(t, repo, d, []testenv.LegacyLayer{{Payload: payload, Annotations: key.Legacy(t, payload)}})
		}
		refs = append(refs, ref)
	}
	ps, err := verify.Compile(&schema.Fleet{Spec: schema.Spec{Verify: []schema.VerifyPolicy{{Cosign: &schema.CosignVerify{Keys: []schema.FileRef{{File: "cosign.pub", Data: key.PublicPEM}}}}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := mirror.Plan(schema.Registry{Host: dst}, refs)
	if err != nil {
		t.Fatal(err)
	}
	run := func() ([]lock.Image, mirror.Stats, []string) {
		t.Helper()
		log := &sourceLog{host: src}
		entries, stats, err := mirror.Run(context.Background(), pairs, anon, mirror.WithBackoff(fastBackoff), mirror.WithTransport(log), mirror.WithVerify(ps))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Verified == nil || e.Verified.Signature != sigs[e.Source].String() {
				t.Errorf("%s: verified %+v, want signature %s", e.Source, e.Verified, sigs[e.Source])
			}
		}
		return entries, stats, log.asks
	}
	run()
	_, stats, asks := run()
	if stats.Present != len(pairs) {
		t.Errorf("warm run: %d of %d present", stats.Present, len(pairs))
	}
	seen := map[string]bool{}
	for _, a := range asks {
		if seen[a] && a != "GET /v2/" {
			t.Errorf("warm run asked the source twice: %s", a)
		}
		seen[a] = true
	}

	// The legacy signature deleted from the mirror: the next run notices
	// and copies it again.
	legacy := mustRef(t, dst+"/contoso/legacy@"+sigs[src+"/contoso/legacy:1.0"].String())
	if err := remote.Delete(legacy); err != nil {
		t.Fatal(err)
	}
	if _, stats, _ = run(); stats.Present != len(pairs) {
		t.Errorf("after the deletion: %d of %d present, want all (only a signature was gone)", stats.Present, len(pairs))
	}
	if _, err := remote.Head(legacy); err != nil {
		t.Errorf("the deleted signature was not copied again: %v", err)
	}
}
