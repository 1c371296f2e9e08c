package secrets

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/agessh"
	"filippo.io/age/armor"
	"fleetgen.dev/fleetgen/pkg/layout"
)

// yamlIndent matches the two-space indentation of everything else fleetgen
// writes; .sops.yaml sets the same for `sops` edits by hand.
const yamlIndent = 2

// sopsKey is the top-level key of the SOPS metadata.
const sopsKey = "sops"

// parseRecipient parses an age recipient as SOPS does, except for plugin
// recipients (age1<name>1…): those run an external age-plugin-<name>
// program, which fleet.yaml must not be able to choose.
func parseRecipient(r string) (age.Recipient, error) {
	switch {
	case strings.HasPrefix(r, "age1pq1"):
		return age.ParseHybridRecipient(r)
	case strings.HasPrefix(r, "age1") && strings.Count(r, "1") > 1:
		return nil, errors.New("age plugin recipients are not supported")
	case strings.HasPrefix(r, "age1"):
		return age.ParseX25519Recipient(r)
	case strings.HasPrefix(r, "ssh-"):
		return agessh.ParseRecipient(r)
	}
	return nil, errors.New("unknown recipient type")
}

// checkRecipient reports whether r is an age recipient fleetgen can encrypt for.
func checkRecipient(r string) error {
	if r == "" {
		return errors.New("empty age recipient")
	}
	if _, err := parseRecipient(r); err != nil {
		return errors.New("not an age recipient (want age1…)")
	}
	return nil
}

// encrypt seals one plaintext Secret file the way `sops --encrypt
// --encrypted-regex '^(data|stringData)$' --age …` does, after adding the
// plaintext-hash annotation hash. Its errors never quote the plaintext.
func encrypt(plain []byte, recipients []string, hash string, now time.Time) ([]byte, error) {
	if !bytes.HasPrefix(plain, []byte(layout.Header)) {
		return nil, errors.New("does not start with the fleetgen header")
	}
	doc, err := parseYAML(plain)
	if err != nil {
		// The parser's message may quote the input: leave it out.
		return nil, errors.New("plaintext is not valid YAML")
	}
	if itemIndex(doc, sopsKey) >= 0 {
		return nil, errors.New("plaintext has a top-level sops key")
	}
	if doc, err = annotate(doc, HashAnnotation, hash); err != nil {
		return nil, err
	}

	// As cmd/sops encrypt: a fresh data key, wrapped for every recipient
	// in its own armored age file.
	dataKey := make([]byte, 32)
	if _, err := io.ReadFull(rand.Reader, dataKey); err != nil {
		return nil, fmt.Errorf("generate SOPS data key: %w", err)
	}
	var stanzas []any
	for _, r := range recipients {
		enc, err := wrapKey(dataKey, r)
		if err != nil {
			return nil, fmt.Errorf("age recipient %s: %w", r, err)
		}
		stanzas = append(stanzas, branch{{key: "enc", value: enc}, {key: "recipient", value: r}})
	}
	c := &treeCipher{key: dataKey, re: regexp.MustCompile(EncryptedRegex)}
	if err := c.walk(doc); err != nil {
		return nil, errors.New("encrypt SOPS tree")
	}
	lastModified := now.UTC().Truncate(time.Second).Format(time.RFC3339)
	mac, err := encryptValue(c.macHex(), dataKey, lastModified)
	if err != nil {
		return nil, errors.New("encrypt SOPS MAC")
	}
	// SOPS writes its metadata keys sorted, empty ones left out.
	doc = append(doc, item{key: sopsKey, value: branch{
		{key: "age", value: stanzas},
		{key: "encrypted_regex", value: EncryptedRegex},
		{key: "lastmodified", value: lastModified},
		{key: "mac", value: mac},
		{key: "version", value: sopsVersion},
	}})
	out, err := emitYAML(doc, yamlIndent)
	if err != nil {
		return nil, fmt.Errorf("emit SOPS YAML: %w", err)
	}
	if !bytes.HasPrefix(out, []byte(layout.Header)) {
		return nil, errors.New("SOPS output lost the fleetgen header")
	}
	return out, nil
}

// wrapKey encrypts the data key for one recipient as SOPS's age key source
// does: an armored age file.
func wrapKey(dataKey []byte, recipient string) (string, error) {
	r, err := parseRecipient(recipient)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	aw := armor.NewWriter(&buf)
	w, err := age.Encrypt(aw, r)
	if err != nil {
		return "", fmt.Errorf("age encrypt: %w", err)
	}
	if _, err := w.Write(dataKey); err != nil {
		return "", fmt.Errorf("age encrypt: %w", err)
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("age encrypt: %w", err)
	}
	if err := aw.Close(); err != nil {
		return "", fmt.Errorf("age armor: %w", err)
	}
	return buf.String(), nil
}

// annotate sets metadata.annotations[key] = value in a branch, creating
// annotations in key order when missing.
func annotate(doc branch, key, value string) (branch, error) {
	i := itemIndex(doc, "metadata")
	if i < 0 {
		return nil, errors.New("Secret has no metadata")
	}
	meta, ok := doc[i].value.(branch)
	if !ok {
		return nil, errors.New("Secret metadata is not a mapping")
	}
	var ann branch
	j := itemIndex(meta, "annotations")
	if j >= 0 {
		ann, ok = meta[j].value.(branch)
		if !ok && meta[j].value != nil {
			return nil, errors.New("Secret metadata.annotations is not a mapping")
		}
	}
	ann = setSorted(ann, key, value)
	if j >= 0 {
		meta[j].value = ann
	} else {
		meta = setSorted(meta, "annotations", ann)
	}
	doc[i].value = meta
	return doc, nil
}

// itemIndex returns the index of the item with the string key k, or -1.
func itemIndex(b branch, k string) int {
	for i, it := range b {
		if s, ok := it.key.(string); ok && s == k {
			return i
		}
	}
	return -1
}

// setSorted sets k to v, replacing an existing item or inserting before the
// first string key that sorts after k (fleetgen's encoder sorts keys).
func setSorted(b branch, k string, v any) branch {
	if i := itemIndex(b, k); i >= 0 {
		b[i].value = v
		return b
	}
	at := len(b)
	for i, it := range b {
		if s, ok := it.key.(string); ok && s > k {
			at = i
			break
		}
	}
	b = append(b, item{})
	copy(b[at+1:], b[at:])
	b[at] = item{key: k, value: v}
	return b
}
