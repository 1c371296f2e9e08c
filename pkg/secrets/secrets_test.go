package secrets

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/decrypt"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

func kubeconfigFor(cluster string) []byte {
	return fakeKubeconfig(cluster, "fake-token-"+cluster, "fake-key-"+cluster)
}

func byPath(files []layout.File) map[string]layout.File {
	m := make(map[string]layout.File, len(files))
	for _, f := range files {
		m[f.Path] = f
	}
	return m
}

func previousOf(files []layout.File) func(string) ([]byte, bool) {
	m := byPath(files)
	return func(p string) ([]byte, bool) {
		f, ok := m[p]
		return f.Data, ok
	}
}

func mustSeal(t testing.TB, files []layout.File, enc *schema.SOPS, prev func(string) ([]byte, bool)) []layout.File {
	t.Helper()
	out, err := Seal(files, enc, prev)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return out
}

func TestSealRoundTripFlux(t *testing.T) {
	files := fleetFiles(t, 2, kubeconfigFor)
	sealed := mustSeal(t, files, testSOPS(testRecipient, otherRecipient), nil)
	if err := Scan(sealed, false); err != nil {
		t.Fatalf("Scan of sealed output: %v", err)
	}

	for _, f := range sealed {
		if !bytes.HasPrefix(f.Data, []byte(layout.Header)) {
			t.Errorf("%s does not start with layout.Header", f.Path)
		}
		if f.Secret && bytes.Contains(f.Data, []byte(base64.StdEncoding.EncodeToString(kubeconfigFor("prod-0")))) {
			t.Errorf("%s holds the plaintext", f.Path)
		}
	}

	tests := map[string]struct {
		key     string
		wantErr bool
	}{
		"recipient identity":    {key: readKey(t, "age.agekey")},
		"second recipient":      {key: readKey(t, "other.agekey")},
		"unrelated identity":    {key: unrelatedKey, wantErr: true},
		"no identity in secret": {key: "", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			secret := map[string]string{"age.agekey": tc.key}
			if tc.key == "" {
				secret = map[string]string{"identity.asc": "not an age key"}
			}
			res, err := fluxApply(t, sealed, secret)
			if tc.wantErr {
				if err == nil {
					t.Fatal("decrypted with the wrong identity")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []string{"prod-0", "prod-1"} {
				r := res[c+"-kubeconfig"]
				if r == nil {
					t.Fatalf("no Secret %s-kubeconfig in the build", c)
				}
				got, err := base64.StdEncoding.DecodeString(r.GetDataMap()["value"])
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(kubeconfigFor(c)), string(got)); diff != "" {
					t.Errorf("%s: decrypted kubeconfig (-want +got):\n%s", c, diff)
				}
				if r.Field("sops") != nil {
					t.Errorf("%s: sops metadata left after decryption", c)
				}
				if got := r.GetLabels()["cluster.x-k8s.io/cluster-name"]; got != c {
					t.Errorf("%s: cluster-name label = %q", c, got)
				}
			}
		})
	}
}

// unrelatedKey is the identity of examples/fleet-standalone/age.agekey, for
// which nothing in this test is sealed. TEST KEY — never use for real secrets.
const unrelatedKey = "AGE-SECRET-KEY-1UF53N5TK3QP929MJW5U6GCPD8XET64MVSH6VXUR5ZY3VUDFKY7MQN037JU"

// TestSealDecryptWithMAC decrypts each sealed file as `sops --decrypt`
// does, which also checks the MAC (and so the hash annotation) and needs the
// header comment to survive parsing.
func TestSealDecryptWithMAC(t *testing.T) {
	files := fleetFiles(t, 1, kubeconfigFor)
	sealed := mustSeal(t, files, testSOPS(testRecipient), nil)
	t.Setenv("SOPS_AGE_KEY", readKey(t, "age.agekey"))
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	in := byPath(files)
	for _, f := range sealed {
		if !f.Secret {
			continue
		}
		plain, err := decrypt.Data(f.Data, "yaml")
		if err != nil {
			t.Fatalf("%s: sops decrypt: %v", f.Path, err)
		}
		if !bytes.HasPrefix(plain, []byte(layout.Header)) {
			t.Errorf("%s: decrypted file lost the header", f.Path)
		}
		// The plaintext is the input plus the hash annotation (sops -d
		// re-indents: compare objects).
		var want, got map[string]any
		if err := yaml.Unmarshal(in[f.Path].Data, &want); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(plain, &got); err != nil {
			t.Fatal(err)
		}
		meta := got["metadata"].(map[string]any)
		if _, ok := meta["annotations"].(map[string]any)[HashAnnotation]; !ok {
			t.Errorf("%s: no %s annotation", f.Path, HashAnnotation)
		}
		delete(meta, "annotations")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: decrypted object (-want +got):\n%s", f.Path, diff)
		}

		// Editing the plaintext hash annotation breaks the MAC.
		tampered := bytes.Replace(f.Data, []byte("$argon2id$v=19$"), []byte("$argon2id$v=19$ "), 1)
		if _, err := decrypt.Data(tampered, "yaml"); err == nil {
			t.Errorf("%s: MAC does not cover the hash annotation", f.Path)
		}
	}
}

func removeLine(s, substr string) string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

func TestSealStable(t *testing.T) {
	enc := testSOPS(testRecipient)
	files := fleetFiles(t, 3, kubeconfigFor)
	first := mustSeal(t, files, enc, nil)
	second := mustSeal(t, files, enc, previousOf(first))
	if diff := cmp.Diff(first, second); diff != "" {
		t.Fatalf("re-render with unchanged input changed output (-first +second):\n%s", diff)
	}

	// One kubeconfig changes: only its file changes.
	changed := fleetFiles(t, 3, func(c string) []byte {
		if c == "prod-1" {
			return fakeKubeconfig(c, "rotated-token", "rotated-key")
		}
		return kubeconfigFor(c)
	})
	third := mustSeal(t, changed, enc, previousOf(second))
	if got, want := diffPaths(second, third), []string{"manager/fleet/prod-1/kubeconfig.yaml"}; !cmp.Equal(got, want) {
		t.Errorf("changed files = %v, want %v", got, want)
	}

	// Another recipient list re-encrypts every Secret and rewrites .sops.yaml.
	fourth := mustSeal(t, changed, testSOPS(otherRecipient, testRecipient), previousOf(third))
	want := []string{".sops.yaml", "manager/fleet/prod-0/kubeconfig.yaml", "manager/fleet/prod-1/kubeconfig.yaml", "manager/fleet/prod-2/kubeconfig.yaml"}
	if got := diffPaths(third, fourth); !cmp.Equal(got, want) {
		t.Errorf("after a recipient change, changed files = %v, want %v", got, want)
	}
	// Recipient order in fleet.yaml does not matter.
	fifth := mustSeal(t, changed, testSOPS(testRecipient, otherRecipient, testRecipient), previousOf(fourth))
	if got := diffPaths(fourth, fifth); len(got) != 0 {
		t.Errorf("reordered recipients changed %v", got)
	}
}

func TestSealKeepsOnlyValidPrevious(t *testing.T) {
	enc := testSOPS(testRecipient)
	files := fleetFiles(t, 1, kubeconfigFor)
	first := mustSeal(t, files, enc, nil)
	const p = "manager/fleet/prod-0/kubeconfig.yaml"
	prev := byPath(first)[p].Data
	tests := map[string][]byte{
		"hash edited":       phcRe.ReplaceAll(prev, []byte("${1}AAAA$2")),
		"annotation gone":   []byte(removeLine(string(prev), HashAnnotation)),
		"other cost":        bytes.Replace(prev, []byte("m=64,t=1"), []byte("m=32,t=1"), 1),
		"no header":         bytes.TrimPrefix(prev, []byte(layout.Header)),
		"recipient removed": bytes.Replace(prev, []byte("recipient: "+testRecipient), []byte("recipient: "+otherRecipient), 1),
		"plaintext":         byPath(files)[p].Data,
		"garbage":           []byte(layout.Header + "{{{"),
	}
	for name, old := range tests {
		t.Run(name, func(t *testing.T) {
			out := mustSeal(t, files, enc, func(string) ([]byte, bool) { return old, true })
			got := byPath(out)[p].Data
			if bytes.Equal(got, old) {
				t.Fatal("kept a previous file that does not match")
			}
			if bytes.Equal(got, prev) {
				t.Fatal("expected a fresh encryption")
			}
		})
	}
}

var phcRe = regexp.MustCompile(`(\$argon2id\$v=19\$m=\d+,t=\d+,p=\d+\$)(.*)`)

func TestHashCost(t *testing.T) {
	basic := []byte(strings.Replace(string(fakeKubeconfig("c", "short", "k")), "    client-key-data:", "    username: admin\n    password: hunter2\n    x-key-data:", 1))
	tests := map[string]struct {
		kubeconfig []byte
		want       string
	}{
		"private key":      {kubeconfigFor("c"), "$argon2id$v=19$m=64,t=1,p=1$"},
		"long token":       {fakeKubeconfig("c", strings.Repeat("t", 40), "k"), "$argon2id$v=19$m=64,t=1,p=1$"},
		"basic auth":       {basic, "$argon2id$v=19$m=19456,t=2,p=1$"},
		"not a kubeconfig": {[]byte("{{"), "$argon2id$v=19$m=19456,t=2,p=1$"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := kubeconfigSecret(t, "c", tc.kubeconfig)
			out := mustSeal(t, []layout.File{f}, testSOPS(testRecipient), nil)
			sealed := byPath(out)[f.Path].Data
			if !bytes.Contains(sealed, []byte(HashAnnotation+": "+tc.want)) {
				t.Errorf("hash annotation does not use %s", tc.want)
			}
			again := mustSeal(t, []layout.File{f}, testSOPS(testRecipient), previousOf(out))
			if !bytes.Equal(byPath(again)[f.Path].Data, sealed) {
				t.Error("unchanged Secret re-encrypted")
			}
		})
	}
}

func diffPaths(a, b []layout.File) []string {
	am, bm := byPath(a), byPath(b)
	var out []string
	for _, f := range b {
		if old, ok := am[f.Path]; !ok || !bytes.Equal(old.Data, f.Data) {
			out = append(out, f.Path)
		}
	}
	for _, f := range a {
		if _, ok := bm[f.Path]; !ok {
			out = append(out, f.Path)
		}
	}
	return out
}

func TestSealWithoutEncryption(t *testing.T) {
	files := fleetFiles(t, 1, kubeconfigFor)
	for name, enc := range map[string]*schema.SOPS{"nil": nil, "no recipients": {}} {
		t.Run(name, func(t *testing.T) {
			out := mustSeal(t, files, enc, nil)
			if diff := cmp.Diff(files, out); diff != "" {
				t.Errorf("Seal changed files without encryption (-want +got):\n%s", diff)
			}
			err := Scan(out, false)
			if !problem.IsInvalid(err) {
				t.Fatalf("Scan of plaintext credentials = %v, want an input error", err)
			}
		})
	}
}

func TestSealBadRecipient(t *testing.T) {
	files := fleetFiles(t, 1, kubeconfigFor)
	_, err := Seal(files, testSOPS(testRecipient, "age1notarecipient"), nil)
	if !problem.IsInvalid(err) || !strings.Contains(err.Error(), "ageRecipients[1]") {
		t.Fatalf("Seal with a bad recipient = %v, want an input error naming ageRecipients[1]", err)
	}
}

func TestSealOutputSortedAndConfig(t *testing.T) {
	files := fleetFiles(t, 2, kubeconfigFor)
	out := mustSeal(t, files, testSOPS(otherRecipient, testRecipient), nil)
	for i := 1; i < len(out); i++ {
		if out[i-1].Path >= out[i].Path {
			t.Fatalf("output not sorted: %s before %s", out[i-1].Path, out[i].Path)
		}
	}
	if out[0].Path != ConfigPath || !bytes.HasPrefix(out[0].Data, []byte(layout.Header)) {
		t.Fatalf("first file = %s, want %s starting with the header", out[0].Path, ConfigPath)
	}
	want := layout.Header + `creation_rules:
  - path_regex: (^|/)manager/fleet/[^/]+/kubeconfig\.yaml$
    encrypted_regex: ^(data|stringData)$
    age: ` + testRecipient + `,` + otherRecipient + `
stores:
  yaml:
    indent: 2
`
	if diff := cmp.Diff(want, string(out[0].Data)); diff != "" {
		t.Errorf(".sops.yaml (-want +got):\n%s", diff)
	}

	// sops itself picks the rule for a sealed file, by absolute or relative path.
	dir := t.TempDir()
	cfg := filepath.Join(dir, ConfigPath)
	if err := os.WriteFile(cfg, out[0].Data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "manager/fleet/prod-0/kubeconfig.yaml"), "deploy/manager/fleet/prod-0/kubeconfig.yaml"} {
		c, err := config.LoadCreationRuleForFile(cfg, p, nil)
		if err != nil || c == nil {
			t.Fatalf("sops creation rule for %s: %v %v", p, c, err)
		}
		if c.EncryptedRegex != EncryptedRegex {
			t.Errorf("encrypted_regex = %q", c.EncryptedRegex)
		}
		var got []string
		for _, k := range c.KeyGroups[0] {
			got = append(got, k.ToString())
		}
		if diff := cmp.Diff([]string{testRecipient, otherRecipient}, got); diff != "" {
			t.Errorf("recipients (-want +got):\n%s", diff)
		}
	}
}

// TestExampleKey proves the example's test key decrypts what fleetgen seals for
// the public recipient written in it.
func TestExampleKey(t *testing.T) {
	b, err := os.ReadFile("../../examples/fleet-standalone/age.agekey")
	if err != nil {
		t.Fatal(err)
	}
	key := string(b)
	if !strings.Contains(key, "# TEST KEY — never use for real secrets") {
		t.Error("example key is not marked as a test key")
	}
	_, pub, ok := strings.Cut(key, "# public key: ")
	if !ok {
		t.Fatal("example key states no public key")
	}
	pub, _, _ = strings.Cut(pub, "\n")
	sealed := mustSeal(t, fleetFiles(t, 1, kubeconfigFor), testSOPS(pub), nil)
	res, err := fluxApply(t, sealed, map[string]string{"age.agekey": key})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := base64.StdEncoding.DecodeString(res["prod-0-kubeconfig"].GetDataMap()["value"])
	if !bytes.Equal(got, kubeconfigFor("prod-0")) {
		t.Error("example key does not decrypt to the input kubeconfig")
	}
}

func TestSealerDeterministicSalts(t *testing.T) {
	files := fleetFiles(t, 2, kubeconfigFor)
	s := sealer{rand: bytes.NewReader(make([]byte, 64)), now: func() time.Time { return time.Unix(0, 0) }, workers: 2}
	out, err := s.seal(files, testSOPS(testRecipient), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range out {
		if f.Secret && !bytes.Contains(f.Data, []byte("$AAAAAAAAAAAAAAAAAAAAAA$")) {
			t.Errorf("%s: salt not from the given reader", f.Path)
		}
		if f.Secret && !bytes.Contains(f.Data, []byte(`lastmodified: "1970-01-01T00:00:00Z"`)) {
			t.Errorf("%s: lastmodified not from the given clock", f.Path)
		}
	}
	short := sealer{rand: bytes.NewReader(make([]byte, 3)), now: time.Now, workers: 1}
	if _, err := short.seal(files, testSOPS(testRecipient), nil); err == nil {
		t.Error("a failing random source was not reported")
	}
	_ = fmt.Sprint
}
