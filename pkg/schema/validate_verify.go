package schema

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"regexp/syntax"
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// VerifyPolicy is one entry of spec.verify (SPEC §4): the signatures the
// images it covers must carry before they are mirrored and published.
type VerifyPolicy struct {
	// Images are globs of source repositories (normalised, without tag or
	// digest: docker.io/library/busybox, ghcr.io/contoso/app); * matches
	// within one path element, ** across any number. Default all images.
	// The first policy whose globs match an image covers it. Docker Hub's
	// names (index.docker.io, registry-1.docker.io, registry.hub.docker.com,
	// short names) are docker.io to a glob as to an image.
	Images []string `json:"images,omitempty"`
	// Cosign accepts Sigstore signatures (cosign's).
	Cosign *CosignVerify `json:"cosign,omitempty"`
	// Notation accepts Notary Project signatures (notation's).
	Notation *NotationVerify `json:"notation,omitempty"`
}

// CosignVerify accepts a cosign signature made with one of Keys, or keyless
// by one of Identities (a Fulcio certificate, logged in Rekor). At least one
// of the two is set; any one verifying signature is enough.
type CosignVerify struct {
	// Keys are PEM public keys, {file: PATH} relative to fleet.yaml.
	Keys []FileRef `json:"keys,omitempty"`
	// Identities are the keyless signers accepted.
	Identities []KeylessIdentity `json:"identities,omitempty"`
	// TrustedRoot is the Sigstore trusted root (trusted_root.json) keyless
	// signatures are checked against, offline; default the public-good root
	// built into fleetgen.
	TrustedRoot *FileRef `json:"trustedRoot,omitempty"`
}

// KeylessIdentity is a Fulcio certificate's OIDC issuer and subject (its
// URI or email SAN): Subject exactly, or SubjectRegExp (RE2) matching it.
type KeylessIdentity struct {
	Issuer        string `json:"issuer"`
	Subject       string `json:"subject,omitempty"`
	SubjectRegExp string `json:"subjectRegExp,omitempty"`
}

// NotationVerify accepts a Notary Project signature (JWS or COSE, found as
// a referrer) whose signing certificate chains to one of TrustStore and
// whose subject is one of Identities.
type NotationVerify struct {
	// TrustStore are PEM files of X.509 CA certificates (roots or
	// intermediates), {file: PATH}: the signing certificate must chain to one.
	TrustStore []FileRef `json:"trustStore"`
	// Identities are trusted identities as notation's trust policy spells
	// them, "x509.subject: C=US, ST=WA, O=Contoso, CN=release"; default
	// any certificate that chains to the trust store.
	Identities []string `json:"identities,omitempty"`
	// TimestampRoots are PEM files of the roots of the timestamp
	// authorities (RFC 3161) signatures are countersigned by; with them a
	// signature must carry a timestamp, and its certificate may have
	// expired since.
	TimestampRoots []FileRef `json:"timestampRoots,omitempty"`
}

func init() {
	fieldDocs["spec.verify"] = fieldDoc{desc: "Signature policies: images a policy covers are mirrored and published only with a cosign or Notary Project signature that verifies, offline (SPEC §4).", example: []any{map[string]any{"images": []any{"ghcr.io/contoso/**"}, "cosign": map[string]any{"keys": []any{map[string]any{"file": "keys/cosign.pub"}}}}}}
	fieldDocs["spec.verify[].images"] = fieldDoc{desc: "Source repositories the policy covers, as globs (* within a path element, ** any depth), e.g. ghcr.io/contoso/**. Default all images; the first policy that matches an image covers it. Docker Hub is docker.io, whichever of its names an image uses.", example: []any{"ghcr.io/contoso/**"}}
	fieldDocs["spec.verify[].images[]"] = fieldDoc{desc: "A repository glob without tag or digest, e.g. ghcr.io/contoso/** or docker.io/library/*.", example: "ghcr.io/contoso/**"}
	fieldDocs["spec.verify[].cosign"] = fieldDoc{desc: "Which cosign (Sigstore) signatures verify: keys, keyless identities or both; any one is enough. A policy has cosign, notation or both.", example: map[string]any{"keys": []any{map[string]any{"file": "keys/cosign.pub"}}}}
	fieldDocs["spec.verify[].cosign.keys"] = fieldDoc{desc: "PEM public keys (cosign.pub): ECDSA P-256, P-384 or P-521, RSA of 2048 bits or more, or Ed25519.", example: []any{map[string]any{"file": "keys/cosign.pub"}}}
	fieldDocs["spec.verify[].cosign.keys[]"] = fieldDoc{desc: "A PEM public key file, {file: PATH} relative to fleet.yaml.", forms: formFile, example: map[string]any{"file": "keys/cosign.pub"}}
	fieldDocs["spec.verify[].cosign.identities"] = fieldDoc{desc: "Keyless signers: a Fulcio certificate from this OIDC issuer for this subject.", example: []any{map[string]any{"issuer": "https://token.actions.githubusercontent.com", "subjectRegExp": "^https://github\\.com/contoso/.*$"}}}
	fieldDocs["spec.verify[].cosign.identities[].issuer"] = fieldDoc{desc: "The OIDC issuer, e.g. https://token.actions.githubusercontent.com.", required: true, example: "https://token.actions.githubusercontent.com"}
	fieldDocs["spec.verify[].cosign.identities[].subject"] = fieldDoc{desc: "The certificate's subject (URI or email) exactly; or subjectRegExp.", example: "https://github.com/contoso/app/.github/workflows/release.yml@refs/heads/main"}
	fieldDocs["spec.verify[].cosign.identities[].subjectRegExp"] = fieldDoc{desc: "An RE2 regular expression the subject must match, anchored ^…$ (cosign matches it anywhere), e.g. ^https://github\\.com/contoso/.*$.", example: "^https://github\\.com/contoso/.*$"}
	fieldDocs["spec.verify[].cosign.trustedRoot"] = fieldDoc{desc: "A Sigstore trusted_root.json, {file: PATH}: the Fulcio, Rekor (v1 and v2), CT and timestamp authority keys keyless signatures are checked against, offline. Default the public-good root built into fleetgen.", forms: formFile, example: map[string]any{"file": "sigstore/trusted_root.json"}}
	fieldDocs["spec.verify[].notation"] = fieldDoc{desc: "Which Notary Project signatures (notation sign; JWS or COSE, as OCI referrers) verify. A policy has cosign, notation or both.", example: map[string]any{"trustStore": []any{map[string]any{"file": "notation/contoso-ca.pem"}}}}
	fieldDocs["spec.verify[].notation.trustStore"] = fieldDoc{desc: "PEM files of X.509 CA certificates the signing certificate must chain to (notation's trust store of type ca).", required: true, example: []any{map[string]any{"file": "notation/contoso-ca.pem"}}}
	fieldDocs["spec.verify[].notation.trustStore[]"] = fieldDoc{desc: "A PEM file of one or more CA certificates, {file: PATH} relative to fleet.yaml.", forms: formFile, example: map[string]any{"file": "notation/contoso-ca.pem"}}
	fieldDocs["spec.verify[].notation.identities"] = fieldDoc{desc: "Trusted identities as notation's trust policy spells them (the signing certificate's subject holds these attributes). Default any certificate that chains to the trust store.", example: []any{"x509.subject: C=US, ST=WA, O=Contoso, CN=release"}}
	fieldDocs["spec.verify[].notation.identities[]"] = fieldDoc{desc: "x509.subject: followed by a distinguished name (RFC 4514) with at least C, ST and O.", example: "x509.subject: C=US, ST=WA, O=Contoso, CN=release"}
	fieldDocs["spec.verify[].notation.timestampRoots"] = fieldDoc{desc: "PEM files of the root certificates of the RFC 3161 timestamp authorities signatures are countersigned by (notation sign --timestamp-url). With them every signature must carry a timestamp, and a certificate that has expired since still verifies.", example: []any{map[string]any{"file": "notation/tsa-root.pem"}}}
	fieldDocs["spec.verify[].notation.timestampRoots[]"] = fieldDoc{desc: "A PEM file of one or more root certificates, {file: PATH} relative to fleet.yaml.", forms: formFile, example: map[string]any{"file": "notation/tsa-root.pem"}}
}

// verifyRef is one {file:} reference of spec.verify.
type verifyRef struct {
	path string
	ref  *FileRef
}

// verifyRefs lists the {file:} references of spec.verify for Load to read.
func (f *Fleet) verifyRefs() []verifyRef {
	var out []verifyRef
	list := func(base string, refs []FileRef) {
		for k := range refs {
			out = append(out, verifyRef{fmt.Sprintf("%s[%d]", base, k), &refs[k]})
		}
	}
	for i := range f.Spec.Verify {
		base := fmt.Sprintf("spec.verify[%d]", i)
		if c := f.Spec.Verify[i].Cosign; c != nil {
			list(base+".cosign.keys", c.Keys)
			if c.TrustedRoot != nil {
				out = append(out, verifyRef{base + ".cosign.trustedRoot", c.TrustedRoot})
			}
		}
		if n := f.Spec.Verify[i].Notation; n != nil {
			list(base+".notation.trustStore", n.TrustStore)
			list(base+".notation.timestampRoots", n.TimestampRoots)
		}
	}
	return out
}

// verify checks spec.verify: each policy's globs, keys (readable PEM public
// keys, none weak) and identities (an issuer URL, one subject form, RE2 that
// compiles), and notation's trust stores (PEM CA certificates) and
// identities. The trusted root's content, notation's distinguished names
// and whether each glob matches an image of the fleet are checked where
// the policies are compiled (pkg/verify, run by pipeline), since they need
// more than fleet.yaml.
func (v *validator) verify() {
	for i, p := range v.f.Spec.Verify {
		path := fmt.Sprintf("spec.verify[%d]", i)
		for j, g := range p.Images {
			if why := GlobProblem(g); why != "" {
				v.add(problem.InvalidValue(fmt.Sprintf("%s.images[%d]", path, j), "invalid image glob %q: %s", g, why))
			}
		}
		if p.Cosign == nil && p.Notation == nil {
			v.add(problem.Required(path, "no cosign and no notation: want cosign (keys or keyless identities), notation (a trust store) or both"))
			continue
		}
		if c := p.Cosign; c != nil {
			v.cosign(path+".cosign", c)
		}
		if n := p.Notation; n != nil {
			v.notation(path+".notation", n)
		}
	}
}

func (v *validator) cosign(path string, c *CosignVerify) {
	if len(c.Keys) == 0 && len(c.Identities) == 0 {
		v.add(problem.Required(path, "no keys and no identities: want at least one PEM public key ({file: PATH}) or keyless identity (issuer and subject)"))
	}
	if c.TrustedRoot != nil {
		v.ref(path+".trustedRoot", c.TrustedRoot, formFile, false)
	}
	for k, ref := range c.Keys {
		kp := fmt.Sprintf("%s.keys[%d]", path, k)
		v.ref(kp, &c.Keys[k], formFile, false)
		if ref.Data == nil {
			continue // malformed or unreadable: reported here or by Load
		}
		if why := PublicKeyProblem(ref.Data); why != "" {
			v.add(problem.Other(kp+".file", "%q %s", ref.File, why))
		}
	}
	for k, id := range c.Identities {
		ip := fmt.Sprintf("%s.identities[%d]", path, k)
		if id.Issuer == "" {
			v.add(problem.Required(ip+".issuer", "issuer is required: want the OIDC issuer URL, e.g. https://token.actions.githubusercontent.com"))
		} else if u, err := url.Parse(id.Issuer); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			v.add(problem.InvalidValue(ip+".issuer", "invalid issuer %q: want the OIDC issuer URL, e.g. https://token.actions.githubusercontent.com", id.Issuer))
		}
		switch {
		case id.Subject == "" && id.SubjectRegExp == "":
			v.add(problem.Required(ip, "no subject: want subject (exact) or subjectRegExp (RE2), e.g. subjectRegExp: ^https://github\\.com/contoso/.+$"))
		case id.Subject != "" && id.SubjectRegExp != "":
			v.add(problem.Other(ip+".subjectRegExp", "subject and subjectRegExp both set: want one of them"))
		case id.SubjectRegExp != "":
			if _, err := regexp.Compile(id.SubjectRegExp); err != nil {
				v.add(problem.InvalidValue(ip+".subjectRegExp", "invalid regular expression %q: want RE2 syntax (%s)", id.SubjectRegExp, reProblem(err)))
			}
		}
	}
}

func (v *validator) notation(path string, n *NotationVerify) {
	if len(n.TrustStore) == 0 {
		v.add(problem.Required(path+".trustStore", "trustStore is required: want PEM files of the CA certificates signing certificates chain to, e.g. [{file: notation/contoso-ca.pem}]"))
	}
	certs := func(field string, refs []FileRef, roots bool) {
		for k, ref := range refs {
			rp := fmt.Sprintf("%s.%s[%d]", path, field, k)
			v.ref(rp, &refs[k], formFile, true)
			if ref.Data == nil || checkPEM(ref.Data) != "" {
				continue // reported by ref or Load
			}
			if why := CertificateProblem(ref.Data, roots); why != "" {
				v.add(problem.Other(rp+".file", "%q %s", ref.File, why))
			}
		}
	}
	certs("trustStore", n.TrustStore, false)
	certs("timestampRoots", n.TimestampRoots, true)
	for k, id := range n.Identities {
		ip := fmt.Sprintf("%s.identities[%d]", path, k)
		prefix, dn, ok := strings.Cut(id, ":")
		switch {
		case id == "*":
		case !ok || strings.TrimSpace(prefix) != "x509.subject":
			v.add(problem.InvalidValue(ip, "invalid identity %q: want x509.subject: followed by a distinguished name, e.g. \"x509.subject: C=US, ST=WA, O=Contoso, CN=release\", or * for any", id))
		case strings.TrimSpace(dn) == "":
			v.add(problem.InvalidValue(ip, "invalid identity %q: no distinguished name after x509.subject:, e.g. \"x509.subject: C=US, ST=WA, O=Contoso, CN=release\"", id))
		}
	}
}

// reProblem is regexp's complaint without the expression it quotes.
func reProblem(err error) string {
	var e *syntax.Error
	if errors.As(err, &e) {
		return string(e.Code)
	}
	return "does not compile"
}

// Anchored reports whether every match of an identity pattern (RE2) starts
// at ^ and ends at $: cosign and sigstore-go match a subjectRegExp anywhere
// in the subject, so 'release@contoso\.example' also accepts
// release@contoso.example.evil.example. A pattern that does not compile
// counts as anchored (Validate reports it).
func Anchored(pattern string) (start, end bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return true, true
	}
	return anchoredAt(re, syntax.OpBeginText, 0), anchoredAt(re, syntax.OpEndText, -1)
}

// anchoredAt reports whether every match of re starts (op OpBeginText, at
// 0) or ends (OpEndText, at -1) with the anchor op.
func anchoredAt(re *syntax.Regexp, op syntax.Op, at int) bool {
	switch re.Op {
	case op:
		return true
	case syntax.OpCapture:
		return anchoredAt(re.Sub[0], op, at)
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return false
		}
		if at < 0 {
			return anchoredAt(re.Sub[len(re.Sub)-1], op, at)
		}
		return anchoredAt(re.Sub[0], op, at)
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !anchoredAt(s, op, at) {
				return false
			}
		}
		return len(re.Sub) > 0
	}
	return false
}

// globRE is what a repository glob may hold: a reference's repository
// characters plus * (and : for a registry port).
var globRE = regexp.MustCompile(`^[a-z0-9*][a-z0-9._\-/:*]*$`)

// GlobProblem says why g is not a repository glob ("" when it is).
func GlobProblem(g string) string {
	switch {
	case g == "":
		return "empty: want a repository glob, e.g. ghcr.io/contoso/**"
	case len(g) > 255:
		return "longer than 255 characters: want a repository glob, e.g. ghcr.io/contoso/**"
	case strings.ContainsAny(g, "@"):
		return "a digest: want a repository without tag or digest, e.g. ghcr.io/contoso/**"
	case strings.Contains(g, "***"):
		return "*** : want * (within a path element) or ** (any depth)"
	case !globRE.MatchString(g):
		return "want lower case repository characters, / and * (within a path element) or ** (any depth), e.g. ghcr.io/contoso/**"
	}
	if last := g[strings.LastIndexByte(g, '/')+1:]; strings.Contains(last, ":") {
		return "a tag: want a repository without tag or digest, e.g. ghcr.io/contoso/**"
	}
	return ""
}

// GlobRegexp compiles a repository glob (GlobProblem says it is one) to the
// regular expression it means: * any run of characters but /, ** any run at
// all, the rest literally, anchored at both ends. Go's RE2 matches in time
// linear in the name: no pattern of stars backtracks.
func GlobRegexp(g string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); {
		switch {
		case strings.HasPrefix(g[i:], "**"):
			b.WriteString(".*")
			i += 2
		case g[i] == '*':
			b.WriteString("[^/]*")
			i++
		default:
			j := i
			for j < len(g) && g[j] != '*' {
				j++
			}
			b.WriteString(regexp.QuoteMeta(g[i:j]))
			i = j
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// MinRSABits is the smallest RSA key a policy may name (SPEC §4, and
// sigstore's and notation's own floor).
const MinRSABits = 2048

// PublicKeyProblem says why data is not one PEM public key fleetgen
// verifies with (ECDSA P-256 or larger, RSA of MinRSABits or more, or
// Ed25519), "" when it is. It never quotes data.
func PublicKeyProblem(data []byte) string {
	block, rest := pem.Decode(data)
	if block == nil {
		return "holds no PEM block: want a PEM PUBLIC KEY (cosign.pub)"
	}
	if block.Type != "PUBLIC KEY" {
		if strings.Contains(block.Type, "PRIVATE") {
			return "holds a private key: want the public key (cosign.pub), never the private one"
		}
		return "holds a PEM block that is not a PUBLIC KEY: want a PEM PUBLIC KEY (cosign.pub)"
	}
	if len(strings.TrimSpace(string(rest))) > 0 {
		return "holds more than one PEM block: want one public key per entry"
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return "holds a PUBLIC KEY block that does not parse: want a PKIX public key (cosign.pub)"
	}
	return weakKey(key)
}

// weakKey says why key is not one a signature may be verified with: a type
// fleetgen does not verify with, or too weak; "" when it is good.
func weakKey(key any) string {
	const want = "want ECDSA P-256, P-384 or P-521, RSA of at least 2048 bits, or Ed25519"
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		if n := k.Curve.Params().BitSize; n < 256 {
			return fmt.Sprintf("holds a weak key (ECDSA %s, %d bits): %s", k.Curve.Params().Name, n, want)
		}
		return ""
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < MinRSABits {
			return fmt.Sprintf("holds a weak key (RSA, %d bits): %s", n, want)
		}
		return ""
	case ed25519.PublicKey:
		return ""
	}
	return "holds a key type fleetgen does not verify with: " + want
}

// CertificateProblem says why the PEM certificates in data (checkPEM
// accepted them) cannot anchor Notary Project signatures, "" when they can:
// as notation's trust store holds them, each must be a CA certificate or a
// self-signed signing certificate (notation cert generate-test's), with
// roots a self-signed CA, and its key not weak. It names certificates by
// their place, never by their content.
func CertificateProblem(data []byte, roots bool) string {
	for n, rest := 1, data; ; n++ {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return ""
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return fmt.Sprintf("certificate %d does not parse", n)
		}
		selfSigned := c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil
		switch {
		case roots && (!c.IsCA || !selfSigned):
			return fmt.Sprintf("certificate %d is not a self-signed CA certificate: want the timestamp authority's root certificate", n)
		case !c.IsCA && !selfSigned:
			return fmt.Sprintf("certificate %d is neither a CA certificate nor self-signed: want the CA that issues the signing certificates (or a self-signed signing certificate)", n)
		}
		if why := weakKey(c.PublicKey); why != "" {
			return fmt.Sprintf("certificate %d %s", n, why)
		}
	}
}
