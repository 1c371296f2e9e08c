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

	"fleetgen.dev/fleetgen/pkg/generate"
)

// HashAnnotation is the plaintext annotation each sealed Secret carries: a
// salted argon2id hash (PHC string format) of the Secret's plaintext file and
// its sorted age recipients. Seal compares a new render against it to keep the
// previous ciphertext; it lets nobody decrypt anything, and guessing the
// plaintext from it costs one argon2id evaluation per guess. SOPS's MAC
// covers it, so `sops --decrypt` detects an edited hash.
const HashAnnotation = "fleetgen.dev/plaintext-hash"

// argon2id parameters. A kubeconfig's credential (a token or a private key) is
// far beyond guessing at any cost; the memory-hard cost is there for the rare
// guessable one (a username and password), while keeping the check of 10,000
// unchanged Secrets at a few seconds per core. Changing them re-encrypts each
// Secret once. See docs/secrets.md.
const (
	argonTime    = 1
	argonMemory  = 8 * 1024 // KiB
	argonThreads = 1
	argonKeyLen  = 32
	saltLen      = 16
)

// hashDomain separates this hash from any other use of the same inputs and
// versions the encoding of the hashed message.
const hashDomain = "fleetgen.dev/plaintext-hash/v1"

// hashPlaintext returns the PHC string of argon2id(message, salt), where the
// message binds the plaintext file, the recipients and the encrypted_regex.
func hashPlaintext(plain []byte, recipients []string, salt []byte) string {
	sum := argon2.IDKey(hashMessage(plain, recipients), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(sum))
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

// checkHash reports whether phc is the hash, with today's parameters, of
// plain for recipients. Other parameters count as a mismatch: the Secret is
// then re-encrypted once with the new ones.
func checkHash(phc string, plain []byte, recipients []string) bool {
	want := fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$", argon2.Version, argonMemory, argonTime, argonThreads)
	rest, ok := strings.CutPrefix(phc, want)
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
	got := argon2.IDKey(hashMessage(plain, recipients), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
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
	if !bytes.HasPrefix(prev, []byte(generate.Header)) {
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
