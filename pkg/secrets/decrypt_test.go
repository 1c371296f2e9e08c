package secrets

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/problem"
	"github.com/getsops/sops/v3/decrypt"
)

// exampleRecipient is the public key of examples/fleet-standalone/age.agekey
// (a TEST KEY).
const exampleRecipient = "age1gne576cyavj84680q0xqu4g47adgsxlsrk0u7pdschug8mvuuf0sqr749z"

func exampleIdentities(t testing.TB) *Identities {
	t.Helper()
	ids, err := LoadIdentities(filepath.Join("..", "..", "examples", "fleet-standalone", "age.agekey"))
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// forge does what anyone who can read the repository can: encrypt other
// content to the public recipient and copy the plaintext-hash annotation of
// the genuine sealed file.
func forge(t testing.TB, genuine []byte, plain []byte, recipients ...string) []byte {
	t.Helper()
	doc, err := parseYAML(genuine)
	if err != nil {
		t.Fatal(err)
	}
	phc, ok := annotation(doc, HashAnnotation)
	if !ok {
		t.Fatal("genuine file has no hash annotation")
	}
	out, err := encrypt(plain, recipients, phc, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDecryptCheckCatchesForgedSecret(t *testing.T) {
	const target = "manager/fleet/prod-0/kubeconfig.yaml"
	enc := testSOPS(exampleRecipient, otherRecipient)
	files := fleetFiles(t, 2, kubeconfigFor)
	genuine := mustSeal(t, files, enc, nil)
	attacker := kubeconfigSecret(t, "prod-0", fakeKubeconfig("prod-0", "ATTACKER-TOKEN-MARKER", "attacker-key")).Data

	tamper := map[string]func(f []byte) []byte{
		"other content encrypted to the recipients": func(f []byte) []byte {
			return forge(t, f, attacker, exampleRecipient, otherRecipient)
		},
		"other content encrypted to the CI key's recipient only, other stanza copied": func(f []byte) []byte {
			forged := forge(t, f, attacker, exampleRecipient)
			// Graft the genuine second stanza, so that the recipients match.
			i := bytes.Index(f, []byte("    - enc: |"))
			j := bytes.Index(f[i+1:], []byte("    - enc: |")) + i + 1
			k := bytes.Index(forged, []byte("  encrypted_regex:"))
			return append(append(append([]byte{}, forged[:k]...), f[j:bytes.Index(f, []byte("  encrypted_regex:"))]...), forged[k:]...)
		},
		"value of another file pasted": func(f []byte) []byte {
			other := byPath(genuine)["manager/fleet/prod-1/kubeconfig.yaml"].Data
			line := func(b []byte) []byte {
				i := bytes.Index(b, []byte("  value: ENC["))
				return b[i : i+bytes.IndexByte(b[i:], '\n')]
			}
			return bytes.Replace(f, line(f), line(other), 1)
		},
	}
	for name, tc := range tamper {
		t.Run(name, func(t *testing.T) {
			prev := map[string][]byte{}
			for _, f := range genuine {
				prev[f.Path] = f.Data
			}
			prev[target] = tc(prev[target])
			if !unchanged(prev[target], byPath(files)[target].Data, []string{exampleRecipient, otherRecipient}) {
				t.Fatal("the forgery does not pass the hash check: the test forges nothing")
			}
			previous := func(p string) ([]byte, bool) { b, ok := prev[p]; return b, ok }

			// Without a key the annotation is all there is: the forgery is
			// kept, as docs/secrets.md says.
			if out := byPath(mustSeal(t, files, enc, previous)); !bytes.Equal(out[target].Data, prev[target]) {
				t.Error("without a key the forged file was replaced: update docs/secrets.md")
			}

			var reported []string
			out, err := Seal(files, enc, previous, WithDecryptCheck(exampleIdentities(t), func(p string) { reported = append(reported, p) }))
			if err != nil {
				t.Fatal(err)
			}
			byP := byPath(out)
			if bytes.Equal(byP[target].Data, prev[target]) {
				t.Fatal("forged sealed Secret kept with a decryption key")
			}
			if strings.Join(reported, ",") != target {
				t.Errorf("reported %q, want %s", reported, target)
			}
			if p1 := "manager/fleet/prod-1/kubeconfig.yaml"; !bytes.Equal(byP[p1].Data, prev[p1]) {
				t.Errorf("genuine %s was not kept", p1)
			}
			t.Setenv("SOPS_AGE_KEY_FILE", filepath.Join("..", "..", "examples", "fleet-standalone", "age.agekey"))
			t.Setenv("SOPS_AGE_KEY", "")
			plain, err := decrypt.Data(byP[target].Data, "yaml")
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(plain, []byte("ATTACKER-TOKEN-MARKER")) {
				t.Error("the re-sealed file holds the attacker's content")
			}
		})
	}
}

func TestDecryptCheckKeepsGenuine(t *testing.T) {
	enc := testSOPS(exampleRecipient, otherRecipient)
	files := fleetFiles(t, 3, kubeconfigFor)
	first := mustSeal(t, files, enc, nil)
	var reported []string
	second, err := Seal(files, enc, previousOf(first), WithDecryptCheck(exampleIdentities(t), func(p string) { reported = append(reported, p) }))
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if !bytes.Equal(first[i].Data, second[i].Data) {
			t.Errorf("%s changed", first[i].Path)
		}
	}
	if len(reported) > 0 {
		t.Errorf("reported %q", reported)
	}
}

func TestDecryptCheckNeedsARecipientsKey(t *testing.T) {
	ids, err := ParseIdentities([]byte(readKey(t, "other.agekey")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Seal(fleetFiles(t, 1, kubeconfigFor), testSOPS(exampleRecipient), nil, WithDecryptCheck(ids, nil))
	var inv *problem.InvalidError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), "no identity for any of spec.encryption.sops.ageRecipients") {
		t.Fatalf("err = %v, want an input error", err)
	}
}

func TestIdentitiesErrorsQuoteNothing(t *testing.T) {
	_, err := ParseIdentities([]byte("AGE-SECRET-KEY-1SECRETMARKERSECRETMARKER\n"))
	if err == nil || strings.Contains(err.Error(), "SECRETMARKER") {
		t.Fatalf("err = %v", err)
	}
	_, err = LoadIdentities(filepath.Join(t.TempDir(), "missing.agekey"))
	if err == nil {
		t.Fatal("a missing key file loaded")
	}
}

// FuzzDecryptsTo feeds decryptsTo what a pull request can put in DIR: it
// must not panic, and the genuine file must keep verifying (the seed).
func FuzzDecryptsTo(f *testing.F) {
	files := fleetFiles(f, 1, kubeconfigFor)
	plain := byPath(files)["manager/fleet/prod-0/kubeconfig.yaml"].Data
	sealed := byPath(mustSeal(f, files, testSOPS(exampleRecipient), nil))["manager/fleet/prod-0/kubeconfig.yaml"].Data
	ids := exampleIdentities(f)
	if !decryptsTo(sealed, plain, ids) {
		f.Fatal("the genuine sealed file does not verify")
	}
	f.Add(sealed)
	f.Add([]byte("sops: {age: [{enc: x}], mac: y, lastmodified: z}\n"))
	f.Fuzz(func(t *testing.T, prev []byte) {
		decryptsTo(prev, plain, ids)
	})
}
