package testenv

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
)

// Signing images the way cosign lays signatures out, offline, for tests:
// keyed with sigstore-go's own signer (sign.Bundle and an ephemeral ECDSA
// P-256 key), keyless with its virtual Sigstore (a Fulcio CA, a Rekor log
// and a TSA made up for the test: certificates, log entries with signed
// entry timestamps and inclusion proofs, timestamps).

// Media types cosign writes.
const (
	BundleType        = "application/vnd.dev.sigstore.bundle.v0.3+json"
	SimpleSigningType = "application/vnd.dev.cosign.simplesigning.v1+json"
	cosignPredicate   = "https://sigstore.dev/cosign/sign/v1"
)

// CosignStatement is the in-toto statement cosign v3 signs for image digest d.
func CosignStatement(d v1.Hash) []byte {
	return []byte(fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{%q:%q}}],"predicateType":%q,"predicate":{}}`, d.Algorithm, d.Hex, cosignPredicate))
}

// SimpleSigning is cosign's legacy payload for image digest d in repo.
func SimpleSigning(repo string, d v1.Hash) []byte {
	return []byte(fmt.Sprintf(`{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`, repo, d))
}

// Key is a cosign key pair.
type Key struct {
	kp *sign.EphemeralKeypair
	// PublicPEM is the public key as `cosign generate-key-pair` writes cosign.pub.
	PublicPEM []byte
}

// NewKey makes an ECDSA P-256 key pair.
func NewKey(t testing.TB) *Key {
	t.Helper()
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// GenerateKey is NewKey for programs (the mirror benchmark).
func GenerateKey() (*Key, error) {
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(kp.GetPublicKey())
	if err != nil {
		return nil, err
	}
	return &Key{kp: kp, PublicPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}, nil
}

// Bundle signs statement (CosignStatement) as a DSSE envelope with the key:
// the Sigstore bundle (v0.3, JSON) cosign v3 attaches, without a log entry
// (--tlog-upload=false).
func (k *Key) Bundle(t testing.TB, statement []byte) []byte {
	t.Helper()
	b, err := k.SignBundle(statement)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// SignBundle is Bundle for programs.
func (k *Key) SignBundle(statement []byte) ([]byte, error) {
	b, err := sign.Bundle(&sign.DSSEData{Data: statement, PayloadType: "application/vnd.in-toto+json"}, k.kp, sign.BundleOptions{})
	if err != nil {
		return nil, err
	}
	return protojson.Marshal(b)
}

// Legacy signs payload (SimpleSigning) with the key and returns the
// annotations of cosign's legacy signature layer.
func (k *Key) Legacy(t testing.TB, payload []byte) map[string]string {
	t.Helper()
	sig, _, err := k.kp.SignData(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}
}

// Sigstore is a virtual Sigstore instance for keyless signing.
type Sigstore struct {
	ca *ca.VirtualSigstore
	// TrustedRoot is its trusted_root.json: the Fulcio CA, the Rekor log
	// (v1 and v2 entries are signed with one key) and the timestamp
	// authority (no CT log: the virtual CA's certificates carry no SCT).
	TrustedRoot []byte
}

// NewSigstore starts a virtual Sigstore.
func NewSigstore(t testing.TB) *Sigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	s := &Sigstore{ca: vs}
	type validFor struct {
		Start string `json:"start"`
		End   string `json:"end,omitempty"`
	}
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	raw := func(b []byte) map[string]string {
		return map[string]string{"rawBytes": base64.StdEncoding.EncodeToString(b)}
	}
	var tlogs []any
	for _, l := range vs.RekorLogs() {
		der, err := x509.MarshalPKIXPublicKey(l.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		id := sha256.Sum256(der)
		tlogs = append(tlogs, map[string]any{
			"baseUrl": l.BaseURL, "hashAlgorithm": "SHA2_256",
			"publicKey": map[string]any{"rawBytes": base64.StdEncoding.EncodeToString(der), "keyDetails": "PKIX_ECDSA_P256_SHA_256",
				"validFor": validFor{Start: rfc(l.ValidityPeriodStart), End: rfc(l.ValidityPeriodEnd)}},
			"logId": map[string]string{"keyId": base64.StdEncoding.EncodeToString(id[:])},
		})
	}
	var cas []any
	for _, c := range vs.FulcioCertificateAuthorities() {
		f := c.(*root.FulcioCertificateAuthority)
		var chain []any
		for _, i := range f.Intermediates {
			chain = append(chain, raw(i.Raw))
		}
		chain = append(chain, raw(f.Root.Raw))
		cas = append(cas, map[string]any{"uri": f.URI, "certChain": map[string]any{"certificates": chain},
			"validFor": validFor{Start: rfc(f.ValidityPeriodStart), End: rfc(f.ValidityPeriodEnd)}})
	}
	var tsas []any
	for _, a := range vs.TimestampingAuthorities() {
		ta := a.(*root.SigstoreTimestampingAuthority)
		chain := []any{raw(ta.Leaf.Raw)}
		for _, i := range ta.Intermediates {
			chain = append(chain, raw(i.Raw))
		}
		chain = append(chain, raw(ta.Root.Raw))
		tsas = append(tsas, map[string]any{"uri": ta.URI, "certChain": map[string]any{"certificates": chain},
			"validFor": validFor{Start: rfc(time.Now().Add(-time.Hour))}})
	}
	tr := map[string]any{"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1", "tlogs": tlogs, "certificateAuthorities": cas, "ctlogs": []any{}, "timestampAuthorities": tsas}
	if s.TrustedRoot, err = json.Marshal(tr); err != nil {
		t.Fatal(err)
	}
	return s
}

// Bundle signs statement keyless as identity (an email SAN) from issuer:
// a DSSE bundle (v0.3) with the Fulcio certificate, a dsse Rekor entry with
// its inclusion promise and proof, and a timestamp. at is when Rekor logs
// it (zero: five minutes from now, inside the certificate's ten minutes).
func (s *Sigstore) Bundle(t testing.TB, identity, issuer string, statement []byte, at time.Time) []byte {
	t.Helper()
	if at.IsZero() {
		at = time.Now().Add(5 * time.Minute)
	}
	e, err := s.ca.AttestAtTime(identity, issuer, statement, at, true)
	if err != nil {
		t.Fatal(err)
	}
	return s.protoBundle(t, e)
}

// BundleV2 signs statement keyless as identity from issuer as cosign v3
// does against a Rekor v2 log: a DSSE bundle (v0.3) with the Fulcio
// certificate, a hashedrekord v0.0.2 entry with its inclusion proof and
// signed checkpoint (no inclusion promise, no integrated time: Rekor v2
// gives neither) and an RFC 3161 timestamp from the timestamp authority,
// which is the only time the signature has.
func (s *Sigstore) BundleV2(t testing.TB, identity, issuer string, statement []byte) []byte {
	t.Helper()
	e, err := s.ca.AttestAtTimeHashedRekordV2(identity, issuer, statement, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	entries, err := e.TlogEntries()
	if err != nil {
		t.Fatal(err)
	}
	var b map[string]any
	if err := json.Unmarshal(s.encode(t, e, entries), &b); err != nil {
		t.Fatal(err)
	}
	// Rekor v2 entries carry no integrated time.
	for _, te := range b["verificationMaterial"].(map[string]any)["tlogEntries"].([]any) {
		delete(te.(map[string]any), "integratedTime")
	}
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// promised adds what the virtual Sigstore leaves out of the protobuf entry
// and Rekor's response carries: the inclusion promise (the signed entry
// timestamp) and the entry's kind and version (protobuf-specs requires
// them; sigstore-go refuses a bundle without).
func (s *Sigstore) promised(t testing.TB, tle *protorekor.TransparencyLogEntry) *protorekor.TransparencyLogEntry {
	t.Helper()
	var kv struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(tle.GetCanonicalizedBody(), &kv); err != nil {
		t.Fatal(err)
	}
	tle.KindVersion = &protorekor.KindVersion{Kind: kv.Kind, Version: kv.APIVersion}
	set, err := s.ca.RekorSignPayload(tlog.RekorPayload{
		Body: base64.StdEncoding.EncodeToString(tle.GetCanonicalizedBody()), IntegratedTime: tle.GetIntegratedTime(),
		LogIndex: tle.GetLogIndex(), LogID: hex.EncodeToString(tle.GetLogId().GetKeyId()),
	})
	if err != nil {
		t.Fatal(err)
	}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	return tle
}

// Legacy signs payload keyless and returns the annotations of cosign's
// legacy signature layer: the signature, the certificate and the Rekor
// bundle (a hashedrekord entry and its signed entry timestamp).
func (s *Sigstore) Legacy(t testing.TB, identity, issuer string, payload []byte, at time.Time) map[string]string {
	t.Helper()
	if at.IsZero() {
		at = time.Now().Add(5 * time.Minute)
	}
	e, err := s.ca.SignAtTime(identity, issuer, payload, at)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := e.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := e.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := e.TlogEntries()
	if err != nil || len(entries) != 1 {
		t.Fatalf("tlog entries: %v", err)
	}
	tle := s.promised(t, entries[0].TransparencyLogEntry())
	rb, err := json.Marshal(map[string]any{
		"SignedEntryTimestamp": base64.StdEncoding.EncodeToString(tle.GetInclusionPromise().GetSignedEntryTimestamp()),
		"Payload": map[string]any{
			"body": base64.StdEncoding.EncodeToString(tle.GetCanonicalizedBody()), "integratedTime": tle.GetIntegratedTime(),
			"logIndex": tle.GetLogIndex(), "logID": hex.EncodeToString(tle.GetLogId().GetKeyId()),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sc.Signature()),
		"dev.sigstore.cosign/certificate":    string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: vc.Certificate().Raw})),
		"dev.sigstore.cosign/bundle":         string(rb),
	}
}

// protoBundle writes a virtual Sigstore entity as a v0.3 bundle.
func (s *Sigstore) protoBundle(t testing.TB, e *ca.TestEntity) []byte {
	t.Helper()
	entries, err := e.TlogEntries()
	if err != nil {
		t.Fatal(err)
	}
	for i, te := range entries {
		entries[i], err = tlog.NewTlogEntry(s.promised(t, te.TransparencyLogEntry()))
		if err != nil {
			t.Fatal(err)
		}
	}
	return s.encode(t, e, entries)
}

// encode writes a virtual Sigstore entity with its log entries as a v0.3
// bundle.
func (s *Sigstore) encode(t testing.TB, e *ca.TestEntity, entries []*tlog.Entry) []byte {
	t.Helper()
	vc, err := e.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := e.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	tss, err := e.Timestamps()
	if err != nil {
		t.Fatal(err)
	}
	pb := &protobundle.Bundle{
		MediaType: BundleType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content:                   &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
			TimestampVerificationData: &protobundle.TimestampVerificationData{},
		},
	}
	for _, te := range entries {
		pb.VerificationMaterial.TlogEntries = append(pb.VerificationMaterial.TlogEntries, te.TransparencyLogEntry())
	}
	for _, ts := range tss {
		pb.VerificationMaterial.TimestampVerificationData.Rfc3161Timestamps = append(pb.VerificationMaterial.TimestampVerificationData.Rfc3161Timestamps, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
	}
	env, ok := sc.(*bundle.Envelope)
	if !ok {
		t.Fatalf("signature content %T, want a DSSE envelope", sc)
	}
	raw := env.RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(raw.Payload)
	if err != nil {
		t.Fatal(err)
	}
	de := &protodsse.Envelope{Payload: payload, PayloadType: raw.PayloadType}
	for _, s := range raw.Signatures {
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil {
			t.Fatal(err)
		}
		de.Signatures = append(de.Signatures, &protodsse.Signature{Sig: sig, Keyid: s.KeyID})
	}
	pb.Content = &protobundle.Bundle_DsseEnvelope{DsseEnvelope: de}
	out, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// PushBundle attaches a bundle to the image subject in repo as cosign v3
// does: a referrer whose artifact type (its config media type, as
// registries report it) and layer are the bundle's media type. It returns
// the referrer's digest.
func PushBundle(t testing.TB, repo name.Repository, subject v1.Descriptor, bundleJSON []byte, opts ...remote.Option) v1.Hash {
	t.Helper()
	img := ArtifactImage(BundleType, BundleType, string(bundleJSON), &subject)
	d, err := write(repo, img, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// LegacyLayer is one signature of a sha256-<hex>.sig manifest.
type LegacyLayer struct {
	Payload     []byte
	Annotations map[string]string
}

// PushLegacy writes cosign's legacy signature manifest of image digest d
// (tag sha256-<hex>.sig in repo) with layers, and returns its digest.
func PushLegacy(t testing.TB, repo name.Repository, d v1.Hash, layers []LegacyLayer, opts ...remote.Option) v1.Hash {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	for _, l := range layers {
		var err error
		img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(l.Payload, SimpleSigningType), MediaType: SimpleSigningType, Annotations: l.Annotations})
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := write(repo.Tag(d.Algorithm+"-"+d.Hex+".sig"), img, opts)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// PublicKeyOf returns a key pair's public key (for sigstore-go's verifier).
func (k *Key) PublicKeyOf() crypto.PublicKey { return k.kp.GetPublicKey() }
