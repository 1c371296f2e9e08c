package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/keyservice"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"github.com/getsops/sops/v3/version"

	"fleetgen.dev/fleetgen/pkg/generate"
)

// yamlIndent matches the two-space indentation of everything else fleetgen
// writes; .sops.yaml sets the same for `sops` edits by hand.
const yamlIndent = 2

// yamlStore is SOPS's own YAML store, the one `sops` uses for *.yaml files.
func yamlStore() *sopsyaml.Store {
	return sopsyaml.NewStore(&config.YAMLStoreConfig{Indent: yamlIndent})
}

// checkRecipient reports whether r is an age recipient SOPS can encrypt for.
func checkRecipient(r string) error {
	if r == "" {
		return errors.New("empty age recipient")
	}
	if _, err := sopsage.MasterKeyFromRecipient(r); err != nil {
		return errors.New("not an age recipient (want age1…)")
	}
	return nil
}

// encrypt seals one plaintext Secret file the way `sops --encrypt
// --encrypted-regex '^(data|stringData)$' --age …` does, after adding the
// plaintext-hash annotation hash. Its errors never quote the plaintext.
func encrypt(plain []byte, recipients []string, hash string, now time.Time) ([]byte, error) {
	if !bytes.HasPrefix(plain, []byte(generate.Header)) {
		return nil, errors.New("does not start with the fleetgen header")
	}
	store := yamlStore()
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		// The parser's message may quote the input: leave it out.
		return nil, errors.New("plaintext is not valid YAML")
	}
	if len(branches) != 1 {
		return nil, fmt.Errorf("want one YAML document, found %d", len(branches))
	}
	branch, err := annotate(branches[0], HashAnnotation, hash)
	if err != nil {
		return nil, err
	}
	branches[0] = branch

	group := make(sops.KeyGroup, 0, len(recipients))
	for _, r := range recipients {
		k, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, fmt.Errorf("age recipient %s: %w", r, err)
		}
		group = append(group, keys.MasterKey(k))
	}
	tree := sops.Tree{
		Branches: branches,
		Metadata: sops.Metadata{
			KeyGroups:      []sops.KeyGroup{group},
			EncryptedRegex: EncryptedRegex,
			Version:        version.Version,
		},
	}
	// As cmd/sops encrypt: a fresh data key, wrapped for every recipient
	// through the local key service.
	dataKey, errs := tree.GenerateDataKeyWithKeyServices([]keyservice.KeyServiceClient{keyservice.NewLocalClient()})
	if len(errs) > 0 {
		return nil, fmt.Errorf("generate SOPS data key: %w", errors.Join(errs...))
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, errors.New("encrypt SOPS tree")
	}
	tree.Metadata.LastModified = now.UTC().Truncate(time.Second)
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, errors.New("encrypt SOPS MAC")
	}
	out, err := store.EmitEncryptedFile(tree)
	if err != nil {
		return nil, fmt.Errorf("emit SOPS YAML: %w", err)
	}
	if !bytes.HasPrefix(out, []byte(generate.Header)) {
		return nil, errors.New("SOPS output lost the fleetgen header")
	}
	return out, nil
}

// annotate sets metadata.annotations[key] = value in a SOPS tree branch,
// creating annotations in key order when missing.
func annotate(doc sops.TreeBranch, key, value string) (sops.TreeBranch, error) {
	i := itemIndex(doc, "metadata")
	if i < 0 {
		return nil, errors.New("Secret has no metadata")
	}
	meta, ok := doc[i].Value.(sops.TreeBranch)
	if !ok {
		return nil, errors.New("Secret metadata is not a mapping")
	}
	var ann sops.TreeBranch
	j := itemIndex(meta, "annotations")
	if j >= 0 {
		ann, ok = meta[j].Value.(sops.TreeBranch)
		if !ok && meta[j].Value != nil {
			return nil, errors.New("Secret metadata.annotations is not a mapping")
		}
	}
	ann = setSorted(ann, key, value)
	if j >= 0 {
		meta[j].Value = ann
	} else {
		meta = setSorted(meta, "annotations", ann)
	}
	doc[i].Value = meta
	return doc, nil
}

// itemIndex returns the index of the item with the string key k, or -1.
func itemIndex(b sops.TreeBranch, k string) int {
	for i, it := range b {
		if s, ok := it.Key.(string); ok && s == k {
			return i
		}
	}
	return -1
}

// setSorted sets k to v, replacing an existing item or inserting before the
// first string key that sorts after k (fleetgen's encoder sorts keys).
func setSorted(b sops.TreeBranch, k string, v any) sops.TreeBranch {
	if i := itemIndex(b, k); i >= 0 {
		b[i].Value = v
		return b
	}
	at := len(b)
	for i, it := range b {
		if s, ok := it.Key.(string); ok && s > k {
			at = i
			break
		}
	}
	b = append(b, sops.TreeItem{})
	copy(b[at+1:], b[at:])
	b[at] = sops.TreeItem{Key: k, Value: v}
	return b
}
