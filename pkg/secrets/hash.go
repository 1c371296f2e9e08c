package secrets

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/argon2"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// HashAnnotation is the plaintext annotation each sealed Secret carries: a
// salted argon2id hash (PHC string format) of the Secret's plaintext file and
// its sorted age recipients. Seal compares a new render against it to keep the
// previous ciphertext; it lets nobody decrypt anything, and guessing the
// plaintext from it costs one argon2id evaluation per guess (see paramsFor). SOPS's MAC
// covers it, so `sops --decrypt` detects an edited hash.
const HashAnnotation = "fleetgen.dev/plaintext-hash"

// argonParams are argon2id cost parameters; the PHC string records them.
type argonParams struct {
	time    uint32
	memory  uint32 // KiB
	threads uint8
}

// The cost of the hash depends on what it protects. The hash covers the whole
// plaintext, so guessing any part of it means guessing all of it: when the
// kubeconfig holds a private key or a long bearer token, no guess succeeds at
// any cost, and a light setting keeps 10,000 unchanged Secrets cheap to check.
// Otherwise (a username and password, an exec plugin with secrets in its
// environment, a short token) each guess costs argon2id at the OWASP password
// storage setting. Changing either re-encrypts the Secrets concerned once.
// See docs/secrets.md.
var (
	paramsUnguessable = argonParams{time: 1, memory: 64, threads: 1}
	paramsGuessable   = argonParams{time: 2, memory: 19 * 1024, threads: 1}
)

const (
	argonKeyLen = 32
	saltLen     = 16
)

// paramsFor picks the cost for a plaintext Secret file: light only when one
// of its values is a kubeconfig with an unguessable credential.
func paramsFor(plain []byte) argonParams {
	var doc struct {
		Data       map[string]string `yaml:"data"`
		StringData map[string]string `yaml:"stringData"`
	}
	if err := yaml.Unmarshal(plain, &doc); err != nil {
		return paramsGuessable
	}
	for _, v := range doc.Data {
		if b, err := base64.StdEncoding.DecodeString(v); err == nil && schema.CredentialUnguessable(b) {
			return paramsUnguessable
		}
	}
	for _, v := range doc.StringData {
		if schema.CredentialUnguessable([]byte(v)) {
			return paramsUnguessable
		}
	}
	return paramsGuessable
}

func (p argonParams) prefix() string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$", argon2.Version, p.memory, p.time, p.threads)
}

func (p argonParams) key(msg, salt []byte) []byte {
	return argon2.IDKey(msg, salt, p.time, p.memory, p.threads, argonKeyLen)
}

// hashDomain separates this hash from any other use of the same inputs and
// versions the encoding of the hashed message.
const hashDomain = "fleetgen.dev/plaintext-hash/v1"

// hashPlaintext returns the PHC string of argon2id(message, salt), where the
// message binds the plaintext file, the recipients and the encrypted_regex.
func hashPlaintext(plain []byte, recipients []string, salt []byte) string {
	p := paramsFor(plain)
	return p.prefix() + base64.RawStdEncoding.EncodeToString(salt) + "$" +
		base64.RawStdEncoding.EncodeToString(p.key(hashMessage(plain, recipients), salt))
}

func hashMessage(plain []byte, recipients []string) []byte {
	var b bytes.Buffer
	b.WriteString(hashDomain)
	b.WriteByte(0)
	b.WriteString(EncryptedRegex)
	b.WriteByte(0)
	b.WriteString(strings.Join(recipients, "\n"))
	b.WriteByte(0)
	b.Write(plain)
	return b.Bytes()
}

// checkHash reports whether phc is the hash, with the parameters plain calls
// for today, of plain for recipients. Other parameters count as a mismatch:
// the Secret is then re-encrypted once with the new ones.
func checkHash(phc string, plain []byte, recipients []string) bool {
	p := paramsFor(plain)
	rest, ok := strings.CutPrefix(phc, p.prefix())
	if !ok {
		return false
	}
	saltB64, sumB64, ok := strings.Cut(rest, "$")
	if !ok {
		return false
	}
	salt, err := base64.RawStdEncoding.DecodeString(saltB64)
	if err != nil || len(salt) != saltLen {
		return false
	}
	sum, err := base64.RawStdEncoding.DecodeString(sumB64)
	if err != nil || len(sum) != argonKeyLen {
		return false
	}
	got := p.key(hashMessage(plain, recipients), salt)
	return subtle.ConstantTimeCompare(got, sum) == 1
}

// sealedDoc is what unchanged reads from a previously sealed file: only
// plaintext parts, the annotation and the SOPS metadata.
type sealedDoc struct {
	Metadata struct {
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Sops *struct {
		Age []struct {
			Recipient string `yaml:"recipient"`
			Enc       string `yaml:"enc"`
		} `yaml:"age"`
		KMS            []any  `yaml:"kms"`
		GCPKMS         []any  `yaml:"gcp_kms"`
		AzureKV        []any  `yaml:"azure_kv"`
		HCVault        []any  `yaml:"hc_vault"`
		PGP            []any  `yaml:"pgp"`
		KeyGroups      []any  `yaml:"key_groups"`
		EncryptedRegex string `yaml:"encrypted_regex"`
		MAC            string `yaml:"mac"`
	} `yaml:"sops"`
}

// unchanged reports whether prev, the bytes a path held before, is a sealed
// file of exactly plain for exactly recipients, so that it can be kept.
// Anything unexpected (hand edits, other key types, a second document, old
// hash parameters) answers false, which only costs a re-encryption.
func unchanged(prev, plain []byte, recipients []string) bool {
	if !bytes.HasPrefix(prev, []byte(layout.Header)) {
		return false
	}
	dec := yaml.NewDecoder(bytes.NewReader(prev))
	var doc sealedDoc
	if err := dec.Decode(&doc); err != nil {
		return false
	}
	var extra any
	if dec.Decode(&extra) == nil {
		return false // more than one document
	}
	s := doc.Sops
	if s == nil || s.MAC == "" || s.EncryptedRegex != EncryptedRegex ||
		len(s.KMS)+len(s.GCPKMS)+len(s.AzureKV)+len(s.HCVault)+len(s.PGP)+len(s.KeyGroups) > 0 {
		return false
	}
	got := make([]string, 0, len(s.Age))
	for _, a := range s.Age {
		if a.Enc == "" {
			return false
		}
		got = append(got, a.Recipient)
	}
	slices.Sort(got)
	if !slices.Equal(got, recipients) {
		return false
	}
	phc, ok := doc.Metadata.Annotations[HashAnnotation]
	if !ok {
		return false
	}
	return checkHash(phc, plain, recipients)
}
