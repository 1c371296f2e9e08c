package schema

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGlobLinear is the attack of issue 38: a 31-character spec.verify
// glob of repeated ** segments against a long image name kept validate
// busy past 60 s with the backtracking matcher. Globs now compile to RE2,
// which matches in time linear in the name: every adversarial pattern here
// matches or fails under 100 ms.
func TestGlobLinear(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a/", 120) + strings.Repeat("a", 200) + "b"
	for _, g := range []string{
		strings.Repeat("**/", 10) + "*",         // 31 characters of ** segments
		strings.Repeat("**a", 10) + "c",         // stars that each could start anywhere
		strings.Repeat("*a", 15) + "c",          // single stars within one element
		"**" + strings.Repeat("*a**", 20) + "c", // *** is invalid; "*a**" repeats are not
	} {
		if why := GlobProblem(g); why != "" && !strings.Contains(why, "longer") {
			continue
		}
		re, err := GlobRegexp(g)
		if err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		start := time.Now()
		re.MatchString(long)
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("glob %q against a %d-character name took %v, want under 100ms", g, len(long), d)
		}
	}
}

// TestGlobRegexp keeps the glob's meaning: * within one path element, **
// across any number, everything else literally (a dot is a dot).
func TestGlobRegexp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		glob, repo string
		want       bool
	}{
		{"ghcr.io/contoso/**", "ghcr.io/contoso/app", true},
		{"ghcr.io/contoso/**", "ghcr.io/contoso/team/app", true},
		{"ghcr.io/contoso/**", "ghcr.io/contosox/app", false},
		{"ghcr.io/contoso/*", "ghcr.io/contoso/team/app", false},
		{"ghcr.io/contoso/*", "ghcr.io/contoso/app", true},
		{"ghcr.io/*/app", "ghcr.io/contoso/app", true},
		{"ghcr.io/**/app", "ghcr.io/app", false},
		{"ghcr.io/**app", "ghcr.io/app", true},
		{"ghcr.io/contoso/app", "ghcrxio/contoso/app", false},
		{"**", "anything/at/all", true},
		{"localhost:5000/x", "localhost:5000/x", true},
	} {
		re, err := GlobRegexp(tc.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := re.MatchString(tc.repo); got != tc.want {
			t.Errorf("%q matches %q: %v, want %v", tc.glob, tc.repo, got, tc.want)
		}
	}
}

// TestWeakKeys: a key file holding RSA under 2048 bits or a curve under
// P-256 is invalid input naming the file and the key's size (issue 38: RSA
// 512 and 1024 and P-224 were accepted).
func TestWeakKeys(t *testing.T) {
	t.Parallel()
	pemOf := func(k any) []byte {
		der, err := x509.MarshalPKIXPublicKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	rsaKey := func(bits int) any {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		return &k.PublicKey
	}
	ecKey := func(c elliptic.Curve) any {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return &k.PublicKey
	}
	edKey, _, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name string
		key  any
		want string // "" valid
	}{
		{"rsa-1024", rsaKey(1024), "holds a weak key (RSA, 1024 bits)"},
		{"rsa-2048", rsaKey(2048), ""},
		{"p-224", ecKey(elliptic.P224()), "holds a weak key (ECDSA P-224, 224 bits)"},
		{"p-256", ecKey(elliptic.P256()), ""},
		{"p-384", ecKey(elliptic.P384()), ""},
		{"ed25519", edKey, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "keys", tc.name+".pub"), string(pemOf(tc.key)))
			writeFile(t, filepath.Join(dir, "fleet.yaml"), `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: x}
spec:
  registry: {host: r.example}
  source: {kind: git, url: "https://example.com/x.git"}
  verify:
    - cosign:
        keys: [{file: keys/`+tc.name+`.pub}]
  clusters:
    - name: c
      registration: {mode: capi}
`)
			f, err := Load(filepath.Join(dir, "fleet.yaml"), LoadOptions{})
			if err == nil {
				Default(f)
				err = Validate(f)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			want := `fleet.yaml:9:23: spec.verify[0].cosign.keys[0].file: "keys/` + tc.name + `.pub" ` + tc.want
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v\nwant %s", err, want)
			}
		})
	}
}

// TestAnchoredWarning: a keyless subjectRegExp without ^ and $ draws a
// warning (issue 38: 'release@contoso\.example' verified a certificate for
// release@contoso.example.evil.example with no word from validate); one
// anchored at both ends draws none.
func TestAnchoredWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		re         string
		start, end bool
	}{
		{`release@contoso\.example`, false, false},
		{`^release@contoso\.example`, true, false},
		{`release@contoso\.example$`, false, true},
		{`^release@contoso\.example$`, true, true},
		{`^(a|b)$`, true, true},
		{`^a$|^b$`, true, true},
		{`^a$|b`, false, false},
		{`(?i)^a$`, true, true},
		{`^a\$`, true, false},
	} {
		start, end := Anchored(tc.re)
		if start != tc.start || end != tc.end {
			t.Errorf("Anchored(%q) = %v, %v; want %v, %v", tc.re, start, end, tc.start, tc.end)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(path, []byte(`apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: x}
spec:
  registry: {host: r.example}
  source: {kind: git, url: "https://example.com/x.git"}
  verify:
    - cosign:
        identities:
          - {issuer: "https://accounts.google.com", subjectRegExp: 'release@contoso\.example'}
          - {issuer: "https://accounts.google.com", subjectRegExp: '^release@contoso\.example$'}
  clusters:
    - name: c
      registration: {mode: capi}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	Default(f)
	if err := Validate(f); err != nil {
		t.Fatal(err)
	}
	ws := Warnings(f)
	if len(ws) != 1 || ws[0].Path != "spec.verify[0].cosign.identities[0].subjectRegExp" || ws[0].ErrorCode() != "unanchored-pattern" ||
		!strings.Contains(ws[0].Msg, "release@contoso.example.evil.example") {
		t.Fatalf("warnings = %v, want one for identities[0]", ws)
	}
}
