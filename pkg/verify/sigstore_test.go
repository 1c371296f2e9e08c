package verify_test

// Sigstore verification is sigstore-go's (sigstore.go): these tests hold
// what fleetgen asks of it. A real public-good signature against the root
// built in; a real Fulcio username certificate against its instance's root;
// a keyless signature logged in Rekor v2 and timed by a timestamp authority
// against its trusted root and another; bundles altered one rule at a time.
// Test vectors: testdata/ (SOURCES.md).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestSigstorePublicGood verifies a real signature of Sigstore's
// public-good instance, offline: cosign's test vector
// testdata/oci-attestation.sigstore.json (see SOURCES.md), a bundle that
// `cosign attest --new-bundle-format` made on 2025-02-28 for the empty
// image (go-containerregistry's empty.Image), with a certificate from
// public-good Fulcio (an SCT from its CT log), a Rekor v1 dsse entry with
// its inclusion promise, proof and checkpoint. It is checked against the
// public-good trusted_root.json fleetgen builds in (a policy without
// trustedRoot).
//
// It is an attestation (predicate https://cosign.sigstore.dev/attestation/v1),
// not a signature: sigstore-go verifies it (certificate chain at the
// logged time, SCT, inclusion promise and proof, identity, subject) and
// fleetgen refuses it only for its predicate, after those checks, which
// the refusal's reason shows. Another identity, an altered envelope and
// another image are refused for what sigstore-go finds.
func TestSigstorePublicGood(t *testing.T) {
	t.Parallel()
	att, err := os.ReadFile("testdata/oci-attestation.sigstore.json")
	if err != nil {
		t.Fatal(err)
	}
	signer := []schema.KeylessIdentity{{Issuer: "https://github.com/login/oauth", Subject: "cody@soyland.com"}}
	other := []schema.KeylessIdentity{{Issuer: "https://github.com/login/oauth", Subject: "mallory@evil.example"}}
	emptyDigest, err := empty.Image.Digest()
	if err != nil {
		t.Fatal(err)
	}
	altered := func() []byte {
		var b map[string]any
		if err := json.Unmarshal(att, &b); err != nil {
			t.Fatal(err)
		}
		sig := b["dsseEnvelope"].(map[string]any)["signatures"].([]any)[0].(map[string]any)
		raw, _ := base64.StdEncoding.DecodeString(sig["sig"].(string))
		raw[len(raw)-1] ^= 1
		sig["sig"] = base64.StdEncoding.EncodeToString(raw)
		out, _ := json.Marshal(b)
		return out
	}()

	for _, tc := range []struct {
		name        string
		bundle      []byte
		ids         []schema.KeylessIdentity
		onOther     bool // attached to another image than the one it names
		want        verify.Reason
		wantDetails string
	}{
		{name: "the signer", bundle: att, ids: signer, want: verify.NoSignature, wantDetails: "an attestation"},
		{name: "another identity", bundle: att, ids: other, want: verify.IdentityMismatch, wantDetails: "signed by cody@soyland.com"},
		{name: "another image", bundle: att, ids: signer, onOther: true, want: verify.DigestMismatch},
		{name: "altered signature", bundle: altered, ids: signer, want: verify.Untrusted, wantDetails: "transparency log signature does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, _, desc := image(t)
			img := empty.Image
			if !tc.onOther {
				if err := remote.Write(repo.Tag("empty"), img); err != nil {
					t.Fatal(err)
				}
				sz, _ := img.Size()
				mt, _ := img.MediaType()
				desc = v1.Descriptor{MediaType: mt, Digest: emptyDigest, Size: sz}
			}
			testenv.PushBundle(t, repo, desc, tc.bundle)
			p := policy(t, nil, tc.ids, nil) // the built-in root
			_, err := p.Image(context.Background(), repo, desc.Digest)
			var ve *verify.Error
			if !errors.As(err, &ve) || ve.Reason != tc.want || !strings.Contains(ve.Detail, tc.wantDetails) {
				t.Fatalf("fleetgen: %v, want %s (%q)", err, tc.want, tc.wantDetails)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// TestSigstoreBundles probes the rules a Sigstore bundle's structure is held
// to: a valid keyless bundle and a valid keyed one, each altered in one way
// (the media type's version, the log entry's kind and version, its
// inclusion promise and proof, the certificate's form, the envelope's
// signatures, the statement). The verdicts are sigstore-go's (and, for the
// statement's predicate, fleetgen's rule); the table is what was seen when
// the port of sigstore-go's checks gave way to sigstore-go itself, and
// agrees with the port's verdicts but for one (see below).
func TestSigstoreBundles(t *testing.T) {
	t.Parallel()
	key, other := testenv.NewKey(t), testenv.NewKey(t)
	ss := testenv.NewSigstore(t)
	anyone := []schema.KeylessIdentity{{Issuer: issuer, Subject: identity}}

	type edit func(b map[string]any)
	vm := func(b map[string]any) map[string]any { return b["verificationMaterial"].(map[string]any) }
	entry := func(b map[string]any) map[string]any { return vm(b)["tlogEntries"].([]any)[0].(map[string]any) }
	mediaType := func(mt string) edit { return func(b map[string]any) { b["mediaType"] = mt } }
	drop := func(field string) edit { return func(b map[string]any) { delete(entry(b), field) } }
	asChain := func(b map[string]any) {
		c := vm(b)["certificate"]
		delete(vm(b), "certificate")
		vm(b)["x509CertificateChain"] = map[string]any{"certificates": []any{c}}
	}
	both := func(es ...edit) edit {
		return func(b map[string]any) {
			for _, e := range es {
				e(b)
			}
		}
	}
	sigs := func(b map[string]any) []any { return b["dsseEnvelope"].(map[string]any)["signatures"].([]any) }
	setSigs := func(b map[string]any, s []any) { b["dsseEnvelope"].(map[string]any)["signatures"] = s }
	statement := func(d v1.Hash, tmpl string) []byte {
		return []byte(strings.NewReplacer("DIGEST", d.Hex).Replace(tmpl))
	}
	// rootOnly is the virtual Sigstore's trusted root without Fulcio's
	// intermediate, which withIntermediate puts in the bundle's chain.
	var tr map[string]any
	if err := json.Unmarshal(ss.TrustedRoot, &tr); err != nil {
		t.Fatal(err)
	}
	ca := tr["certificateAuthorities"].([]any)[0].(map[string]any)["certChain"].(map[string]any)
	fulcio := ca["certificates"].([]any)
	if len(fulcio) != 2 {
		t.Fatalf("the virtual Fulcio has %d certificates, want an intermediate and a root", len(fulcio))
	}
	ca["certificates"] = fulcio[1:]
	rootOnly, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	withIntermediate := func(b map[string]any) {
		chain := vm(b)["x509CertificateChain"].(map[string]any)
		chain["certificates"] = append(chain["certificates"].([]any), fulcio[0])
	}
	const (
		v01 = "application/vnd.dev.sigstore.bundle+json;version=0.1"
		v02 = "application/vnd.dev.sigstore.bundle+json;version=0.2"
		v03 = "application/vnd.dev.sigstore.bundle+json;version=0.3"
	)

	for _, tc := range []struct {
		name   string
		keyed  bool
		stmt   string // the keyed statement (DIGEST: the image's), default cosign's
		edit   edit
		root   []byte // the trusted root, default the virtual Sigstore's
		accept bool   // what both must say
	}{
		{name: "keyless as signed", accept: true},
		{name: "keyless, media type version=0.3", edit: mediaType(v03), accept: true},
		{name: "keyless, media type version=0.2", edit: mediaType(v02), accept: true},
		{name: "keyless, media type version=0.1", edit: mediaType(v01), accept: true},
		{name: "keyless, media type v0.4", edit: mediaType("application/vnd.dev.sigstore.bundle.v0.4+json")},
		{name: "keyless, log entry without kindVersion", edit: drop("kindVersion")},
		{name: "keyless, log entry of another kind", edit: func(b map[string]any) {
			entry(b)["kindVersion"] = map[string]any{"kind": "hashedrekord", "version": "0.0.1"}
		},
			// sigstore-go v1.3.0 means to refuse a kindVersion other than the
			// body's but compares the value with itself (the port refused it,
			// as sigstore-js does). Harmless: the body, not kindVersion, is
			// what the log signed and what is verified.
			accept: true},
		{name: "keyless v0.3, no inclusion proof", edit: drop("inclusionProof")},
		{name: "keyless v0.1, no inclusion proof", edit: both(mediaType(v01), drop("inclusionProof")), accept: true},
		// The timestamp authority's signed time stands in for the
		// integrated time the promise would have vouched for.
		{name: "keyless, no inclusion promise", edit: drop("inclusionPromise"), accept: true},
		{name: "keyless, no inclusion promise nor timestamp", edit: both(drop("inclusionPromise"), func(b map[string]any) {
			delete(vm(b), "timestampVerificationData")
		})},
		{name: "keyless, a checkpoint that is not the log's", edit: func(b map[string]any) {
			entry(b)["inclusionProof"].(map[string]any)["checkpoint"] = map[string]any{"envelope": "rekor.example\n1\nAAAA\n\n— rekor.example AAAAAAAA\n"}
		}},
		{name: "keyless, log entry twice", edit: func(b map[string]any) {
			vm(b)["tlogEntries"] = append(vm(b)["tlogEntries"].([]any), entry(b))
		}},
		{name: "keyless, log entry of an unknown log", edit: func(b map[string]any) {
			entry(b)["logId"] = map[string]any{"keyId": base64.StdEncoding.EncodeToString(make([]byte, 32))}
		}},
		{name: "keyless v0.3, certificate as a chain", edit: asChain},
		{name: "keyless v0.1, certificate as a chain", edit: both(mediaType(v01), asChain), accept: true},
		{name: "keyless v0.1, Fulcio's intermediate in the bundle, not the root", edit: both(mediaType(v01), asChain, withIntermediate), root: rootOnly},
		{name: "keyless v0.1, Fulcio's intermediate in neither", edit: both(mediaType(v01), asChain), root: rootOnly},
		{name: "keyless, two envelope signatures", edit: func(b map[string]any) { setSigs(b, append(sigs(b), sigs(b)[0])) }},
		{name: "keyed as signed", keyed: true, accept: true},
		{name: "keyed, media type version=0.1", keyed: true, edit: mediaType(v01), accept: true},
		{name: "keyed, two envelope signatures, the first the key's", keyed: true, edit: func(b map[string]any) {
			var o map[string]any
			if err := json.Unmarshal(other.Bundle(t, testenv.CosignStatement(v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)})), &o); err != nil {
				t.Fatal(err)
			}
			setSigs(b, append(sigs(b), sigs(o)[0]))
		}},
		{name: "keyed, in-toto statement v0.1", keyed: true, accept: true,
			stmt: `{"_type":"https://in-toto.io/Statement/v0.1","subject":[{"digest":{"sha256":"DIGEST"}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`},
		{name: "keyed, the image among two subjects", keyed: true, accept: true,
			stmt: `{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"x","digest":{"sha256":"` + strings.Repeat("cd", 32) + `"}},{"name":"app","digest":{"sha256":"DIGEST"}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`},
		{name: "keyed, a subject by sha512 only", keyed: true,
			stmt: `{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha512":"DIGESTDIGEST"}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`},
		{name: "keyed, an SBOM attestation (fleetgen's predicate rule)", keyed: true,
			stmt: `{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha256":"DIGEST"}}],"predicateType":"https://spdx.dev/Document","predicate":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, d, desc := image(t)
			var raw []byte
			switch {
			case tc.keyed && tc.stmt != "":
				raw = key.Bundle(t, statement(d, tc.stmt))
			case tc.keyed:
				raw = key.Bundle(t, testenv.CosignStatement(d))
			default:
				raw = ss.Bundle(t, identity, issuer, testenv.CosignStatement(d), time.Time{})
			}
			if tc.edit != nil {
				var b map[string]any
				if err := json.Unmarshal(raw, &b); err != nil {
					t.Fatal(err)
				}
				tc.edit(b)
				var err error
				if raw, err = json.Marshal(b); err != nil {
					t.Fatal(err)
				}
			}
			testenv.PushBundle(t, repo, desc, raw)
			keys, ids, root := []*testenv.Key{key}, []schema.KeylessIdentity(nil), []byte(nil)
			if !tc.keyed {
				keys, ids, root = nil, anyone, ss.TrustedRoot
			}
			if tc.root != nil {
				root = tc.root
			}
			_, err := policy(t, keys, ids, root).Image(context.Background(), repo, d)
			t.Logf("verdict: %v", err)
			if (err == nil) != tc.accept {
				t.Errorf("fleetgen: %v, want accepted %v", err, tc.accept)
			}
		})
	}
}

// TestSigstoreUsernameIdentity verifies a signature whose Fulcio
// certificate names its signer by a username (an otherName SAN of type
// 1.3.6.1.4.1.57264.1.7, the only SAN, critical), made by a real Fulcio and
// Rekor (a sigstore/scaffolding instance): sigstore-go's test vector
// testdata/othername.sigstore.json and that instance's trusted root
// testdata/scaffolding-trusted-root.json (see SOURCES.md), a hashedrekord
// message signature over an artifact of digest sha256:bc103b4a…, which
// stands here for an image digest.
func TestSigstoreUsernameIdentity(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/othername.sigstore.json")
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.ReadFile("testdata/scaffolding-trusted-root.json")
	if err != nil {
		t.Fatal(err)
	}
	const oidc = "http://oidc.local:8080"
	for _, tc := range []struct {
		name string
		id   schema.KeylessIdentity
		want verify.Reason
	}{
		{name: "the username", id: schema.KeylessIdentity{Issuer: oidc, Subject: "foo!oidc.local"}},
		{name: "the username by RE2", id: schema.KeylessIdentity{Issuer: oidc, SubjectRegExp: `^foo!`}},
		{name: "an email", id: schema.KeylessIdentity{Issuer: oidc, Subject: "foo@oidc.local"}, want: verify.IdentityMismatch},
		{name: "another issuer", id: schema.KeylessIdentity{Issuer: "https://oidc.example", Subject: "foo!oidc.local"}, want: verify.IdentityMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, _, desc := image(t)
			desc.Digest = v1.Hash{Algorithm: "sha256", Hex: "bc103b4a84971ef6459b294a2b98568a2bfb72cded09d4acd1e16366a401f95b"}
			testenv.PushBundle(t, repo, desc, b)
			ids := []schema.KeylessIdentity{tc.id}
			_, err := policy(t, nil, ids, root).Image(context.Background(), repo, desc.Digest)
			var ve *verify.Error
			if tc.want == "" && err != nil || tc.want != "" && (!errors.As(err, &ve) || ve.Reason != tc.want) {
				t.Errorf("fleetgen: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRekorV2 is the signature cosign v3 makes where the signing
// configuration names a Rekor v2 log: a keyless DSSE bundle whose log entry
// (hashedrekord v0.0.2) has an inclusion proof and a signed checkpoint but
// no inclusion promise and no integrated time, and whose only time is an
// RFC 3161 timestamp of the timestamp authority. Made by test/testenv's
// virtual Sigstore (sigstore-go's, with its TSA), it verifies offline
// against that instance's trusted root (Fulcio, the log's key, the TSA) and
// is refused against another instance's root, against a root without the
// TSA (no time for the certificate), and without its timestamp.
func TestRekorV2(t *testing.T) {
	t.Parallel()
	ss, other := testenv.NewSigstore(t), testenv.NewSigstore(t)
	anyone := []schema.KeylessIdentity{{Issuer: issuer, Subject: identity}}
	withoutTSA := func() []byte {
		var tr map[string]any
		if err := json.Unmarshal(ss.TrustedRoot, &tr); err != nil {
			t.Fatal(err)
		}
		tr["timestampAuthorities"] = []any{}
		out, _ := json.Marshal(tr)
		return out
	}()
	for _, tc := range []struct {
		name     string
		root     []byte
		edit     func(b map[string]any)
		want     verify.Reason
		wantText string
	}{
		{name: "its own root", root: ss.TrustedRoot},
		{name: "another instance's root", root: other.TrustedRoot, want: verify.Untrusted},
		{name: "a root without the timestamp authority", root: withoutTSA, want: verify.Untrusted},
		{name: "the timestamp dropped", root: ss.TrustedRoot, want: verify.Untrusted, edit: func(b map[string]any) {
			delete(b["verificationMaterial"].(map[string]any), "timestampVerificationData")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, d, desc := image(t)
			raw := ss.BundleV2(t, identity, issuer, testenv.CosignStatement(d))
			var b map[string]any
			if err := json.Unmarshal(raw, &b); err != nil {
				t.Fatal(err)
			}
			te := b["verificationMaterial"].(map[string]any)["tlogEntries"].([]any)[0].(map[string]any)
			if kv := te["kindVersion"].(map[string]any); kv["version"] != "0.0.2" || te["inclusionPromise"] != nil || te["integratedTime"] != nil {
				t.Fatalf("not a Rekor v2 entry: %v", te)
			}
			if tc.edit != nil {
				tc.edit(b)
				raw, _ = json.Marshal(b)
			}
			testenv.PushBundle(t, repo, desc, raw)
			_, err := policy(t, nil, anyone, tc.root).Image(context.Background(), repo, d)
			var ve *verify.Error
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.As(err, &ve) || ve.Reason != tc.want):
				t.Fatalf("err = %v, want %s", err, tc.want)
			}
			t.Logf("verdict: %v", err)
		})
	}
}
