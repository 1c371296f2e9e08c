package verify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"math/rand"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
	"fleetgen.dev/fleetgen/test/testenv"
)

// notationPolicy compiles one spec.verify entry for Notary Project
// signatures: trust store, identities and timestamp roots as PEM.
func notationPolicy(t *testing.T, store [][]byte, ids []string, tsa [][]byte) *verify.Policy {
	t.Helper()
	n := &schema.NotationVerify{Identities: ids}
	for _, c := range store {
		n.TrustStore = append(n.TrustStore, schema.FileRef{File: "ca.pem", Data: c})
	}
	for _, c := range tsa {
		n.TimestampRoots = append(n.TimestampRoots, schema.FileRef{File: "tsa.pem", Data: c})
	}
	ps, err := verify.Compile(&schema.Fleet{Spec: schema.Spec{Verify: []schema.VerifyPolicy{{Notation: n}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ps[0]
}

// TestNotationInterop: the real notation CLI signs images with a
// code-signing certificate of a test CA (its key in notation's
// signingkeys.json, as a Key Vault or signing service would hold it), in
// JWS and COSE, stored by the referrers tag schema (the distribution
// registry, which has no referrers API: notation's default) and by the
// referrers API (go-containerregistry's registry); fleetgen verifies them
// with notation-go under a policy whose trust store is the CA. It refuses a
// signature of another CA, of a subject none of the identities name, a
// signature moved onto another image (a signature of another digest), and
// one whose certificate has expired since, unless a timestamp authority the
// policy trusts countersigned it. Everything runs behind TestMain's
// recording proxy: no OCSP, CRL or other request leaves the machine.
func TestNotationInterop(t *testing.T) {
	notation := testenv.Tool(t, "notation")
	ca, otherCA := testenv.NewCA(t, "Contoso"), testenv.NewCA(t, "Mallory")
	release := ca.NotationKey(t, "Contoso", "release", time.Now().Add(time.Hour))
	tsa := testenv.NewTSA(t)
	distribution := testenv.Registry(t)
	inProcess := func() string {
		s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}()
	rng := rand.New(rand.NewSource(7))
	var rngMu sync.Mutex
	push := func(t *testing.T, host, repo string) name.Digest {
		t.Helper()
		rngMu.Lock()
		img, err := testenv.Image(rng, nil, 1, 512)
		rngMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		tag, err := name.NewTag(host + "/" + repo + ":1.0")
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(tag, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		return tag.Context().Digest(d.String())
	}
	sign := func(t *testing.T, s *testenv.NotationSigner, ref name.Digest, args ...string) {
		t.Helper()
		cmd := exec.Command(notation, append(append([]string{"sign", "--insecure-registry"}, args...), ref.String())...)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+s.Config, "HOME="+s.Config, "NOTATION_EXPERIMENTAL=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("notation sign %s: %v\n%s", ref, err, out)
		}
	}
	verdict := func(t *testing.T, p *verify.Policy, ref name.Digest, want verify.Reason) {
		t.Helper()
		d, err := v1.NewHash(ref.DigestStr())
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Image(context.Background(), ref.Context(), d)
		var ve *verify.Error
		switch {
		case want == "" && err != nil:
			t.Fatalf("refused: %v", err)
		case want == "":
			t.Logf("verified by signature %s", got.Signature)
		case !errors.As(err, &ve) || ve.Reason != want:
			t.Fatalf("err = %v, want %s", err, want)
		default:
			t.Logf("refused: %v", err)
		}
	}
	trust := notationPolicy(t, [][]byte{ca.PEM}, nil, nil)

	t.Run("jws, referrers tag schema", func(t *testing.T) {
		t.Parallel()
		ref := push(t, distribution, "contoso/jws")
		sign(t, release, ref)
		verdict(t, trust, ref, "")
		verdict(t, notationPolicy(t, [][]byte{ca.PEM}, []string{"x509.subject: C=US, ST=WA, O=Contoso, CN=release"}, nil), ref, "")
		verdict(t, notationPolicy(t, [][]byte{ca.PEM}, []string{"x509.subject: C=US, ST=WA, O=Contoso, CN=ops"}, nil), ref, verify.IdentityMismatch)
		verdict(t, notationPolicy(t, [][]byte{otherCA.PEM}, nil, nil), ref, verify.Untrusted)
	})
	t.Run("cose, referrers API", func(t *testing.T) {
		t.Parallel()
		ref := push(t, inProcess, "contoso/cose")
		sign(t, release, ref, "--signature-format", "cose", "--force-referrers-tag=false")
		verdict(t, trust, ref, "")
	})
	t.Run("another CA", func(t *testing.T) {
		t.Parallel()
		ref := push(t, distribution, "contoso/other-ca")
		sign(t, otherCA.NotationKey(t, "Contoso", "release", time.Now().Add(time.Hour)), ref)
		verdict(t, trust, ref, verify.Untrusted)
	})
	t.Run("a signature of another digest", func(t *testing.T) {
		t.Parallel()
		signed, victim := push(t, inProcess, "contoso/moved"), push(t, inProcess, "contoso/moved")
		sign(t, release, signed, "--force-referrers-tag=false")
		moveSignature(t, signed, victim)
		verdict(t, trust, victim, verify.DigestMismatch)
	})
	t.Run("expired certificate", func(t *testing.T) {
		t.Parallel()
		// Signing certificates valid for a few seconds, like a signing
		// service's short-lived ones; verified once they have expired.
		expires := time.Now().Add(4 * time.Second)
		plain, stamped := push(t, distribution, "contoso/expired"), push(t, distribution, "contoso/stamped")
		sign(t, ca.NotationKey(t, "Contoso", "release", expires), plain)
		tsaRoot := t.TempDir() + "/tsa.pem"
		if err := os.WriteFile(tsaRoot, tsa.Root.PEM, 0o600); err != nil {
			t.Fatal(err)
		}
		sign(t, ca.NotationKey(t, "Contoso", "release", expires), stamped, "--timestamp-url", tsa.URL, "--timestamp-root-cert", tsaRoot)
		withTSA := notationPolicy(t, [][]byte{ca.PEM}, nil, [][]byte{tsa.Root.PEM})
		verdict(t, trust, plain, "")
		time.Sleep(time.Until(expires) + time.Second)
		verdict(t, trust, plain, verify.Untrusted)
		verdict(t, withTSA, stamped, "")
		verdict(t, withTSA, plain, verify.Untrusted) // no timestamp
		verdict(t, notationPolicy(t, [][]byte{ca.PEM}, nil, [][]byte{otherCA.PEM}), stamped, verify.Untrusted)
	})
}

// moveSignature copies the Notary Project signature of signed (found by
// the referrers API) onto victim: the same envelope, its manifest's
// subject the victim's. The envelope still names signed's digest.
func moveSignature(t *testing.T, signed, victim name.Digest) {
	t.Helper()
	idx, err := remote.Referrers(signed)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("referrers of %s: %v, %v", signed, m, err)
	}
	got, err := remote.Get(signed.Context().Digest(m.Manifests[0].Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	var manifest map[string]any
	if err := json.Unmarshal(got.Manifest, &manifest); err != nil {
		t.Fatal(err)
	}
	head, err := remote.Head(victim)
	if err != nil {
		t.Fatal(err)
	}
	manifest["subject"] = map[string]any{"mediaType": head.MediaType, "digest": head.Digest.String(), "size": head.Size}
	raw, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(victim.Context().Digest(d.String()), rawManifest{raw, string(got.MediaType)}); err != nil {
		t.Fatal(err)
	}
}

type rawManifest struct {
	raw []byte
	mt  string
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.MediaType(m.mt), nil }

// TestNotationPolicyRefused: what notation-go refuses in a policy is an
// input error at its field: an identity without the attributes notation
// requires (C, ST and O).
func TestNotationPolicyRefused(t *testing.T) {
	t.Parallel()
	ca := testenv.NewCA(t, "Contoso")
	n := &schema.NotationVerify{
		TrustStore: []schema.FileRef{{File: "ca.pem", Data: ca.PEM}},
		Identities: []string{"x509.subject: C=US, ST=WA, O=Contoso", "x509.subject: CN=release"},
	}
	_, err := verify.Compile(&schema.Fleet{Spec: schema.Spec{Verify: []schema.VerifyPolicy{{Notation: n}}}}, nil)
	if err == nil || !strings.Contains(err.Error(), `spec.verify[0].notation.identities[1]: notation refuses the identity "x509.subject: CN=release"`) ||
		strings.Contains(err.Error(), "identities[0]") {
		t.Fatalf("err = %v, want identities[1] refused", err)
	}
}
