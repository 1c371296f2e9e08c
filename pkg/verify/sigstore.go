package verify

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Sigstore signatures (cosign's), verified by sigstore-go as `cosign
// verify` asks it to (cosign v3.1.3's CheckOpts.verificationOptions):
//
//   - a key: the key as trusted material without validity bounds, no
//     timestamp and no log entry required (keyed signatures made with
//     --tlog-upload=false verify, as `cosign verify --key
//     --insecure-ignore-tlog` accepts them);
//   - keyless: the trusted root, a transparency log entry (Rekor v1 or v2)
//     and an observer timestamp (a Rekor v1 entry's integrated time, or a
//     signed RFC 3161 timestamp, which Rekor v2 entries need), an SCT when
//     the root has CT logs, and the certificate's identity matched by
//     sigstore-go's CertificateIdentity;
//   - the artifact: the image digest, which a DSSE statement's subject or a
//     message signature's digest must be; a legacy layer's payload, whose
//     docker-manifest-digest must be the image's (cosign's claim check).
//
// Two rules are fleetgen's beyond cosign's: a DSSE statement must have
// cosign's signature predicate (an attestation signed by the right identity
// is not a signature of the image), and a legacy payload must be a "cosign
// container image signature".

// publicGoodJSON is Sigstore's public-good trusted root (SOURCES.md).
//
//go:embed trusted_root.json
var publicGoodJSON []byte

// publicGood is publicGoodJSON read once.
var publicGood = sync.OnceValues(func() (*root.TrustedRoot, error) {
	return root.NewTrustedRootFromJSON(publicGoodJSON)
})

// cosignPolicy is a policy's cosign part, ready for sigstore-go.
type cosignPolicy struct {
	keys    []*sgverify.Verifier // one per key (and hash) that may verify
	keyless *sgverify.Verifier   // nil without identities
	ids     []schema.KeylessIdentity
	matchID []sgverify.CertificateIdentity
	// keyIDs fingerprint the keys (sorted SHA-256 of their DER) and
	// rootDigest the trusted root's bytes, for Policy.Digest.
	keyIDs     []string
	rootDigest string
}

func compileCosign(f *schema.Fleet, path string, sc *schema.CosignVerify, builtin []byte) (*cosignPolicy, problem.Errors) {
	var errs problem.Errors
	c := &cosignPolicy{ids: sc.Identities}
	var ders [][]byte
	for k, ref := range sc.Keys {
		at := fmt.Sprintf("%s.keys[%d].file", path, k)
		if why := schema.PublicKeyProblem(ref.Data); why != "" {
			errs = append(errs, f.At(problem.Other(at, "%q %s", ref.File, why)))
			continue
		}
		block, _ := pem.Decode(ref.Data)
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			errs = append(errs, f.At(problem.Other(at, "%q holds a PUBLIC KEY block that does not parse: want a PKIX public key (cosign.pub)", ref.File)))
			continue
		}
		vs, err := keyVerifiers(pub)
		if err != nil {
			errs = append(errs, f.At(problem.Other(at, "%q: sigstore cannot verify with this key: want ECDSA P-256, P-384 or P-521, RSA of at least 2048 bits, or Ed25519", ref.File)))
			continue
		}
		c.keys = append(c.keys, vs...)
		ders = append(ders, block.Bytes)
	}
	c.keyIDs = sortedIDs(ders)
	for k, id := range sc.Identities {
		ci, err := sgverify.NewShortCertificateIdentity(id.Issuer, "", id.Subject, id.SubjectRegExp)
		if err != nil {
			errs = append(errs, f.At(problem.InvalidValue(fmt.Sprintf("%s.identities[%d]", path, k), "invalid identity: want an issuer URL and subject or subjectRegExp (RE2)")))
			continue
		}
		c.matchID = append(c.matchID, ci)
	}
	rootJSON := builtin
	if sc.TrustedRoot != nil {
		rootJSON = sc.TrustedRoot.Data
	}
	if sc.TrustedRoot == nil && len(sc.Identities) == 0 {
		return c, errs // keys only: no root
	}
	var tr *root.TrustedRoot
	var err error
	switch {
	case rootJSON != nil:
		tr, err = root.NewTrustedRootFromJSON(rootJSON)
	default:
		rootJSON = publicGoodJSON
		tr, err = publicGood()
	}
	if err != nil {
		if sc.TrustedRoot == nil {
			return nil, append(errs, f.At(problem.Other(path, "the built-in trusted root does not parse: %s", quoted(err.Error()))))
		}
		// sigstore-go's message quotes the file: not repeated.
		return nil, append(errs, f.At(problem.Other(path+".trustedRoot.file", "%q does not parse as a trusted root: want Sigstore's trusted_root.json (`cosign trusted-root create`, or the one your Sigstore instance publishes)", sc.TrustedRoot.File)))
	}
	sum := sha256.Sum256(rootJSON)
	c.rootDigest = "sha256:" + hex.EncodeToString(sum[:])
	if len(sc.Identities) > 0 {
		opts := []sgverify.VerifierOption{sgverify.WithTransparencyLog(1), sgverify.WithObserverTimestamps(1)}
		if len(tr.CTLogs()) > 0 {
			opts = append(opts, sgverify.WithSignedCertificateTimestamps(1))
		}
		if c.keyless, err = sgverify.NewVerifier(tr, opts...); err != nil {
			return nil, append(errs, f.At(problem.Other(path+".trustedRoot", "the trusted root cannot verify keyless signatures: want one with Fulcio, Rekor and timestamp authority keys")))
		}
	}
	return c, errs
}

// keyVerifiers are the verifiers of one public key: SHA-256 for every key
// type (cosign's default), and for ECDSA P-384 and P-521 also the hash
// Sigstore's algorithm registry pairs with the curve.
func keyVerifiers(pub crypto.PublicKey) ([]*sgverify.Verifier, error) {
	hashes := []crypto.Hash{crypto.SHA256}
	if k, ok := pub.(*ecdsa.PublicKey); ok {
		switch k.Curve.Params().BitSize {
		case 384:
			hashes = append(hashes, crypto.SHA384)
		case 521:
			hashes = append(hashes, crypto.SHA512)
		}
	}
	var out []*sgverify.Verifier
	for _, h := range hashes {
		sv, err := signature.LoadVerifier(pub, h)
		if err != nil {
			return nil, err
		}
		key := root.NewExpiringKey(sv, time.Time{}, time.Time{})
		tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
		v, err := sgverify.NewVerifier(tm, sgverify.WithNoObserverTimestamps())
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// verify checks one Sigstore bundle of the image whose manifest digest is
// image. payload is a legacy layer's simple-signing payload (what its
// message signature signs), nil for a bundle. A nil error means the
// signature verifies.
func (c *cosignPolicy) verify(b *sgbundle.Bundle, image v1.Hash, payload []byte) *Error {
	vc, err := b.VerificationContent()
	if err != nil {
		return refuse(Malformed, "the bundle's verification material does not parse")
	}
	artifact := func() sgverify.ArtifactPolicyOption {
		if payload != nil {
			return sgverify.WithArtifact(bytes.NewReader(payload))
		}
		d, _ := hex.DecodeString(image.Hex)
		return sgverify.WithArtifactDigest("sha256", d)
	}
	if image.Algorithm != "sha256" {
		return refuse(DigestMismatch, "the image digest is not sha256")
	}
	switch {
	case vc.Certificate() == nil && len(c.keys) == 0:
		return refuse(WrongKey, "signed with a key; the policy accepts keyless signatures only")
	case vc.Certificate() == nil:
		for _, v := range c.keys {
			if _, err := v.Verify(b, sgverify.NewPolicy(artifact(), sgverify.WithKey())); err == nil {
				return claims(b, image, payload)
			}
		}
		for _, v := range c.keys {
			if c.signedOther(v, b, payload, sgverify.WithKey()) {
				return refuse(DigestMismatch, "the signature is the key's, of another digest than %s", image)
			}
		}
		return refuse(WrongKey, "no key of the policy verifies the signature (another key, or an altered payload)")
	case c.keyless == nil:
		return refuse(WrongKey, "a keyless signature; the policy accepts keys only")
	}
	res, err := c.keyless.Verify(b, sgverify.NewPolicy(artifact(), sgverify.WithoutIdentitiesUnsafe()))
	if err != nil {
		switch {
		case c.signedOther(c.keyless, b, payload, sgverify.WithoutIdentitiesUnsafe()):
			return refuse(DigestMismatch, "the statement's subject or the signed digest is another digest than %s", image)
		case strings.HasPrefix(err.Error(), "failed to verify signature"):
			return refuse(Malformed, "the signature does not verify with its own certificate (an altered payload)")
		}
		return refuse(Untrusted, "sigstore-go: %s", quoted(err.Error()))
	}
	cert := res.Signature.Certificate
	if cert == nil {
		return refuse(Malformed, "no certificate in the verification result")
	}
	if _, err := sgverify.CertificateIdentities(c.matchID).Verify(*cert); err != nil {
		return refuse(IdentityMismatch, "signed by %s (issuer %s), which no identity of the policy accepts", quoted(cert.SubjectAlternativeName), quoted(cert.Issuer))
	}
	return claims(b, image, payload)
}

// signedOther reports whether the bundle verifies (with v and opt) for
// what it says it signs itself, after it failed for the image: then it is a
// good signature of another digest. A legacy payload is its own claim.
func (c *cosignPolicy) signedOther(v *sgverify.Verifier, b *sgbundle.Bundle, payload []byte, opt sgverify.PolicyOption) bool {
	if payload != nil {
		return false
	}
	sc, err := b.SignatureContent()
	if err != nil {
		return false
	}
	self := sgverify.WithoutArtifactUnsafe()
	if ms := sc.MessageSignatureContent(); ms != nil {
		self = sgverify.WithArtifactDigest("sha256", ms.Digest())
	}
	_, err = v.Verify(b, sgverify.NewPolicy(self, opt))
	return err == nil
}

// The in-toto statement cosign v3 signs for an image, and its legacy payload.
const (
	cosignSignPredicate = "https://sigstore.dev/cosign/sign/v1"
	simpleSigningType   = "cosign container image signature"
)

// claims checks what sigstore-go leaves to its caller, after it verified
// the signature for the image: a legacy payload names the image and is a
// cosign image signature (cosign's SimpleClaimVerifier), a DSSE statement
// is cosign's signature, not an attestation.
func claims(b *sgbundle.Bundle, image v1.Hash, payload []byte) *Error {
	if payload != nil {
		var ss struct {
			Critical struct {
				Image struct {
					Digest string `json:"docker-manifest-digest"`
				} `json:"image"`
				Type string `json:"type"`
			} `json:"critical"`
		}
		if err := json.Unmarshal(payload, &ss); err != nil {
			return refuse(Malformed, "the simple-signing payload does not parse")
		}
		if ss.Critical.Type != simpleSigningType {
			return refuse(Malformed, "the payload is not a cosign container image signature")
		}
		if ss.Critical.Image.Digest != image.String() {
			return refuse(DigestMismatch, "the payload's docker-manifest-digest is another digest than %s", image)
		}
		return nil
	}
	if env := b.GetDsseEnvelope(); env != nil {
		var st struct {
			PredicateType string `json:"predicateType"`
		}
		if err := json.Unmarshal(env.GetPayload(), &st); err != nil {
			return refuse(Malformed, "the in-toto statement does not parse")
		}
		if st.PredicateType != cosignSignPredicate {
			return refuse(NoSignature, "an attestation (predicate type %s), not a signature (%s)", quoted(st.PredicateType), cosignSignPredicate)
		}
	}
	return nil
}

// parseBundle reads a Sigstore bundle (JSON, v0.1 to v0.3) as sigstore-go
// does; what it cannot read is an error that quotes nothing of it.
func parseBundle(data []byte) (*sgbundle.Bundle, error) {
	var b sgbundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, errors.New("not a Sigstore bundle v0.1 to v0.3 that sigstore-go reads")
	}
	return &b, nil
}

// Annotations of cosign's legacy signature layers.
const (
	annSignature   = "dev.cosignproject.cosign/signature"
	annCertificate = "dev.sigstore.cosign/certificate"
	annBundle      = "dev.sigstore.cosign/bundle"
)

// legacyBundle is the Sigstore bundle (v0.1) a legacy cosign signature
// layer amounts to, as sigstore-go's docs/oci-image-verification.md builds
// it: its signature over the payload as a message signature, its
// certificate (or, signed with a key, a public key without a hint: the
// policy's keys are tried), and the Rekor entry of its bundle annotation,
// whose signed entry timestamp is the inclusion promise and whose body
// gives the kind and version.
func legacyBundle(payload []byte, ann map[string]string) (*sgbundle.Bundle, error) {
	sum := sha256.Sum256(payload)
	vm := map[string]any{}
	if c := ann[annCertificate]; c != "" {
		block, _ := pem.Decode([]byte(c))
		if block == nil {
			return nil, errors.New("the certificate annotation is not PEM")
		}
		vm["x509CertificateChain"] = map[string]any{"certificates": []any{map[string]string{"rawBytes": base64.StdEncoding.EncodeToString(block.Bytes)}}}
	} else {
		vm["publicKey"] = map[string]string{}
	}
	if rb := ann[annBundle]; rb != "" {
		var r struct {
			SignedEntryTimestamp string
			Payload              struct {
				Body           string `json:"body"`
				IntegratedTime int64  `json:"integratedTime"`
				LogIndex       int64  `json:"logIndex"`
				LogID          string `json:"logID"`
			}
		}
		if err := json.Unmarshal([]byte(rb), &r); err != nil {
			return nil, errors.New("the Rekor bundle annotation is not JSON")
		}
		body, err := base64.StdEncoding.DecodeString(r.Payload.Body)
		if err != nil {
			return nil, errors.New("the Rekor entry's body is not base64")
		}
		var kv struct {
			Kind       string `json:"kind"`
			APIVersion string `json:"apiVersion"`
		}
		if err := json.Unmarshal(body, &kv); err != nil {
			return nil, errors.New("the Rekor entry's body is not JSON")
		}
		logID, err := hex.DecodeString(r.Payload.LogID)
		if err != nil {
			return nil, errors.New("the Rekor entry's log ID is not hex")
		}
		vm["tlogEntries"] = []any{map[string]any{
			"logIndex":          strconv.FormatInt(r.Payload.LogIndex, 10),
			"logId":             map[string]string{"keyId": base64.StdEncoding.EncodeToString(logID)},
			"kindVersion":       map[string]string{"kind": kv.Kind, "version": kv.APIVersion},
			"integratedTime":    strconv.FormatInt(r.Payload.IntegratedTime, 10),
			"inclusionPromise":  map[string]string{"signedEntryTimestamp": r.SignedEntryTimestamp},
			"canonicalizedBody": r.Payload.Body,
		}}
	}
	data, err := json.Marshal(map[string]any{
		"mediaType":            "application/vnd.dev.sigstore.bundle+json;version=0.1",
		"verificationMaterial": vm,
		"messageSignature": map[string]any{
			"messageDigest": map[string]string{"algorithm": "SHA2_256", "digest": base64.StdEncoding.EncodeToString(sum[:])},
			"signature":     ann[annSignature],
		},
	})
	if err != nil {
		return nil, err
	}
	return parseBundle(data)
}
