// Package verify adapts spec.verify's policies (SPEC §4) and the registry
// to the libraries that verify signatures, offline:
//
//   - Sigstore signatures (cosign's) with sigstore-go's verifier: bundles
//     v0.1 to v0.3 found as OCI referrers (cosign v3), with a key or keyless
//     (a Fulcio certificate, a Rekor v1 or v2 entry, signed timestamps),
//     against a trusted root read with root.NewTrustedRootFromJSON (the
//     public-good one built in, or the policy's); cosign's legacy
//     sha256-<hex>.sig layers are read as the v0.1 bundle they amount to,
//     and their payload's claim is checked as cosign checks it (sigstore.go);
//   - Notary Project signatures (notation's, JWS or COSE, found as OCI
//     referrers) with notation-go's verifier, against a trust policy and an
//     in-memory trust store built from the policy (notation.go).
//
// What is fleetgen's own is only the glue: which signatures an image has
// (oci.go, bounded), which policy covers it (linear-time globs, Docker
// Hub's names as one), and why a refusal is refused (Reason). Nothing is
// fetched but the signatures: no TUF, Rekor, Fulcio, OCSP or CRL request.
package verify

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Policy is one compiled spec.verify entry.
type Policy struct {
	// Name is its field path, spec.verify[N].
	Name string
	// Digest fingerprints what it accepts (globs, keys, identities, trusted
	// root, trust store), sha256:<hex>: the lock records it, so that a
	// changed policy shows in diff and makes mirror verify again.
	Digest string

	images   []string
	globs    []*regexp.Regexp
	cosign   *cosignPolicy
	notation *notationPolicy
}

// Policies are a fleet's spec.verify, in order: the first whose globs match
// an image covers it.
type Policies []*Policy

// Compile turns spec.verify into policies. It expects a validated fleet
// (keys parsed, patterns compiled) whose {file:} references Load read; what
// only the libraries can judge (the trusted root, notation's distinguished
// names) is checked here. builtin is the trusted root JSON for keyless
// policies that name none (nil: the public-good root built in). Errors are
// schema errors located at the field.
func Compile(f *schema.Fleet, builtin []byte) (Policies, error) {
	var out Policies
	var errs problem.Errors
	for i, sp := range f.Spec.Verify {
		path := fmt.Sprintf("spec.verify[%d]", i)
		if sp.Cosign == nil && sp.Notation == nil {
			errs = append(errs, f.At(problem.Required(path, "no cosign and no notation: want cosign (keys or keyless identities), notation (a trust store) or both")))
			continue
		}
		p := &Policy{Name: path, images: sp.Images}
		if len(p.images) == 0 {
			p.images = []string{"**"}
		}
		for j, g := range p.images {
			re, err := CompileGlob(g)
			if err != nil {
				errs = append(errs, f.At(problem.InvalidValue(fmt.Sprintf("%s.images[%d]", path, j), "invalid image glob %q: %s", g, schema.GlobProblem(g))))
				continue
			}
			p.globs = append(p.globs, re)
		}
		if sp.Cosign != nil {
			c, es := compileCosign(f, path+".cosign", sp.Cosign, builtin)
			errs = append(errs, es...)
			p.cosign = c
		}
		if sp.Notation != nil {
			n, es := compileNotation(f, path+".notation", sp.Notation)
			errs = append(errs, es...)
			p.notation = n
		}
		p.Digest = p.fingerprint()
		out = append(out, p)
	}
	if len(errs) > 0 {
		return nil, schema.Sorted(errs)
	}
	return out, nil
}

// fingerprint is the policy's Digest. A cosign-only policy's is what it
// was before notation (its lines unchanged), so that locks stay valid.
func (p *Policy) fingerprint() string {
	var b strings.Builder
	for _, g := range p.images {
		fmt.Fprintf(&b, "image %s\n", g)
	}
	if c := p.cosign; c != nil {
		for _, k := range c.keyIDs {
			fmt.Fprintf(&b, "key sha256:%s\n", k)
		}
		for _, id := range c.ids {
			fmt.Fprintf(&b, "identity %q %q %q\n", id.Issuer, id.Subject, id.SubjectRegExp)
		}
		if c.rootDigest != "" {
			fmt.Fprintf(&b, "root %s\n", c.rootDigest)
		}
	}
	if n := p.notation; n != nil {
		for _, c := range n.ca {
			fmt.Fprintf(&b, "notation ca %s\n", certID(c))
		}
		for _, id := range n.identities {
			fmt.Fprintf(&b, "notation identity %q\n", id)
		}
		for _, c := range n.tsa {
			fmt.Fprintf(&b, "notation tsa %s\n", certID(c))
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// certID is a certificate's SHA-256 fingerprint.
func certID(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// sortedIDs returns the SHA-256 of each DER, hex, sorted.
func sortedIDs(ders [][]byte) []string {
	out := make([]string, len(ders))
	for i, d := range ders {
		sum := sha256.Sum256(d)
		out[i] = hex.EncodeToString(sum[:])
	}
	sort.Strings(out)
	return out
}

// parseCerts reads every CERTIFICATE block of a PEM file (Validate checked
// its form).
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PEM certificate")
	}
	return out, nil
}

// For returns the policy that covers the source repository repo (a
// normalised reference without tag or digest), nil when none does. Docker
// Hub's names are one registry here (CanonicalRepo).
func (ps Policies) For(repo string) *Policy {
	repo = CanonicalRepo(repo)
	for _, p := range ps {
		if p.covers(repo) {
			return p
		}
	}
	return nil
}

// Covers reports whether one of the policy's globs matches repo.
func (p *Policy) Covers(repo string) bool { return p.covers(CanonicalRepo(repo)) }

func (p *Policy) covers(repo string) bool {
	for _, re := range p.globs {
		if re.MatchString(repo) {
			return true
		}
	}
	return false
}

// dockerHub are the names of Docker Hub's registry: one registry to a policy
// as to the mirror (docker.io is the one the lock writes).
var dockerHub = map[string]bool{"docker.io": true, "index.docker.io": true, "registry-1.docker.io": true, "registry.hub.docker.com": true}

// CanonicalRepo writes a repository (or a glob of repositories) as policies
// compare it: Docker Hub under docker.io whichever of its names it uses, its
// one-element names under library/, and a short name (no registry host
// before the first /) as Docker Hub's. A glob whose first element has a
// star is left alone.
func CanonicalRepo(repo string) string {
	host, path, ok := strings.Cut(repo, "/")
	switch {
	case !ok && !strings.Contains(repo, "*"):
		return "docker.io/library/" + repo
	case !ok:
		return repo
	case dockerHub[host]:
	case strings.Contains(host, "*") || strings.ContainsAny(host, ".:") || host == "localhost":
		return repo
	default:
		path = repo // a short name with a namespace: contoso/app
	}
	if !strings.Contains(path, "/") && !strings.Contains(path, "*") {
		path = "library/" + path
	}
	return "docker.io/" + path
}

// CompileGlob compiles a spec.verify image glob, Docker Hub's names made
// one (CanonicalRepo), to a regular expression that runs in time linear in
// the name (schema.GlobRegexp).
func CompileGlob(g string) (*regexp.Regexp, error) {
	if schema.GlobProblem(g) != "" {
		return nil, fmt.Errorf("invalid glob")
	}
	return schema.GlobRegexp(CanonicalRepo(g))
}

// Reason says why a signature did not verify.
type Reason string

// The reasons a signature is refused.
const (
	NoSignature      Reason = "no signature"
	WrongKey         Reason = "wrong key"
	IdentityMismatch Reason = "identity mismatch"
	DigestMismatch   Reason = "digest mismatch"
	Untrusted        Reason = "untrusted signature" // certificate chain, log entry, timestamp or SCT does not verify
	Malformed        Reason = "malformed signature"
)

// Error is a refusal: the policy and why.
type Error struct {
	Policy string
	Reason Reason
	// Detail says more, quoting what a registry served only through
	// inert.Quote.
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

// quoted bounds and quotes text a signature or a library's message about
// it holds (a certificate's subject, a log's complaint) for a message.
func quoted(s string) string {
	s, n := inert.Cut(s, 300)
	if n > 0 {
		s += "…"
	}
	return inert.Quote(s)
}
