package secrets

import (
	"crypto/rand"
	"regexp"
	"testing"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
)

// sopsEncryptWith encrypts plain (in format) with SOPS's own library under
// meta's rule, as `sops --encrypt` does, and emits it.
func sopsEncryptWith(t testing.TB, format formats.Format, plain []byte, meta sops.Metadata) []byte {
	t.Helper()
	store := common.StoreForFormat(format, config.NewStoresConfig())
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	meta.Version = sopsVersion
	meta.LastModified = time.Unix(0, 0).UTC()
	meta.KeyGroups = []sops.KeyGroup{{&sopsage.MasterKey{Recipient: testRecipient, EncryptedKey: "x"}}}
	tree := sops.Tree{Branches: branches, Metadata: meta}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	mac, err := tree.Encrypt(key, aes.NewCipher())
	if err != nil {
		t.Fatal(err)
	}
	if tree.Metadata.MessageAuthenticationCode, err = aes.NewCipher().Encrypt(mac, key, meta.LastModified.Format(time.RFC3339)); err != nil {
		t.Fatal(err)
	}
	out, err := store.EmitEncryptedFile(tree)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSOPSRules: a file counts as SOPS-encrypted only when every value
// SOPS's own rule encrypts is an envelope (issue 39, item 4). SOPS itself
// encrypts each document under each rule: that passes; the same file with
// one value SOPS encrypted put back in plaintext does not; a value the rule
// leaves in plaintext does not count against it; a rule under which SOPS
// encrypts nothing, and a sops stanza with a MAC over plaintext, are not
// encryption.
func TestSOPSRules(t *testing.T) {
	t.Parallel()
	const doc = `# a file of values
password: hunter2
public: hello
name_plain: n
# plaintext: shown as it is
shown: s
nested:
    # sops:enc
    secret_key: k
    list: [a, b]
`
	const env = "password=hunter2\npublic_plain=hello\n# plaintext\nshown=s\n"
	for name, tc := range map[string]struct {
		format formats.Format
		plain  string
		meta   sops.Metadata
		want   bool
	}{
		"default rule":                     {formats.Yaml, doc, sops.Metadata{}, true},
		"unencrypted_suffix":               {formats.Yaml, doc, sops.Metadata{UnencryptedSuffix: "_plain"}, true},
		"encrypted_suffix":                 {formats.Yaml, doc, sops.Metadata{EncryptedSuffix: "word"}, true},
		"unencrypted_regex":                {formats.Yaml, doc, sops.Metadata{UnencryptedRegex: "^public$"}, true},
		"encrypted_regex":                  {formats.Yaml, doc, sops.Metadata{EncryptedRegex: "^(password|secret_key)$"}, true},
		"unencrypted_comment_regex":        {formats.Yaml, doc, sops.Metadata{UnencryptedCommentRegex: "plaintext"}, true},
		"encrypted_comment_regex":          {formats.Yaml, "# sops:enc\npassword: hunter2\nother: o\n", sops.Metadata{EncryptedCommentRegex: "sops:enc"}, true},
		"mac_only_encrypted":               {formats.Yaml, doc, sops.Metadata{EncryptedRegex: "^password$", MACOnlyEncrypted: true}, true},
		"JSON":                             {formats.Json, `{"password": "hunter2", "n": 1, "ok": true}`, sops.Metadata{}, true},
		"dotenv":                           {formats.Dotenv, env, sops.Metadata{UnencryptedSuffix: "_plain"}, true},
		"dotenv unencrypted_comment_regex": {formats.Dotenv, env, sops.Metadata{UnencryptedCommentRegex: "plaintext"}, true},
		"a rule that encrypts nothing":     {formats.Yaml, doc, sops.Metadata{EncryptedRegex: "^nothing$"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			enc := sopsEncryptWith(t, tc.format, []byte(tc.plain), tc.meta)
			if got := sopsFile(enc); got != tc.want {
				t.Fatalf("sopsFile = %v, want %v for what SOPS wrote:\n%s", got, tc.want, enc)
			}
			if !tc.want {
				return
			}
			// password is encrypted under every rule above: put it back.
			re := regexp.MustCompile(`(?m)^(\s*"?password"?\s*[:=]\s*)"?ENC\[[^\]]*\]"?`)
			if !re.Match(enc) {
				t.Fatalf("password is not encrypted:\n%s", enc)
			}
			plain := re.ReplaceAll(enc, []byte(`${1}"hunter2"`))
			if tc.format == formats.Dotenv {
				plain = re.ReplaceAll(enc, []byte(`${1}hunter2`))
			}
			if sopsFile(plain) {
				t.Errorf("a plaintext value SOPS encrypts passes:\n%s", plain)
			}
		})
	}
	for name, data := range map[string]string{
		"a MAC over plaintext (the issue's case)": "password: hunter2\nsops:\n  mac: ENC[AES256_GCM,data:AAAA,iv:BBBB,tag:CCCC,type:str]\n  age: [{recipient: age1x, enc: x}]\n",
		"a MAC that is no envelope":               "password: ENC[AES256_GCM,data:AAAA,iv:BBBB,tag:CCCC,type:str]\nsops: {mac: x}\n",
		"two rules":                               "password: ENC[AES256_GCM,data:AAAA,iv:BBBB,tag:CCCC,type:str]\nsops: {mac: 'ENC[AES256_GCM,data:A,iv:B,tag:C,type:str]', encrypted_regex: ^password$, unencrypted_suffix: _x}\n",
		"a plaintext value in a list":             "l: [ENC[AES256_GCM,data:A,iv:B,tag:C,type:str], plain]\nsops: {mac: 'ENC[AES256_GCM,data:A,iv:B,tag:C,type:str]'}\n",
		"dotenv with a MAC over plaintext":        "password=hunter2\nsops_mac=ENC[AES256_GCM,data:A,iv:B,tag:C,type:str]\n",
		"dotenv unencrypted by a forged suffix":   "password=hunter2\nsops_unencrypted_suffix=word\nsops_mac=ENC[AES256_GCM,data:A,iv:B,tag:C,type:str]\n",
	} {
		if sopsFile([]byte(data)) {
			t.Errorf("%s: counts as SOPS-encrypted", name)
		}
	}
}
