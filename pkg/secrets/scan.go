package secrets

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Verrazzano CA Secrets (ca-secret-<cluster> in verrazzano-mc, key cacrt) hold
// the managed cluster's CA certificate, which is public: Scan lets them through
// in plaintext as long as they hold nothing else and no private key.
const (
	verrazzanoNamespace = "verrazzano-mc"
	verrazzanoCAPrefix  = "ca-secret-"
	verrazzanoCAKey     = "cacrt"
)

// maxListed bounds how many offending Secrets one error names.
const maxListed = 20

// Scan checks the output about to be written: any Secret whose data is not
// SOPS-encrypted is an input error (*schema.InvalidError) that says how to
// configure age or pass --allow-plaintext-secrets, unless allowPlaintext.
// Verrazzano CA Secrets hold public certificates and are exempt. Every
// File.Secret must be SOPS-sealed unless allowPlaintext. Only files that may
// hold a Secret are parsed. The error names files and Secrets, never content.
func Scan(files []generate.File, allowPlaintext bool) error {
	if allowPlaintext {
		return nil
	}
	problems, err := Plaintext(files)
	if err != nil {
		return err
	}
	if len(problems) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("refusing to write credentials in plaintext:")
	for i, p := range problems {
		if i == maxListed {
			fmt.Fprintf(&b, "\n  … and %d more", len(problems)-maxListed)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(p)
	}
	b.WriteString("\nset spec.encryption.sops.ageRecipients to write Secrets SOPS-encrypted for age (see docs/secrets.md), " +
		"or pass --allow-plaintext-secrets to write them in plaintext")
	return schema.Invalid(errors.New(b.String()))
}

// Plaintext is Scan's finding without the verdict: one line per Secret in
// files whose data is not SOPS-encrypted ("path: Secret ns/name holds
// unencrypted data"), and per File.Secret that is not sealed, in file order.
// Lines name files and Secrets, never content. publish uses it on everything
// it pushes, layer folders included.
func Plaintext(files []generate.File) ([]string, error) {
	var todo []int
	for i, f := range files {
		if f.Secret || mayHoldSecret(f.Data) {
			todo = append(todo, i)
		}
	}
	// Parsing is the cost (a sealed Secret is a few KiB of YAML): spread it
	// over the CPUs, keeping results in file order.
	found := make([][]string, len(todo))
	errs := make([]error, len(todo))
	workers := max(1, min(runtime.GOMAXPROCS(0), len(todo)))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for j := w; j < len(todo); j += workers {
				found[j], errs[j] = scanFile(files[todo[j]])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var problems []string
	for _, f := range found {
		problems = append(problems, f...)
	}
	return problems, nil
}

// mayHoldSecret is Scan's cheap first pass: a Secret needs the word Secret as
// a kind value. Files with YAML tags or escapes are parsed anyway, since
// those can spell a kind without the plain pattern.
func mayHoldSecret(data []byte) bool {
	if !bytes.Contains(data, []byte("Secret")) {
		return false
	}
	return kindSecret(data) || bytes.ContainsAny(data, "!\\&*")
}

// kindSecret finds "kind: Secret" in YAML or JSON spelling: the word Secret,
// alone, after a colon after the word kind, with blanks and quotes between.
func kindSecret(data []byte) bool {
	const word = "Secret"
	for off := 0; ; {
		i := bytes.Index(data[off:], []byte(word))
		if i < 0 {
			return false
		}
		i += off
		off = i + len(word)
		if off < len(data) && !bytes.ContainsRune([]byte(" \t\r\n\"',}#"), rune(data[off])) {
			continue
		}
		j := skipBack(data, i)
		if j == 0 || data[j-1] != ':' {
			continue
		}
		j = skipBack(data, j-1)
		if j >= 4 && string(data[j-4:j]) == "kind" {
			return true
		}
	}
}

// skipBack returns the index after the last byte before i that is not a
// blank or quote.
func skipBack(data []byte, i int) int {
	for i > 0 && bytes.IndexByte([]byte(" \t\"'"), data[i-1]) >= 0 {
		i--
	}
	return i
}

// scanFile returns one line per Secret in f that holds plaintext.
func scanFile(f generate.File) ([]string, error) {
	dec := yaml.NewDecoder(bytes.NewReader(f.Data))
	var out []string
	sealed := false
	for n := 1; ; n++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// The parser's message may quote the file: name the file only.
			return nil, fmt.Errorf("scan %s: document %d is not valid YAML", f.Path, n)
		}
		if len(doc.Content) == 0 {
			continue
		}
		for _, obj := range objects(doc.Content[0]) {
			if scalar(obj, "kind") != "Secret" {
				continue
			}
			name := scalar(mapping(obj, "metadata"), "name")
			ns := scalar(mapping(obj, "metadata"), "namespace")
			if encrypted(obj) {
				sealed = true
				continue
			}
			if !f.Secret && verrazzanoCA(obj, ns, name) {
				continue
			}
			if !hasData(obj) {
				continue
			}
			out = append(out, fmt.Sprintf("%s: Secret %s holds unencrypted data", f.Path, qualified(ns, name)))
		}
	}
	if f.Secret && !sealed && len(out) == 0 {
		out = append(out, fmt.Sprintf("%s: credential file is not SOPS-encrypted", f.Path))
	}
	return out, nil
}

func qualified(ns, name string) string {
	if name == "" {
		name = "(unnamed)"
	}
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// objects returns n, or the items of a List kind (which kustomize expands).
func objects(n *yaml.Node) []*yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	if strings.HasSuffix(scalar(n, "kind"), "List") {
		if items := value(n, "items"); items != nil && items.Kind == yaml.SequenceNode {
			var out []*yaml.Node
			for _, it := range items.Content {
				out = append(out, objects(it)...)
			}
			return out
		}
	}
	return []*yaml.Node{n}
}

// value returns the value node of key k in mapping n (aliases resolved).
func value(n *yaml.Node, k string) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k {
			v := n.Content[i+1]
			if v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			return v
		}
	}
	return nil
}

func mapping(n *yaml.Node, k string) *yaml.Node {
	v := value(n, k)
	if v == nil || v.Kind != yaml.MappingNode {
		return nil
	}
	return v
}

func scalar(n *yaml.Node, k string) string {
	v := value(n, k)
	if v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	return v.Value
}

// hasData reports whether a Secret carries any non-empty data or stringData
// value (or a data field that is not a plain mapping, to be safe).
func hasData(obj *yaml.Node) bool {
	for _, k := range []string{"data", "stringData"} {
		v := value(obj, k)
		if v == nil || (v.Kind == yaml.ScalarNode && (v.Tag == "!!null" || v.Value == "")) {
			continue
		}
		if v.Kind != yaml.MappingNode {
			return true
		}
		for i := 1; i < len(v.Content); i += 2 {
			if e := v.Content[i]; !(e.Kind == yaml.ScalarNode && (e.Value == "" || e.Tag == "!!null")) {
				return true
			}
		}
	}
	return false
}

// encrypted reports whether a Secret is SOPS-encrypted the way Flux decrypts
// it: a top-level sops mapping with a MAC and age or other keys, and every
// data and stringData value an AES256_GCM envelope.
func encrypted(obj *yaml.Node) bool {
	s := mapping(obj, "sops")
	if s == nil || scalar(s, "mac") == "" {
		return false
	}
	for _, k := range []string{"data", "stringData"} {
		v := value(obj, k)
		if v == nil || (v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
			continue
		}
		if v.Kind != yaml.MappingNode {
			return false
		}
		for i := 1; i < len(v.Content); i += 2 {
			e := v.Content[i]
			if e.Kind != yaml.ScalarNode || !isEnvelope(e.Value) {
				return false
			}
		}
	}
	return true
}

// isEnvelope reports whether s is a SOPS value envelope.
func isEnvelope(s string) bool {
	return strings.HasPrefix(s, "ENC[AES256_GCM,data:") && strings.HasSuffix(s, "]")
}

// verrazzanoCA reports whether a plaintext Secret is a Verrazzano CA Secret
// that holds only a public certificate (or nothing).
func verrazzanoCA(obj *yaml.Node, ns, name string) bool {
	if ns != verrazzanoNamespace || !strings.HasPrefix(name, verrazzanoCAPrefix) {
		return false
	}
	if sd := value(obj, "stringData"); sd != nil && !(sd.Kind == yaml.ScalarNode && sd.Tag == "!!null") {
		return false
	}
	d := value(obj, "data")
	if d == nil || (d.Kind == yaml.ScalarNode && d.Tag == "!!null") {
		return true
	}
	if d.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(d.Content); i += 2 {
		if d.Content[i].Value != verrazzanoCAKey || d.Content[i+1].Kind != yaml.ScalarNode {
			return false
		}
		pem, err := base64.StdEncoding.DecodeString(d.Content[i+1].Value)
		if err != nil || bytes.Contains(pem, []byte("PRIVATE KEY")) {
			return false
		}
	}
	return true
}
