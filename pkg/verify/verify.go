// Package verify checks cosign signatures of container images against
// spec.verify's policies (SPEC §4), offline: Sigstore bundles found as OCI
// referrers (cosign v3) and cosign's legacy sha256-<hex>.sig signatures,
// made with a key or keyless (a Fulcio certificate logged in Rekor).
//
// Keyless signatures are checked against a trusted root (trusted_root.json,
// default the public-good one built in): the certificate chains to a Fulcio
// CA of the root at the time the Rekor entry's signed timestamp proves, its
// SCT verifies with a CT log key, the Rekor entry's inclusion promise (and
// proof, when there is one) verifies with the log's key and the entry is
// this signature's. Nothing is fetched but the signatures themselves: no
// TUF, no Rekor or Fulcio request.
//
// The checks follow sigstore-go's verifier (pkg/verify), which the tests run
// side by side on every signature they verify and which must give the same
// verdict (sigstore_test.go; go test -run 'Sigstore|TestImage|SCT' -v
// ./pkg/verify shows each pair); fleetgen does not link it, because its
// packages pull in a TUF client, Rekor's REST client and gRPC (about 16 MB
// of binary) that offline verification never calls.
package verify

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Policy is one compiled spec.verify entry.
type Policy struct {
	// Name is its field path, spec.verify[N].
	Name string
	// Digest fingerprints what it accepts (globs, keys, identities, trusted
	// root), sha256:<hex>: the lock records it, so that a changed policy
	// shows in diff and makes mirror verify again.
	Digest string

	images     []string
	keys       []crypto.PublicKey
	identities []identity
	root       *TrustedRoot
}

type identity struct {
	issuer    string
	subject   string
	subjectRE *regexp.Regexp
}

// Policies are a fleet's spec.verify, in order: the first whose globs match
// an image covers it.
type Policies []*Policy

// Compile turns spec.verify into policies. It expects a validated fleet
// (keys parsed, patterns compiled) whose {file:} references Load read; the
// trusted root's content is checked here. builtin is the trusted root for
// policies that name none (nil: PublicGood). Errors are schema errors
// located at the field.
func Compile(f *schema.Fleet, builtin *TrustedRoot) (Policies, error) {
	var out Policies
	var errs problem.Errors
	for i, sp := range f.Spec.Verify {
		path := fmt.Sprintf("spec.verify[%d]", i)
		if sp.Cosign == nil {
			errs = append(errs, f.At(problem.Required(path+".cosign", "cosign is required: want keys, identities or both")))
			continue
		}
		p := &Policy{Name: path, images: sp.Images}
		if len(p.images) == 0 {
			p.images = []string{"**"}
		}
		for k, ref := range sp.Cosign.Keys {
			key, err := parsePublicKey(ref.Data)
			if err != nil {
				errs = append(errs, f.At(problem.Other(fmt.Sprintf("%s.cosign.keys[%d].file", path, k), "%q %s", ref.File, schema.PublicKeyProblem(ref.Data))))
				continue
			}
			p.keys = append(p.keys, key)
		}
		for k, id := range sp.Cosign.Identities {
			ci := identity{issuer: id.Issuer, subject: id.Subject}
			if id.SubjectRegExp != "" {
				re, err := regexp.Compile(id.SubjectRegExp)
				if err != nil {
					errs = append(errs, f.At(problem.InvalidValue(fmt.Sprintf("%s.cosign.identities[%d].subjectRegExp", path, k), "invalid regular expression %q: want RE2 syntax", id.SubjectRegExp)))
					continue
				}
				ci.subjectRE = re
			}
			p.identities = append(p.identities, ci)
		}
		switch {
		case sp.Cosign.TrustedRoot != nil:
			tr, err := ParseTrustedRoot(sp.Cosign.TrustedRoot.Data)
			if err != nil {
				errs = append(errs, f.At(problem.Other(path+".cosign.trustedRoot.file", "%q: %v: want Sigstore's trusted_root.json (`cosign trusted-root create`, or the one your Sigstore instance publishes)", sp.Cosign.TrustedRoot.File, err)))
				continue
			}
			p.root = tr
		case len(p.identities) > 0:
			tr := builtin
			if tr == nil {
				var err error
				if tr, err = PublicGood(); err != nil {
					return nil, fmt.Errorf("the built-in trusted root: %w", err)
				}
			}
			p.root = tr
		}
		p.Digest = p.fingerprint()
		out = append(out, p)
	}
	if len(errs) > 0 {
		return nil, schema.Sorted(errs)
	}
	return out, nil
}

// fingerprint is the policy's Digest.
func (p *Policy) fingerprint() string {
	var b strings.Builder
	for _, g := range p.images {
		fmt.Fprintf(&b, "image %s\n", g)
	}
	var keys []string
	for _, k := range p.keys {
		der, _ := x509.MarshalPKIXPublicKey(k)
		sum := sha256.Sum256(der)
		keys = append(keys, hex.EncodeToString(sum[:]))
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "key sha256:%s\n", k)
	}
	for _, id := range p.identities {
		re := ""
		if id.subjectRE != nil {
			re = id.subjectRE.String()
		}
		fmt.Fprintf(&b, "identity %q %q %q\n", id.issuer, id.subject, re)
	}
	if p.root != nil {
		fmt.Fprintf(&b, "root %s\n", p.root.digest)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// For returns the policy that covers the source repository repo (a
// normalised reference without tag or digest), nil when none does.
func (ps Policies) For(repo string) *Policy {
	for _, p := range ps {
		if p.Covers(repo) {
			return p
		}
	}
	return nil
}

// Covers reports whether one of the policy's globs matches repo.
func (p *Policy) Covers(repo string) bool {
	for _, g := range p.images {
		if schema.GlobMatch(g, repo) {
			return true
		}
	}
	return false
}

// Reason says why a signature did not verify.
type Reason string

// The reasons a signature is refused.
const (
	NoSignature      Reason = "no signature"
	WrongKey         Reason = "wrong key"
	IdentityMismatch Reason = "identity mismatch"
	DigestMismatch   Reason = "digest mismatch"
	Untrusted        Reason = "untrusted signature" // certificate, log entry or SCT does not verify
	Malformed        Reason = "malformed signature"
)

// Error is a refusal: the policy and why.
type Error struct {
	Policy string
	Reason Reason
	// Detail says more, quoting nothing a registry served but digests.
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("policy %s: %s", e.Policy, e.Reason)
	}
	return fmt.Sprintf("policy %s: %s: %s", e.Policy, e.Reason, e.Detail)
}

func refuse(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// check verifies one signature of the image whose manifest digest is
// image against p. A nil error means the signature verifies.
func (p *Policy) check(e *entity, image v1.Hash) *Error {
	signed := false
	if len(p.keys) > 0 {
		for _, k := range p.keys {
			if verifySignature(k, e) == nil {
				signed = true
				break
			}
		}
	}
	if !signed {
		switch {
		case e.cert == nil && len(p.keys) == 0:
			return refuse(WrongKey, "signed with a key; the policy accepts keyless signatures only")
		case e.cert == nil:
			return refuse(WrongKey, "no key of the policy verifies the signature (another key, or an altered payload)")
		case len(p.identities) == 0:
			return refuse(WrongKey, "a keyless signature; the policy accepts keys only")
		}
		if err := p.keyless(e); err != nil {
			return err
		}
	}
	return bind(e, image)
}

// keyless verifies a certificate-based signature: the signature with the
// certificate's key, the Rekor entries (the time they prove), the chain
// to a Fulcio CA at that time, the SCT, and last the identity.
func (p *Policy) keyless(e *entity) *Error {
	if err := verifySignature(e.cert.PublicKey, e); err != nil {
		return refuse(Malformed, "the signature does not verify with its own certificate (an altered payload)")
	}
	times, err := p.root.verifyTlog(e)
	if err != nil {
		return refuse(Untrusted, "%v", err)
	}
	chain, err := p.root.verifyChain(e.cert, times)
	if err != nil {
		return refuse(Untrusted, "%v", err)
	}
	if len(p.root.ctlogs) > 0 {
		if err := p.root.verifySCT(e.cert, chain); err != nil {
			return refuse(Untrusted, "%v", err)
		}
	}
	issuer, subject := certIdentity(e.cert)
	if subject == "" {
		return refuse(IdentityMismatch, "the certificate names no subject (no URI, email or Fulcio username)")
	}
	for _, id := range p.identities {
		if id.issuer != issuer {
			continue
		}
		if (id.subjectRE != nil && id.subjectRE.MatchString(subject)) || (id.subjectRE == nil && id.subject == subject) {
			return nil
		}
	}
	return refuse(IdentityMismatch, "signed by %s (issuer %s), which no identity of the policy accepts", printable(subject), printable(issuer))
}

// printable bounds and escapes text taken from a certificate for a message.
func printable(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// Fulcio's certificate extensions for the OIDC issuer (v2: a DER UTF8String,
// v1: the raw string), and the otherName type of its username SAN.
var (
	oidIssuerV1      = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
	oidIssuerV2      = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
	oidOtherNameUser = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 7}
)

// certIdentity returns a Fulcio certificate's OIDC issuer and subject (the
// first URI or email SAN, else its username otherName SAN), as sigstore-go
// summarises a certificate.
func certIdentity(c *x509.Certificate) (issuer, subject string) {
	for _, ext := range c.Extensions {
		switch {
		case ext.Id.Equal(oidIssuerV2):
			var s string
			if rest, err := asn1.UnmarshalWithParams(ext.Value, &s, "utf8"); err == nil && len(rest) == 0 {
				issuer = s
			}
		case ext.Id.Equal(oidIssuerV1) && issuer == "":
			issuer = string(ext.Value)
		}
	}
	switch {
	case len(c.URIs) > 0:
		subject = c.URIs[0].String()
	case len(c.EmailAddresses) > 0:
		subject = c.EmailAddresses[0]
	default:
		subject = otherNameSAN(c)
	}
	return issuer, subject
}

// otherNameSAN returns the one Fulcio username of c's SAN extensions (an
// otherName of type 1.3.6.1.4.1.57264.1.7 holding a UTF8String), "" when
// there is none, more than one, or another otherName (sigstore's
// cryptoutils.UnmarshalOtherNameSAN refuses those alike).
func otherNameSAN(c *x509.Certificate) string {
	var names []string
	for _, ext := range c.Extensions {
		if !ext.Id.Equal(oidSAN) {
			continue
		}
		in := cryptobyte.String(ext.Value)
		var seq cryptobyte.String
		if !in.ReadASN1(&seq, cbasn1.SEQUENCE) || !in.Empty() {
			return ""
		}
		for !seq.Empty() {
			var gn cryptobyte.String
			var tag cbasn1.Tag
			if !seq.ReadAnyASN1(&gn, &tag) {
				return ""
			}
			if tag != cbasn1.Tag(0).Constructed().ContextSpecific() {
				continue
			}
			// OtherName ::= SEQUENCE { type-id OID, value [0] EXPLICIT ANY }
			// under an IMPLICIT [0] tag.
			var oid asn1.ObjectIdentifier
			var val, str cryptobyte.String
			if !gn.ReadASN1ObjectIdentifier(&oid) || !oid.Equal(oidOtherNameUser) ||
				!gn.ReadASN1(&val, cbasn1.Tag(0).Constructed().ContextSpecific()) || !gn.Empty() ||
				!val.ReadASN1(&str, cbasn1.UTF8String) || !val.Empty() {
				return ""
			}
			names = append(names, string(str))
		}
	}
	if len(names) != 1 {
		return ""
	}
	return names[0]
}

// verifySignature checks e's signature with key.
func verifySignature(key crypto.PublicKey, e *entity) error {
	if e.env != nil {
		return verifyMessage(key, e.env.pae(), e.env.sig)
	}
	if e.message != nil {
		return verifyMessage(key, e.message, e.sig)
	}
	return verifyDigest(key, e.digest, e.sig)
}

// verifyMessage checks sig over msg: ECDSA and RSA (PKCS #1 v1.5 or PSS) over
// its SHA-256 (SHA-384 and SHA-512 for P-384 and P-521 keys, as Sigstore's
// algorithm registry pairs them, with SHA-256 tried as cosign does), Ed25519
// over msg itself.
func verifyMessage(key crypto.PublicKey, msg, sig []byte) error {
	if k, ok := key.(ed25519.PublicKey); ok {
		if ed25519.Verify(k, msg, sig) {
			return nil
		}
		return errors.New("ed25519 signature does not verify")
	}
	sum := sha256.Sum256(msg)
	if verifyDigest(key, sum[:], sig) == nil {
		return nil
	}
	if k, ok := key.(*ecdsa.PublicKey); ok {
		switch k.Curve.Params().BitSize {
		case 384:
			s := sha512.Sum384(msg)
			return verifyDigest(key, s[:], sig)
		case 521:
			s := sha512.Sum512(msg)
			return verifyDigest(key, s[:], sig)
		}
	}
	return errors.New("signature does not verify")
}

// verifyDigest checks sig over a digest (SHA-256, -384 or -512 by length).
func verifyDigest(key crypto.PublicKey, digest, sig []byte) error {
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		if ecdsa.VerifyASN1(k, digest, sig) {
			return nil
		}
	case *rsa.PublicKey:
		h := map[int]crypto.Hash{32: crypto.SHA256, 48: crypto.SHA384, 64: crypto.SHA512}[len(digest)]
		if h == 0 {
			break
		}
		if rsa.VerifyPKCS1v15(k, h, digest, sig) == nil || rsa.VerifyPSS(k, h, digest, sig, nil) == nil {
			return nil
		}
	}
	return errors.New("signature does not verify")
}

// The in-toto statement cosign v3 signs for an image.
const (
	intotoPayloadType      = "application/vnd.in-toto+json"
	cosignSignPredicate    = "https://sigstore.dev/cosign/sign/v1"
	simpleSigningType      = "cosign container image signature"
	inTotoStatementTypeV01 = "https://in-toto.io/Statement/v0.1"
	inTotoStatementTypeV1  = "https://in-toto.io/Statement/v1"
)

// bind checks that what was signed is this image: the simple-signing
// payload's docker-manifest-digest, the in-toto statement's subject, or the
// message digest equals the image's manifest digest.
func bind(e *entity, image v1.Hash) *Error {
	if image.Algorithm != "sha256" {
		return refuse(DigestMismatch, "the image digest is not sha256")
	}
	switch {
	case e.env != nil:
		if e.env.payloadType != intotoPayloadType {
			return refuse(Malformed, "a DSSE envelope that is not an in-toto statement")
		}
		var st struct {
			Type    string `json:"_type"`
			Subject []struct {
				Digest map[string]string `json:"digest"`
			} `json:"subject"`
			PredicateType string `json:"predicateType"`
		}
		if err := json.Unmarshal(e.env.payload, &st); err != nil {
			return refuse(Malformed, "the in-toto statement does not parse")
		}
		if st.Type != inTotoStatementTypeV1 && st.Type != inTotoStatementTypeV01 {
			return refuse(Malformed, "not an in-toto statement")
		}
		if st.PredicateType != cosignSignPredicate {
			return refuse(NoSignature, "an attestation (predicate type %s), not a signature (%s)", printable(st.PredicateType), cosignSignPredicate)
		}
		for _, s := range st.Subject {
			if s.Digest["sha256"] == image.Hex {
				return nil
			}
		}
		return refuse(DigestMismatch, "the statement's subject is another digest than %s", image)
	case e.message != nil:
		var ss struct {
			Critical struct {
				Image struct {
					Digest string `json:"docker-manifest-digest"`
				} `json:"image"`
				Type string `json:"type"`
			} `json:"critical"`
		}
		if err := json.Unmarshal(e.message, &ss); err != nil {
			return refuse(Malformed, "the simple-signing payload does not parse")
		}
		if ss.Critical.Type != simpleSigningType {
			return refuse(Malformed, "the payload is not a cosign container image signature")
		}
		if ss.Critical.Image.Digest != image.String() {
			return refuse(DigestMismatch, "the payload's docker-manifest-digest is another digest than %s", image)
		}
		return nil
	default:
		if hex.EncodeToString(e.digest) != image.Hex {
			return refuse(DigestMismatch, "the bundle's message digest is another digest than %s", image)
		}
		return nil
	}
}

func parsePublicKey(data []byte) (crypto.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("no PEM PUBLIC KEY")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	switch k.(type) {
	case *ecdsa.PublicKey, *rsa.PublicKey, ed25519.PublicKey:
		return k, nil
	}
	return nil, errors.New("unsupported key type")
}
