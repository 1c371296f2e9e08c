package verify_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log"
	"math/rand"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
	"fleetgen.dev/fleetgen/test/testenv"
)

const (
	issuer   = "https://token.actions.githubusercontent.com"
	identity = "release@contoso.example"
)

// image pushes a random image to a new in-process registry and returns its
// repository, digest and descriptor.
func image(t *testing.T) (name.Repository, v1.Hash, v1.Descriptor) {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	repo, err := name.NewRepository(strings.TrimPrefix(s.URL, "http://") + "/contoso/app")
	if err != nil {
		t.Fatal(err)
	}
	img, err := testenv.Image(rand.New(rand.NewSource(1)), nil, 1, 256)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag("1.0"), img, remote.WithContext(context.Background())); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	sz, _ := img.Size()
	mt, _ := img.MediaType()
	return repo, d, v1.Descriptor{MediaType: mt, Digest: d, Size: sz}
}

// policy compiles one spec.verify entry for keys and identities.
func policy(t *testing.T, keys []*testenv.Key, ids []schema.KeylessIdentity, root []byte) *verify.Policy {
	t.Helper()
	c := &schema.CosignVerify{Identities: ids}
	for _, k := range keys {
		c.Keys = append(c.Keys, schema.FileRef{File: "cosign.pub", Data: k.PublicPEM})
	}
	if root != nil {
		c.TrustedRoot = &schema.FileRef{File: "trusted_root.json", Data: root}
	}
	f := &schema.Fleet{Spec: schema.Spec{Verify: []schema.VerifyPolicy{{Cosign: c}}}}
	ps, err := verify.Compile(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}

// TestImage signs an image in each form cosign uses (a bundle referrer, the
// legacy .sig tag), keyed and keyless, and checks what verifies and what is
// refused, with which reason; sigstore-go's verifier must give each case
// the same verdict (sigstore_test.go).
func TestImage(t *testing.T) {
	t.Parallel()
	key, other := testenv.NewKey(t), testenv.NewKey(t)
	ss := testenv.NewSigstore(t)
	anyone := []schema.KeylessIdentity{{Issuer: issuer, Subject: identity}}
	byRE := []schema.KeylessIdentity{{Issuer: issuer, SubjectRegExp: `^release@contoso\.example$`}}
	someoneElse := []schema.KeylessIdentity{{Issuer: issuer, Subject: "ops@contoso.example"}}
	anotherDigest := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}

	type sign func(t *testing.T, repo name.Repository, d v1.Hash, subject v1.Descriptor)
	bundleBy := func(k *testenv.Key, signed func(v1.Hash) v1.Hash) sign {
		return func(t *testing.T, repo name.Repository, d v1.Hash, subject v1.Descriptor) {
			testenv.PushBundle(t, repo, subject, k.Bundle(t, testenv.CosignStatement(signed(d))))
		}
	}
	legacyBy := func(k *testenv.Key, signed func(v1.Hash) v1.Hash, tamper bool) sign {
		return func(t *testing.T, repo name.Repository, d v1.Hash, _ v1.Descriptor) {
			payload := testenv.SimpleSigning(repo.String(), signed(d))
			ann := k.Legacy(t, payload)
			if tamper {
				payload = []byte(strings.Replace(string(payload), "contoso/app", "contoso/evil", 1))
			}
			testenv.PushLegacy(t, repo, d, []testenv.LegacyLayer{{Payload: payload, Annotations: ann}})
		}
	}
	keylessBundle := func(who string, at time.Time, signed func(v1.Hash) v1.Hash) sign {
		return func(t *testing.T, repo name.Repository, d v1.Hash, subject v1.Descriptor) {
			testenv.PushBundle(t, repo, subject, ss.Bundle(t, who, issuer, testenv.CosignStatement(signed(d)), at))
		}
	}
	keylessLegacy := func(who string, at time.Time, tamper bool) sign {
		return func(t *testing.T, repo name.Repository, d v1.Hash, _ v1.Descriptor) {
			payload := testenv.SimpleSigning(repo.String(), d)
			ann := ss.Legacy(t, who, issuer, payload, at)
			if tamper {
				payload = []byte(strings.Replace(string(payload), "contoso/app", "contoso/evil", 1))
			}
			testenv.PushLegacy(t, repo, d, []testenv.LegacyLayer{{Payload: payload, Annotations: ann}})
		}
	}
	// unlogged is a keyless legacy signature made with --tlog-upload=false:
	// no Rekor bundle annotation.
	unlogged := func(t *testing.T, repo name.Repository, d v1.Hash, _ v1.Descriptor) {
		payload := testenv.SimpleSigning(repo.String(), d)
		ann := ss.Legacy(t, identity, issuer, payload, time.Time{})
		delete(ann, "dev.sigstore.cosign/bundle")
		testenv.PushLegacy(t, repo, d, []testenv.LegacyLayer{{Payload: payload, Annotations: ann}})
	}
	// forged edits a keyless bundle's first log entry: the inclusion promise
	// or the proof's root hash no longer verify.
	forged := func(field string) sign {
		return func(t *testing.T, repo name.Repository, d v1.Hash, subject v1.Descriptor) {
			var b map[string]any
			if err := json.Unmarshal(ss.Bundle(t, identity, issuer, testenv.CosignStatement(d), time.Time{}), &b); err != nil {
				t.Fatal(err)
			}
			te := b["verificationMaterial"].(map[string]any)["tlogEntries"].([]any)[0].(map[string]any)
			bogus := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 32)))
			switch field {
			case "set":
				te["inclusionPromise"].(map[string]any)["signedEntryTimestamp"] = bogus
			case "proof":
				te["inclusionProof"].(map[string]any)["rootHash"] = bogus
			}
			out, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			testenv.PushBundle(t, repo, subject, out)
		}
	}
	same := func(d v1.Hash) v1.Hash { return d }
	elsewhere := func(v1.Hash) v1.Hash { return anotherDigest }
	expired := time.Now().Add(30 * time.Minute) // the certificate is valid ten minutes

	for _, tc := range []struct {
		name   string
		signs  []sign
		keys   []*testenv.Key
		ids    []schema.KeylessIdentity
		want   verify.Reason // "" verifies
		detail string
	}{
		{name: "unsigned", keys: []*testenv.Key{key}, want: verify.NoSignature},
		{name: "key, bundle", signs: []sign{bundleBy(key, same)}, keys: []*testenv.Key{key}},
		{name: "key, legacy", signs: []sign{legacyBy(key, same, false)}, keys: []*testenv.Key{key}},
		{name: "second key of the policy", signs: []sign{bundleBy(key, same)}, keys: []*testenv.Key{other, key}},
		{name: "other key, bundle", signs: []sign{bundleBy(other, same)}, keys: []*testenv.Key{key}, want: verify.WrongKey},
		{name: "other key, legacy", signs: []sign{legacyBy(other, same, false)}, keys: []*testenv.Key{key}, want: verify.WrongKey},
		{name: "another digest, bundle", signs: []sign{bundleBy(key, elsewhere)}, keys: []*testenv.Key{key}, want: verify.DigestMismatch},
		{name: "another digest, legacy", signs: []sign{legacyBy(key, elsewhere, false)}, keys: []*testenv.Key{key}, want: verify.DigestMismatch},
		{name: "tampered payload, legacy", signs: []sign{legacyBy(key, same, true)}, keys: []*testenv.Key{key}, want: verify.WrongKey, detail: "altered payload"},
		{name: "one good signature among bad ones", signs: []sign{bundleBy(other, same), legacyBy(key, same, false)}, keys: []*testenv.Key{key}},
		{name: "keyless, bundle", signs: []sign{keylessBundle(identity, time.Time{}, same)}, ids: anyone},
		{name: "keyless, legacy", signs: []sign{keylessLegacy(identity, time.Time{}, false)}, ids: anyone},
		{name: "keyless, subject by RE2", signs: []sign{keylessBundle(identity, time.Time{}, same)}, ids: byRE},
		{name: "other identity, bundle", signs: []sign{keylessBundle("mallory@evil.example", time.Time{}, same)}, ids: anyone, want: verify.IdentityMismatch},
		{name: "other identity, legacy", signs: []sign{keylessLegacy(identity, time.Time{}, false)}, ids: someoneElse, want: verify.IdentityMismatch},
		{name: "expired certificate, bundle", signs: []sign{keylessBundle(identity, expired, same)}, ids: anyone, want: verify.Untrusted, detail: "outside certificate validity"},
		{name: "expired certificate, legacy", signs: []sign{keylessLegacy(identity, expired, false)}, ids: anyone, want: verify.Untrusted, detail: "outside certificate validity"},
		{name: "keyless, legacy, no log entry", signs: []sign{unlogged}, ids: anyone, want: verify.Untrusted, detail: "not enough verified log entries"},
		{name: "keyless on another digest", signs: []sign{keylessBundle(identity, time.Time{}, elsewhere)}, ids: anyone, want: verify.DigestMismatch},
		{name: "tampered payload, keyless legacy", signs: []sign{keylessLegacy(identity, time.Time{}, true)}, ids: anyone, want: verify.Untrusted, detail: "does not match artifact"},
		{name: "keyless, forged inclusion promise", signs: []sign{forged("set")}, ids: anyone, want: verify.Untrusted, detail: "not enough verified log entries"},
		{name: "keyless, forged inclusion proof", signs: []sign{forged("proof")}, ids: anyone, want: verify.Untrusted, detail: "does not match expected root"},
		{name: "keyless signature, keys only", signs: []sign{keylessBundle(identity, time.Time{}, same)}, keys: []*testenv.Key{key}, want: verify.WrongKey},
		{name: "keyed signature, keyless only", signs: []sign{bundleBy(key, same)}, ids: anyone, want: verify.WrongKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, d, desc := image(t)
			for _, s := range tc.signs {
				s(t, repo, d, desc)
			}
			var root []byte
			if len(tc.ids) > 0 {
				root = ss.TrustedRoot
			}
			p := policy(t, tc.keys, tc.ids, root)
			got, err := p.Image(context.Background(), repo, d)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got.Policy != "spec.verify[0]" || got.PolicyDigest != p.Digest || got.Signature.Hex == "" {
					t.Errorf("verified %+v", got)
				}
				return
			}
			var ve *verify.Error
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want a refusal (%s)", err, tc.want)
			}
			if ve.Reason != tc.want || ve.Policy != "spec.verify[0]" || !strings.Contains(ve.Detail, tc.detail) {
				t.Errorf("refused with %q, want reason %q and %q in it", err, tc.want, tc.detail)
			}
		})
	}
}

// TestSignatureAtMirror: publish checks the signature the lock names; one
// that is not there, or that is another image's, refuses.
func TestSignatureAtMirror(t *testing.T) {
	t.Parallel()
	key := testenv.NewKey(t)
	repo, d, desc := image(t)
	sig := testenv.PushBundle(t, repo, desc, key.Bundle(t, testenv.CosignStatement(d)))
	p := policy(t, []*testenv.Key{key}, nil, nil)
	err := p.Signature(context.Background(), repo, d, sig)
	if err != nil {
		t.Fatalf("the locked signature: %v", err)
	}
	var ve *verify.Error
	missing := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}
	err = p.Signature(context.Background(), repo, d, missing)
	if !errors.As(err, &ve) || ve.Reason != verify.NoSignature {
		t.Errorf("a missing signature: %v, want %s", err, verify.NoSignature)
	}
	other := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("cd", 32)}
	err = p.Signature(context.Background(), repo, other, sig)
	if !errors.As(err, &ve) || ve.Reason != verify.DigestMismatch {
		t.Errorf("another image's signature: %v, want %s", err, verify.DigestMismatch)
	}
}

// TestPublicGood: a keyless policy without a trustedRoot uses the one
// built in, and the same policy compiles to the same digest; a policy with
// the same root given as a file has the same digest too.
func TestPublicGood(t *testing.T) {
	ids := []schema.KeylessIdentity{{Issuer: issuer, Subject: identity}}
	p := policy(t, nil, ids, nil)
	if again := policy(t, nil, ids, nil); p.Digest != again.Digest {
		t.Errorf("one policy, two digests: %s, %s", p.Digest, again.Digest)
	}
	pg, err := os.ReadFile("trusted_root.json")
	if err != nil {
		t.Fatal(err)
	}
	if file := policy(t, nil, ids, pg); file.Digest != p.Digest {
		t.Errorf("the built-in root and the same root as a file: digests %s, %s", p.Digest, file.Digest)
	}
}

// TestTrustedRootRefused: a trusted root sigstore-go does not read is an
// input error at the field, naming the file.
func TestTrustedRootRefused(t *testing.T) {
	for name, data := range map[string]string{
		"not JSON":      "{",
		"no media type": `{"tlogs":[]}`,
		"bad key":       `{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1","tlogs":[{"publicKey":{"rawBytes":"AAAA","keyDetails":"PKIX_ECDSA_P256_SHA_256"},"logId":{"keyId":"AAAA"},"baseUrl":"https://x"}]}`,
	} {
		c := &schema.CosignVerify{Identities: []schema.KeylessIdentity{{Issuer: issuer, Subject: identity}},
			TrustedRoot: &schema.FileRef{File: "root.json", Data: []byte(data)}}
		_, err := verify.Compile(&schema.Fleet{Spec: schema.Spec{Verify: []schema.VerifyPolicy{{Cosign: c}}}}, nil)
		if err == nil || !strings.Contains(err.Error(), `spec.verify[0].cosign.trustedRoot.file: "root.json" does not parse`) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
