package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// This file writes and reads the SOPS YAML format for age recipients without
// linking SOPS itself: SOPS's tree, cipher and store packages import every key
// service it supports (AWS, GCP, Azure, Vault, Huawei: 145 packages, most of
// the binary). It follows SOPS 3.x's format exactly (stores/yaml, aes, sops.go)
// for the subset fleetgen writes: one YAML document, encrypted_regex, age
// master keys in one key group, the MAC over every value. The tests check the
// bytes against SOPS's own YAML store and decrypt with SOPS and with
// kustomize-controller's code path.

// sopsVersion is what sops.version says; the tests pin it to the SOPS module
// they decrypt with.
const sopsVersion = "3.13.3"

// treeCipher walks a branch as SOPS's Tree.Encrypt and Tree.Decrypt do: a
// value is encrypted when a key on its path matches the encrypted_regex, and
// the MAC is SHA-512 over every non-comment value in document order.
type treeCipher struct {
	key     []byte
	re      *regexp.Regexp
	decrypt bool
	mac     []byte // filled by walk
}

func (c *treeCipher) walk(b branch) error {
	h := sha512.New()
	if err := c.walkBranch(b, nil, h); err != nil {
		return err
	}
	c.mac = h.Sum(nil)
	return nil
}

// macHex is the MAC as SOPS writes it before encrypting it: upper-case hex.
func (c *treeCipher) macHex() string { return fmt.Sprintf("%X", c.mac) }

func (c *treeCipher) encrypted(path []string) bool {
	for _, p := range path {
		if c.re.MatchString(p) {
			return true
		}
	}
	return false
}

func (c *treeCipher) walkBranch(b branch, path []string, h io.Writer) error {
	for i := range b {
		if cm, ok := b[i].key.(comment); ok {
			v, err := c.leaf(cm, path, h)
			if err != nil {
				return err
			}
			switch v := v.(type) {
			case comment:
				// A decrypted comment keeps its place (SOPS makes it a head
				// comment); verification compares the trees.
				b[i].key = comment{text: v.text, inline: cm.inline}
			case string:
				b[i].key = comment{text: v, inline: cm.inline}
			default:
				return errors.New("a comment did not decrypt to a comment")
			}
			continue
		}
		k, ok := b[i].key.(string)
		if !ok {
			return errors.New("a mapping key is not a string")
		}
		v, err := c.walkValue(b[i].value, append(path[:len(path):len(path)], k), h)
		if err != nil {
			return err
		}
		b[i].value = v
	}
	return nil
}

func (c *treeCipher) walkValue(v any, path []string, h io.Writer) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case branch:
		return v, c.walkBranch(v, path, h)
	case []any:
		for i := range v {
			nv, err := c.walkValue(v[i], path, h)
			if err != nil {
				return nil, err
			}
			v[i] = nv
		}
		return v, nil
	case []byte:
		return c.leaf(string(v), path, h)
	default:
		return c.leaf(v, path, h)
	}
}

func (c *treeCipher) leaf(v any, path []string, h io.Writer) (any, error) {
	enc := c.encrypted(path)
	ad := strings.Join(path, ":") + ":"
	if c.decrypt {
		if enc {
			switch in := v.(type) {
			case comment:
				if p, err := decryptValue(in.text, c.key, ad); err == nil {
					v = p
				}
			case string:
				p, err := decryptValue(in, c.key, ad)
				if err != nil {
					return nil, err
				}
				v = p
			default:
				return nil, errors.New("an encrypted value is not a string")
			}
		}
		if _, isComment := v.(comment); !isComment {
			b, err := valueBytes(v)
			if err != nil {
				return nil, err
			}
			h.Write(b)
		}
		return v, nil
	}
	if _, isComment := v.(comment); !isComment {
		b, err := valueBytes(v)
		if err != nil {
			return nil, err
		}
		h.Write(b)
	}
	if !enc {
		return v, nil
	}
	return encryptValue(v, c.key, ad)
}

// valueBytes is SOPS's ToBytes: what the MAC hashes for a value.
func valueBytes(v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return []byte(v), nil
	case int:
		return []byte(strconv.Itoa(v)), nil
	case float64:
		return []byte(strconv.FormatFloat(v, 'f', -1, 64)), nil
	case bool:
		if v {
			return []byte("True"), nil
		}
		return []byte("False"), nil
	case []byte:
		return v, nil
	case time.Time:
		return v.MarshalText()
	case comment:
		return []byte(v.text), nil
	default:
		return nil, fmt.Errorf("unsupported value type %T", v)
	}
}

// nonceSize is SOPS's AES-GCM nonce length (not GCM's usual 12 bytes).
const nonceSize = 32

// encryptValue is SOPS's aes.Cipher.Encrypt: AES-256-GCM with a random
// 32-byte nonce, the value's path as additional data, and its type recorded.
// Empty strings stay empty, as in SOPS.
func encryptValue(v any, key []byte, ad string) (string, error) {
	var plain []byte
	var typ string
	switch v := v.(type) {
	case string:
		if v == "" {
			return "", nil
		}
		typ, plain = "str", []byte(v)
	case int:
		typ, plain = "int", []byte(strconv.Itoa(v))
	case float64:
		typ, plain = "float", []byte(strconv.FormatFloat(v, 'f', -1, 64))
	case bool:
		typ, plain = "bool", []byte("False")
		if v {
			plain = []byte("True")
		}
	case time.Time:
		b, err := v.MarshalText()
		if err != nil {
			return "", fmt.Errorf("encode a timestamp: %w", err)
		}
		typ, plain = "time", b
	case comment:
		if v.text == "" {
			return "", nil
		}
		typ, plain = "comment", []byte(v.text)
	default:
		return "", fmt.Errorf("cannot encrypt a value of type %T", v)
	}
	gcm, err := newGCM(key)
	if err != nil {
		return "", err
	}
	iv := make([]byte, nonceSize)
	if _, err := rand.Read(iv); err != nil {
		return "", fmt.Errorf("read random nonce: %w", err)
	}
	out := gcm.Seal(nil, iv, plain, []byte(ad))
	n := len(out) - gcm.Overhead()
	return fmt.Sprintf("ENC[AES256_GCM,data:%s,iv:%s,tag:%s,type:%s]",
		base64.StdEncoding.EncodeToString(out[:n]),
		base64.StdEncoding.EncodeToString(iv),
		base64.StdEncoding.EncodeToString(out[n:]), typ), nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("AES key: %w", err)
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, nonceSize)
	if err != nil {
		return nil, fmt.Errorf("AES-GCM: %w", err)
	}
	return gcm, nil
}

var encValue = regexp.MustCompile(`^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]`)

// errValue never says which value or why: the input may be forged to make an
// error message quote something.
var errValue = errors.New("a SOPS value does not decrypt")

// decryptValue is SOPS's aes.Cipher.Decrypt.
func decryptValue(s string, key []byte, ad string) (any, error) {
	if s == "" {
		return "", nil
	}
	m := encValue.FindStringSubmatch(s)
	if m == nil {
		return nil, errValue
	}
	data, err1 := base64.StdEncoding.DecodeString(m[1])
	iv, err2 := base64.StdEncoding.DecodeString(m[2])
	tag, err3 := base64.StdEncoding.DecodeString(m[3])
	if err1 != nil || err2 != nil || err3 != nil || len(iv) != nonceSize {
		return nil, errValue
	}
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, iv, append(data, tag...), []byte(ad))
	if err != nil {
		return nil, errValue
	}
	switch m[4] {
	case "str":
		return string(plain), nil
	case "int":
		v, err := strconv.Atoi(string(plain))
		if err != nil {
			return nil, errValue
		}
		return v, nil
	case "float":
		v, err := strconv.ParseFloat(string(plain), 64)
		if err != nil {
			return nil, errValue
		}
		return v, nil
	case "bytes":
		return plain, nil
	case "bool":
		v, err := strconv.ParseBool(string(plain))
		if err != nil {
			return nil, errValue
		}
		return v, nil
	case "time":
		var v time.Time
		if err := v.UnmarshalText(plain); err != nil {
			return nil, errValue
		}
		return v, nil
	case "comment":
		return comment{text: string(plain)}, nil
	default:
		return nil, errValue
	}
}
