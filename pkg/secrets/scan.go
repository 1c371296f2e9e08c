package secrets

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sync/errgroup"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// Verrazzano CA Secrets (ca-secret-<cluster> in verrazzano-mc, key cacrt) hold
// the managed cluster's CA certificate, which is public: Scan lets them through
// in plaintext as long as they hold nothing else and no private key.
const (
	verrazzanoNamespace = "verrazzano-mc"
	verrazzanoCAPrefix  = "ca-secret-"
	verrazzanoCAKey     = "cacrt"
)

// Scan checks the output about to be written: any Secret whose data is not
// SOPS-encrypted is an input error (*problem.InvalidError) that says how to
// configure age or pass --allow-plaintext-secrets, unless allowPlaintext.
// Verrazzano CA Secrets hold public certificates and are exempt. Every
// File.Secret must be SOPS-sealed unless allowPlaintext. Only files that may
// hold a Secret are parsed. The error names files and Secrets, never content.
func Scan(files []layout.File, allowPlaintext bool) error {
	if allowPlaintext {
		return nil
	}
	found, err := Plaintext(files)
	if err != nil || len(found) == 0 {
		return err
	}
	return problem.Invalid(errors.New("refusing to write credentials in plaintext:" + List(found) +
		"\nset spec.encryption.sops.ageRecipients to write Secrets SOPS-encrypted for age (see docs/secrets.md), " +
		"or pass --allow-plaintext-secrets to write them in plaintext"))
}

// Plaintext is Scan's finding without the verdict: the findings in file
// order, naming files and Secrets, never content. publish uses it on
// everything it pushes, layer folders included, so it reads the files as
// kustomize and Flux will, not as text:
//
//   - every file that could hold a Secret (see mayHoldSecret) is split into
//     documents as kustomize splits them and each document is parsed with
//     yaml.v3 into plain values, so that escapes, tags, block scalars,
//     comments, complex keys, flow style, anchors, aliases and merge keys
//     all spell what Flux will see. A Secret (also inside a List) whose data
//     or stringData is not SOPS-encrypted is a finding ("path: Secret ns/name
//     holds unencrypted data"); Verrazzano CA Secrets are exempt;
//   - a kustomization file (kustomization.yaml, .yml, Kustomization), and
//     any object of kind SecretGenerator, whose secretGenerator makes a Secret
//     from literals, or from envs or files that are not SOPS-encrypted files
//     of the same set, is a problem: Flux builds that Secret in plaintext;
//   - a file named *.yaml, *.yml or *.json, a kustomization or a File.Secret
//     that does not parse is a problem: it cannot be checked, so it is not
//     pushed. Other files that do not parse are no manifest kustomize could
//     load, and pass;
//   - a File.Secret that is not sealed is a problem.
func Plaintext(files []layout.File) ([]Finding, error) {
	var todo []int
	for i, f := range files {
		if f.Secret || isKustomization(f.Path) || mayHoldSecret(f.Data) {
			todo = append(todo, i)
		}
	}
	// Parsing is the cost (a sealed Secret is a few KiB of YAML): spread it
	// over the CPUs, keeping results in file order.
	var index map[string][]byte // path → data, for secretGenerator files
	var indexOnce sync.Once
	lookup := func(p string) ([]byte, bool) {
		indexOnce.Do(func() {
			index = make(map[string][]byte, len(files))
			for _, f := range files {
				index[path.Clean(f.Path)] = f.Data
			}
		})
		d, ok := index[p]
		return d, ok
	}
	found := make([][]Finding, len(todo))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for j, i := range todo {
		g.Go(func() error {
			found[j] = scanFile(files[i], lookup)
			return nil
		})
	}
	_ = g.Wait()
	return slices.Concat(found...), nil
}

// mayHoldSecret is Scan's cheap first pass: false only when no YAML reading of
// data can give the value Secret or SecretGenerator. A YAML scalar spells its
// value with its own characters unless it uses an escape (a backslash), a tag
// (!!binary decodes base64) or another encoding (UTF-16 and UTF-32 hold NUL
// bytes); folding joins lines with a space. So without those, a Secret needs
// the word Secret standing alone (SecretStore and kubeConfigSecret do not
// count), or SecretGenerator; an object that embeds others (a Fleet Bundle)
// may hold one encoded, so its group's name counts too.
func mayHoldSecret(data []byte) bool {
	if bytes.ContainsAny(data, "\\!\x00") || bytes.Contains(data, []byte("SecretGenerator")) {
		return true
	}
	// Objects that embed others may hold one encoded (EmbeddedProblems).
	for _, w := range embedders {
		if bytes.Contains(data, []byte(w)) {
			return true
		}
	}
	const word = "Secret"
	for off := 0; ; {
		i := bytes.Index(data[off:], []byte(word))
		if i < 0 {
			return false
		}
		i += off
		off = i + len(word)
		if (i == 0 || !alnum(data[i-1])) && (off == len(data) || !alnum(data[off])) {
			return true
		}
	}
}

// embedders are words that an object embedding others (EmbeddedProblems)
// spells in its apiVersion.
var embedders = []string{"fleet.cattle.io", "work.open-cluster-management.io", "placement.kubernetes-fleet.io"}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// kustomizationNames are the file names kustomize reads a kustomization from.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

func isKustomization(p string) bool {
	return slices.Contains(kustomizationNames, path.Base(p))
}

// mustParse reports whether a file that does not parse is refused: one that
// kustomize would load as manifests or a kustomization, or a credential file.
func mustParse(f layout.File) bool {
	if f.Secret || isKustomization(f.Path) {
		return true
	}
	switch strings.ToLower(path.Ext(f.Path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// splitDocuments splits data into documents as kustomize does (kyaml's
// kio.ByteReader: CRLF made LF, then every line that starts with "---" after
// a newline ends a document), so that each is parsed on its own as
// kustomize parses it.
func splitDocuments(data []byte) [][]byte {
	if bytes.Contains(data, []byte("\r\n")) {
		data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	}
	var docs [][]byte
	prev := 0
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte("\n---"))
		if j < 0 {
			break
		}
		j += i
		end := bytes.IndexByte(data[j+1:], '\n')
		if end < 0 {
			break // kustomize's separator needs a newline after it
		}
		end += j + 1
		docs = append(docs, data[prev:j])
		prev, i = end+1, end
	}
	return append(docs, data[prev:])
}

// scanFile returns the findings in f.
func scanFile(f layout.File, lookup func(string) ([]byte, bool)) []Finding {
	var out []Finding
	sealed := false
	n := 0
	for _, chunk := range splitDocuments(f.Data) {
		dec := yaml.NewDecoder(bytes.NewReader(chunk))
		for {
			var doc any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			n++
			if err != nil {
				// A strict parser refuses what kustomize's node parser may
				// take (duplicate keys): refuse those whatever the name.
				var node yaml.Node
				if mustParse(f) || yaml.Unmarshal(chunk, &node) == nil {
					// The parser's message may quote the file: name the file only.
					out = append(out, Finding{File: f.Path, Entry: fmt.Sprintf("document %d", n), Problem: "is not valid YAML, so it cannot be checked for plaintext Secrets"})
				}
				break
			}
			obj, _ := asMap(doc)
			if obj == nil {
				continue
			}
			if isKustomization(f.Path) {
				out = append(out, generators(f.Path, path.Dir(f.Path), obj["secretGenerator"], lookup)...)
				out = append(out, inlineGenerators(f.Path, obj["generators"], lookup)...)
			}
			for _, o := range objects(obj) {
				if ps := EmbeddedProblems(o); len(ps) > 0 {
					md, _ := asMap(o["metadata"])
					name, _ := md["name"].(string)
					ns, _ := md["namespace"].(string)
					kind, _ := o["kind"].(string)
					for _, p := range ps {
						out = append(out, Finding{File: f.Path, Kind: kind, Namespace: ns, Name: name, Problem: p})
					}
				}
				switch o["kind"] {
				case "SecretGenerator":
					out = append(out, generators(f.Path, path.Dir(f.Path), []any{o}, lookup)...)
					continue
				case "Secret":
				default:
					continue
				}
				md, _ := asMap(o["metadata"])
				name, _ := md["name"].(string)
				ns, _ := md["namespace"].(string)
				secret := Finding{File: f.Path, Kind: "Secret", Namespace: ns, Name: name}
				if encrypted(o) {
					sealed = true
					if secret.Problem = annotationCopy(md); secret.Problem != "" {
						out = append(out, secret)
					}
					continue
				}
				if !f.Secret && verrazzanoCA(o, ns, name) {
					continue
				}
				if !hasData(o) {
					continue
				}
				secret.Problem = "holds unencrypted data"
				out = append(out, secret)
			}
		}
	}
	if f.Secret && !sealed && len(out) == 0 {
		out = append(out, Finding{File: f.Path, Problem: "credential file is not SOPS-encrypted"})
	}
	return out
}

// inlineGenerators checks the generators of a kustomization given inline, as
// YAML text in the generators list.
func inlineGenerators(file string, v any, lookup func(string) ([]byte, bool)) []Finding {
	list, _ := v.([]any)
	var out []Finding
	for _, e := range list {
		s, ok := e.(string)
		if !ok || !strings.Contains(s, "\n") {
			continue
		}
		var doc any
		if err := yaml.Unmarshal([]byte(s), &doc); err != nil {
			out = append(out, Finding{File: file, Problem: "an inline generator is not valid YAML, so it cannot be checked for plaintext Secrets"})
			continue
		}
		if m, _ := asMap(doc); m != nil && m["kind"] == "SecretGenerator" {
			out = append(out, generators(file, path.Dir(file), []any{m}, lookup)...)
		}
	}
	return out
}

// generators checks secretGenerator entries (or SecretGenerator objects,
// which have the same fields) of file, whose paths are relative to dir: a
// Secret made from literals, or from an env file or file that is not a
// SOPS-encrypted file of the same set, is plaintext in the cluster's hands
// and in the repository.
func generators(file, dir string, v any, lookup func(string) ([]byte, bool)) []Finding {
	list, _ := v.([]any)
	var out []Finding
	for i, e := range list {
		m, _ := asMap(e)
		if m == nil {
			continue
		}
		name, _ := m["name"].(string)
		if md, _ := asMap(m["metadata"]); name == "" && md != nil {
			name, _ = md["name"].(string)
		}
		what := Finding{File: file, Entry: fmt.Sprintf("secretGenerator[%d]", i), Kind: "Secret", Name: name}
		if lits, _ := m["literals"].([]any); len(lits) > 0 {
			what.Problem = "makes a Secret from literals, which are plaintext: use a SOPS-encrypted env file or Secret"
			out = append(out, what)
		}
		var paths []string
		for _, k := range []string{"files", "envs"} {
			l, _ := m[k].([]any)
			for _, p := range l {
				if s, ok := p.(string); ok {
					paths = append(paths, s)
				}
			}
		}
		if env, _ := m["env"].(string); env != "" {
			paths = append(paths, env)
		}
		for _, p := range paths {
			if _, v, ok := strings.Cut(p, "="); ok {
				p = v
			}
			data, ok := lookup(path.Join(dir, p))
			if !ok || !sopsFile(data) {
				what.Problem = "makes a Secret from a file that is not a SOPS-encrypted file published with it: encrypt it with SOPS"
				out = append(out, what)
				break
			}
		}
	}
	return out
}

// sopsFile reports whether data is a SOPS-encrypted file in one of the
// formats Flux decrypts for a secretGenerator, encrypted under SOPS's own
// rules (sopsrules.go): YAML or JSON (also SOPS's binary format, a JSON
// object) with a top-level sops mapping, or a dotenv file with sops_ keys.
// A sops stanza with a MAC over plaintext values is not encryption.
func sopsFile(data []byte) bool {
	var v any
	if err := yaml.Unmarshal(data, &v); err == nil {
		if doc, ok := asMap(v); ok {
			if _, ok := doc["sops"]; ok {
				return sopsEncryptedYAML(data)
			}
			return false
		}
	}
	return sopsEncryptedDotenv(data)
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

// objects returns o, or the items of a List kind (which kustomize expands).
func objects(o map[string]any) []map[string]any {
	if k, _ := o["kind"].(string); strings.HasSuffix(k, "List") {
		if items, ok := o["items"].([]any); ok {
			var out []map[string]any
			for _, it := range items {
				if m, _ := asMap(it); m != nil {
					out = append(out, objects(m)...)
				}
			}
			return out
		}
	}
	return []map[string]any{o}
}

// empty reports whether a data value holds nothing: absent, null or "".
func empty(v any) bool {
	return v == nil || v == ""
}

// hasData reports whether a Secret carries any non-empty data or stringData
// value (or a data field that is not a plain mapping, to be safe).
func hasData(obj map[string]any) bool {
	for _, k := range []string{"data", "stringData"} {
		v := obj[k]
		if empty(v) {
			continue
		}
		m, ok := asMap(v)
		if !ok {
			return true
		}
		for _, e := range m {
			if !empty(e) {
				return true
			}
		}
	}
	return false
}

// encrypted reports whether a Secret is SOPS-encrypted the way Flux decrypts
// it: a top-level sops mapping with a MAC and age or other keys, and every
// data and stringData value an AES256_GCM envelope.
func encrypted(obj map[string]any) bool {
	s, _ := asMap(obj["sops"])
	if mac, _ := s["mac"].(string); mac == "" {
		return false
	}
	for _, k := range []string{"data", "stringData"} {
		v := obj[k]
		if v == nil {
			continue
		}
		m, ok := asMap(v)
		if !ok {
			return false
		}
		for _, e := range m {
			if s, ok := e.(string); !ok || !isEnvelope(s) {
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
func verrazzanoCA(obj map[string]any, ns, name string) bool {
	if ns != verrazzanoNamespace || !strings.HasPrefix(name, verrazzanoCAPrefix) {
		return false
	}
	if obj["stringData"] != nil {
		return false
	}
	d := obj["data"]
	if d == nil {
		return true
	}
	m, ok := asMap(d)
	if !ok {
		return false
	}
	for k, v := range m {
		s, ok := v.(string)
		if k != verrazzanoCAKey || !ok {
			return false
		}
		pem, err := base64.StdEncoding.DecodeString(s)
		if err != nil || bytes.Contains(pem, []byte("PRIVATE KEY")) {
			return false
		}
	}
	return true
}

// asMap returns a YAML mapping decoded into any with string keys: yaml.v3
// gives map[any]any when a key is not a string, and such an object is still
// looked at (keys formatted), not skipped.
func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[fmt.Sprint(k)] = e
		}
		return out, true
	}
	return nil, false
}
