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
	// The first policy whose globs match an image covers it.
	Images []string `json:"images,omitempty"`
	// Cosign says which signatures verify.
	Cosign *CosignVerify `json:"cosign"`
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

func init() {
	fieldDocs["spec.verify"] = fieldDoc{desc: "Signature policies: images a policy covers are mirrored and published only with a cosign signature that verifies, offline (SPEC §4).", example: []any{map[string]any{"images": []any{"ghcr.io/contoso/**"}, "cosign": map[string]any{"keys": []any{map[string]any{"file": "keys/cosign.pub"}}}}}}
	fieldDocs["spec.verify[].images"] = fieldDoc{desc: "Source repositories the policy covers, as globs (* within a path element, ** any depth), e.g. ghcr.io/contoso/**. Default all images; the first policy that matches an image covers it.", example: []any{"ghcr.io/contoso/**"}}
	fieldDocs["spec.verify[].images[]"] = fieldDoc{desc: "A repository glob without tag or digest, e.g. ghcr.io/contoso/** or docker.io/library/*.", example: "ghcr.io/contoso/**"}
	fieldDocs["spec.verify[].cosign"] = fieldDoc{desc: "Which cosign signatures verify: keys, keyless identities or both; any one is enough.", required: true, example: map[string]any{"keys": []any{map[string]any{"file": "keys/cosign.pub"}}}}
	fieldDocs["spec.verify[].cosign.keys"] = fieldDoc{desc: "PEM public keys (cosign.pub).", example: []any{map[string]any{"file": "keys/cosign.pub"}}}
	fieldDocs["spec.verify[].cosign.keys[]"] = fieldDoc{desc: "A PEM public key file, {file: PATH} relative to fleet.yaml.", forms: formFile, example: map[string]any{"file": "keys/cosign.pub"}}
	fieldDocs["spec.verify[].cosign.identities"] = fieldDoc{desc: "Keyless signers: a Fulcio certificate from this OIDC issuer for this subject.", example: []any{map[string]any{"issuer": "https://token.actions.githubusercontent.com", "subjectRegExp": "^https://github\\.com/contoso/.*$"}}}
	fieldDocs["spec.verify[].cosign.identities[].issuer"] = fieldDoc{desc: "The OIDC issuer, e.g. https://token.actions.githubusercontent.com.", required: true, example: "https://token.actions.githubusercontent.com"}
	fieldDocs["spec.verify[].cosign.identities[].subject"] = fieldDoc{desc: "The certificate's subject (URI or email) exactly; or subjectRegExp.", example: "https://github.com/contoso/app/.github/workflows/release.yml@refs/heads/main"}
	fieldDocs["spec.verify[].cosign.identities[].subjectRegExp"] = fieldDoc{desc: "An RE2 regular expression the subject must match, e.g. ^https://github\\.com/contoso/.", example: "^https://github\\.com/contoso/.*$"}
	fieldDocs["spec.verify[].cosign.trustedRoot"] = fieldDoc{desc: "A Sigstore trusted_root.json, {file: PATH}: the Fulcio, Rekor and CT keys keyless signatures are checked against, offline. Default the public-good root built into fleetgen.", forms: formFile, example: map[string]any{"file": "sigstore/trusted_root.json"}}
}

// verifyRefs lists the {file:} references of spec.verify for Load to read.
func (f *Fleet) verifyRefs() []struct {
	path string
	ref  *FileRef
} {
	var out []struct {
		path string
		ref  *FileRef
	}
	for i := range f.Spec.Verify {
		c := f.Spec.Verify[i].Cosign
		if c == nil {
			continue
		}
		base := fmt.Sprintf("spec.verify[%d].cosign", i)
		for k := range c.Keys {
			out = append(out, struct {
				path string
				ref  *FileRef
			}{fmt.Sprintf("%s.keys[%d]", base, k), &c.Keys[k]})
		}
		if c.TrustedRoot != nil {
			out = append(out, struct {
				path string
				ref  *FileRef
			}{base + ".trustedRoot", c.TrustedRoot})
		}
	}
	return out
}

// verify checks spec.verify: each policy's globs, keys (readable PEM public
// keys) and identities (an issuer URL, one subject form, RE2 that compiles).
// The trusted root's content and whether each glob matches an image of the
// fleet are checked where the layers are built (pipeline), since they need
// more than fleet.yaml.
func (v *validator) verify() {
	for i, p := range v.f.Spec.Verify {
		path := fmt.Sprintf("spec.verify[%d]", i)
		for j, g := range p.Images {
			if why := GlobProblem(g); why != "" {
				v.add(problem.InvalidValue(fmt.Sprintf("%s.images[%d]", path, j), "invalid image glob %q: %s", g, why))
			}
		}
		c := p.Cosign
		if c == nil {
			v.add(problem.Required(path+".cosign", "cosign is required: want keys, identities or both"))
			continue
		}
		if len(c.Keys) == 0 && len(c.Identities) == 0 {
			v.add(problem.Required(path+".cosign", "no keys and no identities: want at least one PEM public key ({file: PATH}) or keyless identity (issuer and subject)"))
		}
		if c.TrustedRoot != nil {
			v.ref(path+".cosign.trustedRoot", c.TrustedRoot, formFile, false)
		}
		for k, ref := range c.Keys {
			kp := fmt.Sprintf("%s.cosign.keys[%d]", path, k)
			v.ref(kp, &c.Keys[k], formFile, false)
			if ref.Data == nil {
				continue // malformed or unreadable: reported here or by Load
			}
			if why := PublicKeyProblem(ref.Data); why != "" {
				v.add(problem.Other(kp+".file", "%q %s", ref.File, why))
			}
		}
		for k, id := range c.Identities {
			ip := fmt.Sprintf("%s.cosign.identities[%d]", path, k)
			if id.Issuer == "" {
				v.add(problem.Required(ip+".issuer", "issuer is required: want the OIDC issuer URL, e.g. https://token.actions.githubusercontent.com"))
			} else if u, err := url.Parse(id.Issuer); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
				v.add(problem.InvalidValue(ip+".issuer", "invalid issuer %q: want the OIDC issuer URL, e.g. https://token.actions.githubusercontent.com", id.Issuer))
			}
			switch {
			case id.Subject == "" && id.SubjectRegExp == "":
				v.add(problem.Required(ip, "no subject: want subject (exact) or subjectRegExp (RE2), e.g. subjectRegExp: ^https://github\\.com/contoso/"))
			case id.Subject != "" && id.SubjectRegExp != "":
				v.add(problem.Other(ip+".subjectRegExp", "subject and subjectRegExp both set: want one of them"))
			case id.SubjectRegExp != "":
				if _, err := regexp.Compile(id.SubjectRegExp); err != nil {
					v.add(problem.InvalidValue(ip+".subjectRegExp", "invalid regular expression %q: want RE2 syntax (%s)", id.SubjectRegExp, reProblem(err)))
				}
			}
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

// globRE is what a repository glob may hold: a reference's repository
// characters plus * (and : for a registry port).
var globRE = regexp.MustCompile(`^[a-z0-9*][a-z0-9._\-/:*]*$`)

// GlobProblem says why g is not a repository glob ("" when it is).
func GlobProblem(g string) string {
	switch {
	case g == "":
		return "empty: want a repository glob, e.g. ghcr.io/contoso/**"
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

// GlobMatch reports whether the repository repo matches glob g: * matches
// any run of characters but /, ** any run at all.
func GlobMatch(g, repo string) bool {
	for len(g) > 0 {
		switch {
		case strings.HasPrefix(g, "**"):
			rest := g[2:]
			for i := len(repo); i >= 0; i-- {
				if GlobMatch(rest, repo[i:]) {
					return true
				}
			}
			return false
		case g[0] == '*':
			rest := g[1:]
			for i := 0; i <= len(repo); i++ {
				if GlobMatch(rest, repo[i:]) {
					return true
				}
				if i < len(repo) && repo[i] == '/' {
					break
				}
			}
			return false
		default:
			if len(repo) == 0 || repo[0] != g[0] {
				return false
			}
			g, repo = g[1:], repo[1:]
		}
	}
	return len(repo) == 0
}

// PublicKeyProblem says why data is not one PEM public key fleetgen
// verifies with (ECDSA, RSA or Ed25519), "" when it is. It never quotes data.
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
	switch key.(type) {
	case *ecdsa.PublicKey, *rsa.PublicKey, ed25519.PublicKey:
		return ""
	}
	return "holds a key type fleetgen does not verify with: want ECDSA, RSA or Ed25519"
}
