package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
)

// Identities are age identities that decrypt sealed Secrets. They are trusted
// configuration (SOPS_AGE_KEY_FILE in CI), never read from the fleet folder.
type Identities struct {
	ids []age.Identity
	// recipients are the public keys of the identities that have one.
	recipients []string
}

// maxKeyFile bounds what LoadIdentities reads.
const maxKeyFile = 1 << 20

// LoadIdentities reads an age identity file, the format of age-keygen and of
// SOPS_AGE_KEY_FILE (one AGE-SECRET-KEY-… per line, # comments). Its errors
// name the file, never its content.
func LoadIdentities(path string) (*Identities, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("age key file %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("age key file %s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("age key file %s: %w", path, err)
	}
	if len(data) > maxKeyFile {
		return nil, fmt.Errorf("age key file %s: larger than %d bytes", path, maxKeyFile)
	}
	ids, err := ParseIdentities(data)
	if err != nil {
		return nil, fmt.Errorf("age key file %s: %w", path, err)
	}
	return ids, nil
}

// ParseIdentities parses the content of an age identity file.
func ParseIdentities(data []byte) (*Identities, error) {
	ids, err := age.ParseIdentities(bytes.NewReader(data))
	if err != nil {
		// age's message can quote a malformed line: a secret key.
		return nil, errors.New("not an age identity file (want AGE-SECRET-KEY-1… lines)")
	}
	out := &Identities{ids: ids}
	for _, id := range ids {
		switch id := id.(type) {
		case *age.X25519Identity:
			out.recipients = append(out.recipients, id.Recipient().String())
		case *age.HybridIdentity:
			out.recipients = append(out.recipients, id.Recipient().String())
		}
	}
	return out, nil
}

// Option changes what Seal does.
type Option func(*sealOptions)

type sealOptions struct {
	ids    *Identities
	forged func(path string)
}

// WithDecryptCheck makes Seal decrypt every previous sealed file with ids
// before it keeps its ciphertext: the file is kept only when it decrypts (with
// a valid MAC, every data key stanza ids can open agreeing) to exactly the
// Secret being sealed. Otherwise it is sealed afresh, and forged is called with
// its path (in path order, after sealing). Without it, Seal trusts the
// plaintext-hash annotation, which anyone can copy (docs/secrets.md). ids nil
// checks nothing. Seal fails (an input error) when no identity in ids belongs
// to one of the recipients: nothing could be checked.
func WithDecryptCheck(ids *Identities, forged func(path string)) Option {
	return func(o *sealOptions) {
		o.ids = ids
		o.forged = forged
	}
}

// check requires an identity for at least one of recipients.
func (ids *Identities) check(recipients []string) error {
	for _, r := range ids.recipients {
		if slices.Contains(recipients, r) {
			return nil
		}
	}
	return errors.New("the age key file holds no identity for any of spec.encryption.sops.ageRecipients: sealed Secrets cannot be checked (give the key of one recipient, or none)")
}

// decryptsTo reports whether prev, a sealed file, decrypts with ids to
// exactly plain with prev's own plaintext-hash annotation added, with a valid
// MAC. Anything unexpected answers false. It never returns plaintext.
func decryptsTo(prev, plain []byte, ids *Identities) bool {
	doc, err := parseYAML(prev)
	if err != nil {
		return false
	}
	i := itemIndex(doc, sopsKey)
	if i < 0 {
		return false
	}
	meta, ok := doc[i].value.(branch)
	if !ok {
		return false
	}
	doc = slices.Delete(doc, i, i+1)
	md, ok := readMetadata(meta)
	if !ok {
		return false
	}
	key, ok := dataKey(md.stanzas, ids)
	if !ok {
		return false
	}
	c := &treeCipher{key: key, re: regexp.MustCompile(EncryptedRegex), decrypt: true}
	if err := c.walk(doc); err != nil {
		return false
	}
	mac, err := decryptValue(md.mac, key, md.lastModified)
	if s, isStr := mac.(string); err != nil || !isStr || s != c.macHex() {
		return false
	}

	want, err := parseYAML(plain)
	if err != nil {
		return false
	}
	phc, ok := annotation(doc, HashAnnotation)
	if !ok {
		return false
	}
	if want, err = annotate(want, HashAnnotation, phc); err != nil {
		return false
	}
	a, err1 := emitYAML(want, yamlIndent)
	b, err2 := emitYAML(doc, yamlIndent)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

type sopsMetadata struct {
	stanzas      []string
	lastModified string
	mac          string
}

// readMetadata reads the SOPS metadata fleetgen writes, and nothing else:
// other key types, Shamir groups, suffixes or mac_only_encrypted answer false.
func readMetadata(meta branch) (sopsMetadata, bool) {
	var md sopsMetadata
	for _, it := range meta {
		k, ok := it.key.(string)
		if !ok {
			continue // a comment
		}
		switch k {
		case "age":
			l, ok := it.value.([]any)
			if !ok {
				return md, false
			}
			for _, s := range l {
				b, ok := s.(branch)
				if !ok {
					return md, false
				}
				j := itemIndex(b, "enc")
				if j < 0 {
					return md, false
				}
				enc, ok := b[j].value.(string)
				if !ok {
					return md, false
				}
				md.stanzas = append(md.stanzas, enc)
			}
		case "encrypted_regex":
			if it.value != EncryptedRegex {
				return md, false
			}
		case "lastmodified":
			if md.lastModified, ok = it.value.(string); !ok {
				return md, false
			}
		case "mac":
			if md.mac, ok = it.value.(string); !ok {
				return md, false
			}
		case "version":
		default:
			return md, false
		}
	}
	return md, len(md.stanzas) > 0 && md.mac != "" && md.lastModified != ""
}

// dataKey opens every age stanza ids can open; they must all hold the same
// 32-byte key, and at least one must open.
func dataKey(stanzas []string, ids *Identities) ([]byte, bool) {
	var key []byte
	for _, s := range stanzas {
		r, err := age.Decrypt(armor.NewReader(strings.NewReader(s)), ids.ids...)
		if err != nil {
			continue // another recipient's stanza, or garbage
		}
		k, err := io.ReadAll(io.LimitReader(r, 64))
		if err != nil || len(k) != 32 {
			return nil, false
		}
		if key != nil && !bytes.Equal(key, k) {
			return nil, false
		}
		key = k
	}
	return key, key != nil
}

// annotation returns metadata.annotations[k] of doc when it is a string.
func annotation(doc branch, k string) (string, bool) {
	i := itemIndex(doc, "metadata")
	if i < 0 {
		return "", false
	}
	meta, ok := doc[i].value.(branch)
	if !ok {
		return "", false
	}
	j := itemIndex(meta, "annotations")
	if j < 0 {
		return "", false
	}
	ann, ok := meta[j].value.(branch)
	if !ok {
		return "", false
	}
	n := itemIndex(ann, k)
	if n < 0 {
		return "", false
	}
	s, ok := ann[n].value.(string)
	return s, ok
}
