package secrets

import (
	"bytes"
	"regexp"
	"strings"
	"time"
)

// Which values of a file SOPS encrypts (getsops/sops v3.13.3, sops.go
// Tree.shouldBeEncrypted and stores.Metadata.ToInternal): a file's metadata
// names at most one rule (unencrypted_suffix, encrypted_suffix,
// unencrypted_regex, encrypted_regex, unencrypted_comment_regex,
// encrypted_comment_regex; two are an error, and SOPS cannot decrypt the
// file); none means unencrypted_suffix "_unencrypted". A value is encrypted
// unless the rule leaves it out: a key on its path ending with the
// unencrypted suffix or matching the unencrypted regex, no key on its path
// ending with the encrypted suffix or matching the encrypted regex, a
// comment above it (in its mapping or any enclosing one) matching the
// unencrypted comment regex, or none matching the encrypted comment regex.
// Comments are values too. mac_only_encrypted changes what the MAC covers,
// not what is encrypted. An empty string stays as it is (aes.Cipher.Encrypt).
//
// A file counts as SOPS-encrypted (sopsEncrypted) only when every value its
// own rule encrypts is an ENC[…] envelope, at least one is, and its MAC is
// one: a sops stanza with a MAC over plaintext is not encryption, and
// neither is a rule that encrypts nothing.

// sopsRule is a file's encryption rule.
type sopsRule struct {
	unencSuffix, encSuffix string
	unencRE, encRE         *regexp.Regexp
	unencComment, encComm  *regexp.Regexp
}

// sopsMetaKeys are the metadata keys of the rule, by their YAML and JSON
// names (dotenv and INI prefix them with sops_).
var sopsMetaKeys = []string{"unencrypted_suffix", "encrypted_suffix", "unencrypted_regex", "encrypted_regex", "unencrypted_comment_regex", "encrypted_comment_regex"}

// ruleOf reads the rule of metadata get; ok is false when SOPS would refuse
// it (two rules, a regular expression that does not compile).
func ruleOf(get func(key string) string) (r sopsRule, ok bool) {
	n := 0
	for _, k := range sopsMetaKeys {
		v := get(k)
		if v == "" {
			continue
		}
		n++
		var err error
		switch k {
		case "unencrypted_suffix":
			r.unencSuffix = v
		case "encrypted_suffix":
			r.encSuffix = v
		case "unencrypted_regex":
			r.unencRE, err = regexp.Compile(v)
		case "encrypted_regex":
			r.encRE, err = regexp.Compile(v)
		case "unencrypted_comment_regex":
			r.unencComment, err = regexp.Compile(v)
		case "encrypted_comment_regex":
			r.encComm, err = regexp.Compile(v)
		}
		if err != nil {
			return r, false
		}
	}
	if n > 1 {
		return r, false
	}
	if n == 0 {
		r.unencSuffix = "_unencrypted"
	}
	return r, true
}

// encrypts is SOPS's shouldBeEncrypted for a value at path with the comments
// above it (one list per enclosing mapping or sequence).
func (r sopsRule) encrypts(path []string, comments [][]string, isComment bool) bool {
	enc := true
	if r.unencSuffix != "" {
		for _, p := range path {
			if strings.HasSuffix(p, r.unencSuffix) {
				enc = false
				break
			}
		}
	}
	if r.encSuffix != "" {
		enc = false
		for _, p := range path {
			if strings.HasSuffix(p, r.encSuffix) {
				enc = true
				break
			}
		}
	}
	if r.unencRE != nil {
		for _, p := range path {
			if r.unencRE.MatchString(p) {
				enc = false
				break
			}
		}
	}
	if r.encRE != nil {
		enc = false
		for _, p := range path {
			if r.encRE.MatchString(p) {
				enc = true
				break
			}
		}
	}
	if r.unencComment != nil {
	unenc:
		for _, cs := range comments {
			for _, c := range cs {
				if r.unencComment.MatchString(c) {
					enc = false
					break unenc
				}
			}
		}
	}
	if r.encComm != nil {
		enc = false
		last := len(comments) - 1
	encc:
		for i, cs := range comments {
			for j, c := range cs {
				// The comment that matches is not encrypted itself.
				if isComment && i == last && j == len(cs)-1 {
					continue
				}
				if r.encComm.MatchString(c) {
					enc = true
					break encc
				}
			}
		}
	}
	return enc
}

// sopsCheck walks a SOPS tree as SOPS's walkBranch does and counts the
// values the rule encrypts that are envelopes, and those that are not.
type sopsCheck struct {
	rule        sopsRule
	sealed, bad int
}

func (c *sopsCheck) branch(b branch, path []string, comments [][]string) {
	comments = append(comments, nil)
	last := len(comments) - 1
	for _, it := range b {
		if cm, ok := it.key.(comment); ok {
			comments[last] = append(comments[last], cm.text)
			c.leaf(cm.text, path, comments, true)
			continue
		}
		k, _ := it.key.(string)
		if len(path) == 0 && k == sopsKey {
			continue
		}
		c.value(it.value, append(path[:len(path):len(path)], k), comments)
		comments[last] = nil
	}
}

func (c *sopsCheck) value(v any, path []string, comments [][]string) {
	switch v := v.(type) {
	case nil:
	case branch:
		c.branch(v, path, comments)
	case []any:
		comments = append(comments, nil)
		last := len(comments) - 1
		for _, e := range v {
			if cm, ok := e.(comment); ok {
				comments[last] = append(comments[last], cm.text)
				c.leaf(cm.text, path, comments, true)
				continue
			}
			c.value(e, path, comments)
		}
	case comment:
		c.leaf(v.text, path, comments, true)
	default:
		c.leaf(v, path, comments, false)
	}
}

func (c *sopsCheck) leaf(v any, path []string, comments [][]string, isComment bool) {
	if !c.rule.encrypts(path, comments, isComment) {
		return
	}
	switch v := v.(type) {
	case string:
		switch {
		case v == "":
		case isEnvelope(strings.TrimSpace(v)):
			c.sealed++
		default:
			c.bad++
		}
	case []byte, int, float64, bool, time.Time:
		c.bad++ // SOPS writes an envelope for these
	}
}

// sopsEncrypted reports whether a YAML or JSON document (also SOPS's binary
// format, a JSON object) is SOPS-encrypted under its own rule.
func sopsEncryptedYAML(data []byte) bool {
	b, err := parseYAML(data)
	if err != nil {
		return false
	}
	var meta branch
	for _, it := range b {
		if k, _ := it.key.(string); k == sopsKey {
			meta, _ = it.value.(branch)
		}
	}
	get := func(k string) string {
		for _, it := range meta {
			if key, _ := it.key.(string); key == k {
				s, _ := it.value.(string)
				return s
			}
		}
		return ""
	}
	if !isEnvelope(get("mac")) {
		return false
	}
	rule, ok := ruleOf(get)
	if !ok {
		return false
	}
	c := &sopsCheck{rule: rule}
	c.branch(b, nil, nil)
	return c.bad == 0 && c.sealed > 0
}

// sopsEncryptedDotenv reports whether a dotenv file is SOPS-encrypted under
// its own rule (SOPS's dotenv store: KEY=VALUE lines, # comment lines, the
// metadata in sops_ keys).
func sopsEncryptedDotenv(data []byte) bool {
	var b branch
	meta := map[string]string{}
	for _, line := range bytes.Split(data, []byte("\n")) {
		l := strings.TrimSpace(string(line))
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "#") {
			b = append(b, item{key: comment{text: l[1:]}})
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return false
		}
		if name, ok := strings.CutPrefix(k, "sops_"); ok {
			meta[name] = v
			continue
		}
		b = append(b, item{key: k, value: v})
	}
	if !isEnvelope(meta["mac"]) {
		return false
	}
	rule, ok := ruleOf(func(k string) string { return meta[k] })
	if !ok {
		return false
	}
	c := &sopsCheck{rule: rule}
	c.branch(b, nil, nil)
	return c.bad == 0 && c.sealed > 0
}
