package verify

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"

	"github.com/notaryproject/notation-core-go/revocation"
	"github.com/notaryproject/notation-core-go/revocation/result"
	"github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Notary Project signatures (notation's), verified by notation-go's
// verifier under a trust policy built from spec.verify[].notation: level
// strict (integrity, authenticity, trusted identity, expiry and authentic
// timestamp enforced) with revocation skipped, since verification is
// offline (no OCSP or CRL request: a revoked signer is removed from the
// trust store or the identities instead); the trust store (type ca) and
// the timestamp roots (type tsa) are the policy's certificates, in memory.
// With timestamp roots every signature must carry a timestamp of a trusted
// authority (notation's verifyTimestamp: always), which lets a signing
// certificate that has expired since verify; without them the signing
// certificate must be valid now.

// NotationArtifactType is the artifact type of a Notary Project signature
// manifest, a referrer of the image it signs.
const NotationArtifactType = "application/vnd.cncf.notary.signature"

// Envelope media types of Notary Project signatures.
const (
	notationJWS  = "application/jose+json"
	notationCOSE = "application/cose"
)

// notationStore is the trust store's name in the trust policy.
const notationStore = "fleetgen"

// notationPolicy is a policy's notation part, ready for notation-go.
type notationPolicy struct {
	v          notation.Verifier
	ca, tsa    []*x509.Certificate
	identities []string
}

func compileNotation(f *schema.Fleet, path string, sn *schema.NotationVerify) (*notationPolicy, problem.Errors) {
	var errs problem.Errors
	n := &notationPolicy{}
	read := func(field string, refs []schema.FileRef) []*x509.Certificate {
		var out []*x509.Certificate
		for k, ref := range refs {
			cs, err := parseCerts(ref.Data)
			if err != nil {
				errs = append(errs, f.At(problem.InvalidValue(fmt.Sprintf("%s.%s[%d].file", path, field, k), "%q holds no certificate that parses: want PEM CA certificates", ref.File)))
				continue
			}
			out = append(out, cs...)
		}
		return out
	}
	n.ca = read("trustStore", sn.TrustStore)
	n.tsa = read("timestampRoots", sn.TimestampRoots)
	n.identities = sn.Identities
	if len(n.identities) == 0 {
		n.identities = []string{"*"}
	}
	// notation-go judges each identity (an RFC 4514 name with C, ST and O):
	// one at a time, so that its complaint lands on the field.
	for k, id := range sn.Identities {
		if _, err := trustDocument([]string{id}, false); err != nil {
			errs = append(errs, f.At(problem.InvalidValue(fmt.Sprintf("%s.identities[%d]", path, k), "notation refuses the identity %q (%s): want \"x509.subject: C=US, ST=WA, O=Contoso, CN=release\" (C, ST and O required), or *", id, quoted(err.Error()))))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	doc, err := trustDocument(n.identities, len(n.tsa) > 0)
	if err != nil {
		return nil, append(errs, f.At(problem.Other(path, "notation refuses the trust policy: %s", quoted(err.Error()))))
	}
	v, err := verifier.NewWithOptions(doc, n, nil, verifier.VerifierOptions{
		RevocationCodeSigningValidator:  offline{},
		RevocationTimestampingValidator: offline{},
	})
	if err != nil {
		return nil, append(errs, f.At(problem.Other(path, "notation refuses the trust policy: %s", quoted(err.Error()))))
	}
	n.v = v
	return n, nil
}

// trustDocument is notation's trust policy for the identities, validated.
func trustDocument(identities []string, tsa bool) (*trustpolicy.Document, error) {
	stores := []string{"ca:" + notationStore}
	if tsa {
		stores = append(stores, "tsa:"+notationStore)
	}
	doc := &trustpolicy.Document{
		Version: "1.0",
		TrustPolicies: []trustpolicy.TrustPolicy{{
			Name:           "fleetgen",
			RegistryScopes: []string{"*"}, // spec.verify's globs choose the images
			SignatureVerification: trustpolicy.SignatureVerification{
				VerificationLevel: trustpolicy.LevelStrict.Name,
				Override:          map[trustpolicy.ValidationType]trustpolicy.ValidationAction{trustpolicy.TypeRevocation: trustpolicy.ActionSkip},
				VerifyTimestamp:   trustpolicy.OptionAlways,
			},
			TrustStores:       stores,
			TrustedIdentities: identities,
		}},
	}
	return doc, doc.Validate()
}

// GetCertificates is notation's truststore.X509TrustStore: the policy's
// CA certificates and timestamp roots, by type.
func (n *notationPolicy) GetCertificates(_ context.Context, t truststore.Type, name string) ([]*x509.Certificate, error) {
	if name != notationStore {
		return nil, truststore.TrustStoreError{Msg: "unknown trust store"}
	}
	switch t {
	case truststore.TypeCA:
		return n.ca, nil
	case truststore.TypeTSA:
		return n.tsa, nil
	}
	return nil, nil
}

// offline is the revocation check of an offline verifier: it asks no OCSP
// responder or CRL distribution point and reports every certificate as one
// without a revocation method (which notation counts as not revoked). The
// trust policy skips revocation of signing certificates; notation-go checks
// a timestamp authority's chain regardless, through this.
type offline struct{}

func (offline) ValidateContext(_ context.Context, o revocation.ValidateContextOptions) ([]*result.CertRevocationResult, error) {
	out := make([]*result.CertRevocationResult, len(o.CertChain))
	for i := range out {
		out[i] = &result.CertRevocationResult{Result: result.ResultNonRevokable}
	}
	return out, nil
}

// verify checks one Notary Project signature envelope (of media type mt)
// of the image target, named ref. A nil error means it verifies.
func (n *notationPolicy) verify(ctx context.Context, ref string, target ocispec.Descriptor, envelope []byte, mt string) *Error {
	if mt != notationJWS && mt != notationCOSE {
		return refuse(Malformed, "the envelope is not JWS or COSE")
	}
	outcome, err := n.v.Verify(ctx, target, envelope, notation.VerifierVerifyOptions{ArtifactReference: ref, SignatureMediaType: mt})
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case msg == "content descriptor mismatch":
		return refuse(DigestMismatch, "the signature is of another artifact than %s", target.Digest)
	case outcome == nil:
		return refuse(Malformed, "notation-go: %s", quoted(msg))
	}
	var failed trustpolicy.ValidationType
	for _, r := range outcome.VerificationResults {
		if r.Error != nil && r.Action == trustpolicy.ActionEnforce {
			failed = r.Type
			break
		}
	}
	switch {
	case failed == trustpolicy.TypeIntegrity:
		return refuse(Malformed, "notation-go: %s", quoted(msg))
	case strings.Contains(msg, "trusted identities"):
		return refuse(IdentityMismatch, "the signing certificate's subject is none of the policy's identities (notation-go: %s)", quoted(msg))
	}
	return refuse(Untrusted, "notation-go: %s", quoted(msg))
}
