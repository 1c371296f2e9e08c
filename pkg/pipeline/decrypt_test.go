package pipeline

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/problem"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/decrypt"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/keyservice"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
)

// exampleKey is the TEST KEY of examples/fleet-standalone, the only identity
// for its recipient.
var exampleKey = filepath.Join("..", "..", "examples", "fleet-standalone", "age.agekey")

const (
	exampleRecipient = "age1gne576cyavj84680q0xqu4g47adgsxlsrk0u7pdschug8mvuuf0sqr749z"
	sealedPath       = "manager/fleet/my-cluster/kubeconfig.yaml"
	attackerMarker   = "ATTACKER-TOKEN-MARKER-4711"
)

// copyExample copies examples/fleet-standalone to a temporary folder.
func copyExample(t *testing.T) string {
	t.Helper()
	return copyTree(t, filepath.Join("..", "..", "examples", "fleet-standalone"))
}

// forgeWithSOPS does what anyone who reads the repository can: take the
// Secret's readable parts and its plaintext-hash annotation, put another
// kubeconfig in it and `sops --encrypt` it for the public recipient. The
// test decrypts the genuine file only to build a realistic forgery.
func forgeWithSOPS(t *testing.T, genuine []byte) []byte {
	t.Helper()
	t.Setenv("SOPS_AGE_KEY_FILE", exampleKey)
	t.Setenv("SOPS_AGE_KEY", "")
	plain, err := decrypt.Data(genuine, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	store := sopsyaml.NewStore(&config.YAMLStoreConfig{Indent: 2})
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range branches[0] {
		if it.Key == "data" {
			branches[0][i].Value = sops.TreeBranch{{Key: "value", Value: base64.StdEncoding.EncodeToString([]byte("token: " + attackerMarker + "\n"))}}
		}
	}
	mk, err := sopsage.MasterKeyFromRecipient(exampleRecipient)
	if err != nil {
		t.Fatal(err)
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups:      []sops.KeyGroup{{keys.MasterKey(mk)}},
		EncryptedRegex: "^(data|stringData)$",
		Version:        "3.13.3",
	}}
	key, errs := tree.GenerateDataKeyWithKeyServices([]keyservice.KeyServiceClient{keyservice.NewLocalClient()})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c := aes.NewCipher()
	mac, err := tree.Encrypt(key, c)
	if err != nil {
		t.Fatal(err)
	}
	tree.Metadata.LastModified = time.Unix(0, 0).UTC()
	if tree.Metadata.MessageAuthenticationCode, err = c.Encrypt(mac, key, tree.Metadata.LastModified.Format(time.RFC3339)); err != nil {
		t.Fatal(err)
	}
	out, err := store.EmitEncryptedFile(tree)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decrypt.Data(out, "yaml"); err != nil {
		t.Fatalf("the forgery does not decrypt with a valid MAC: %v", err)
	}
	os.Unsetenv("SOPS_AGE_KEY_FILE")
	return out
}

// TestForgedSealedSecret plants a sealed Secret encrypted for the public
// recipient with the genuine plaintext-hash annotation: without a key it
// passes (documented in docs/secrets.md); with the example's key, check
// reports it without showing plaintext, publish refuses, render replaces it.
func TestForgedSealedSecret(t *testing.T) {
	ctx := context.Background()
	root := copyExample(t)
	out := filepath.Join(t.TempDir(), "out")
	noEnv := func(string) (string, bool) { return "", false }
	cfg, ro := Config{File: filepath.Join(root, "fleet.yaml"), LookupEnv: noEnv}, RenderOptions{OutDir: out}
	if err := Render(ctx, cfg, ro); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(out, filepath.FromSlash(sealedPath))
	genuine, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := os.ReadFile(filepath.Join(root, "kubeconfigs", "my-cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	// The key is verified against a genuine tree first: no drift.
	withKey := cfg
	withKey.AgeKeyFile = exampleKey
	if d, err := Check(ctx, withKey, ro); err != nil || d != "" {
		t.Fatalf("check of the genuine tree with the key: %q, %v", d, err)
	}

	forged := forgeWithSOPS(t, genuine)
	if err := os.WriteFile(target, forged, 0o644); err != nil {
		t.Fatal(err)
	}

	// Without a key, the annotation is all fleetgen can check.
	if d, err := Check(ctx, cfg, ro); err != nil || d != "" {
		t.Fatalf("without a key: drift %q, %v (docs/secrets.md says a forgery passes)", d, err)
	}

	envKey := cfg
	envKey.LookupEnv = func(k string) (string, bool) {
		if k == "SOPS_AGE_KEY_FILE" {
			return exampleKey, true
		}
		return "", false
	}
	for name, c := range map[string]Config{"flag": withKey, "environment": envKey} {
		t.Run(name, func(t *testing.T) {
			d, err := Check(ctx, c, ro)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(d, "# "+sealedPath+": the sealed Secret does not decrypt to what fleet.yaml renders") {
				t.Errorf("check does not name the forged Secret:\n%s", d)
			}
			for _, leak := range []string{attackerMarker, base64.StdEncoding.EncodeToString([]byte("token: " + attackerMarker + "\n")), base64.StdEncoding.EncodeToString(kubeconfig)} {
				if strings.Contains(d, leak) {
					t.Errorf("the diff shows plaintext")
				}
			}
			_, err = Publish(ctx, c, PublishOptions{OutDir: out})
			if err == nil || !strings.Contains(err.Error(), "nothing pushed") || !strings.Contains(err.Error(), sealedPath) {
				t.Errorf("publish: %v, want a refusal naming %s", err, sealedPath)
			}
		})
	}

	if err := Render(ctx, withKey, ro); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) == string(forged) {
		t.Fatal("render with the key kept the forged ciphertext")
	}
	t.Setenv("SOPS_AGE_KEY_FILE", exampleKey)
	t.Setenv("SOPS_AGE_KEY", "")
	plain, err := decrypt.Data(after, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), base64.StdEncoding.EncodeToString([]byte("token: "+attackerMarker+"\n"))) {
		t.Error("the re-sealed Secret holds the forged content")
	}
	if d, err := Check(ctx, withKey, ro); err != nil || d != "" {
		t.Fatalf("check after render: %q, %v", d, err)
	}
}

func TestAgeKeyFileErrors(t *testing.T) {
	root := copyExample(t)
	cfg := Config{File: filepath.Join(root, "fleet.yaml"), LookupEnv: func(string) (string, bool) { return "", false }}
	bad := filepath.Join(t.TempDir(), "bad.agekey")
	if err := os.WriteFile(bad, []byte("AGE-SECRET-KEY-1NOTAKEYMARKER\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join("..", "secrets", "testdata", "other.agekey")
	for name, path := range map[string]string{"missing": filepath.Join(root, "none.agekey"), "not a key": bad, "no recipient's key": other} {
		t.Run(name, func(t *testing.T) {
			c := cfg
			c.AgeKeyFile = path
			_, err := Check(context.Background(), c, RenderOptions{OutDir: filepath.Join(t.TempDir(), "out")})
			var inv *problem.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("err = %v, want an input error (exit 2)", err)
			}
			if strings.Contains(err.Error(), "NOTAKEYMARKER") {
				t.Errorf("error quotes the key file: %v", err)
			}
		})
	}
}
