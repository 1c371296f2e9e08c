package secrets

import (
	"encoding/base64"
	"strings"

	"go.yaml.in/yaml/v3"
)

// lastApplied is the annotation kubectl keeps the whole applied object in.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// ObjectProblem says why obj, one object a cluster receives (decoded to
// plain values: maps, slices, strings, …), would put a credential in Git in
// plaintext, or "" when it would not: a phrase to follow "Secret ns/name"
// ("holds unencrypted data"). It never quotes a value. Only kind
// Secret is looked at, whatever made the object one (a file, a generator, a
// patch, a replacement, a substituted variable):
//
//   - a Secret whose data or stringData holds a value that is not
//     SOPS-encrypted is a problem, unless it is generated from
//     SOPS-encrypted files (kustomize-controller decrypts those before the
//     build) or is a Verrazzano CA Secret holding only a public certificate;
//   - a Secret that keeps a copy of its values in an annotation is a problem
//     even when its data is encrypted: kubectl's last-applied-configuration,
//     or any annotation whose value is a serialized object with data or
//     stringData that is not encrypted.
func ObjectProblem(obj map[string]any) string {
	if k, _ := obj["kind"].(string); k != "Secret" {
		return ""
	}
	md, _ := asMap(obj["metadata"])
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	switch {
	case encrypted(obj), fromSOPSFiles(obj), verrazzanoCA(obj, ns, name):
	case hasData(obj):
		return "holds unencrypted data"
	}
	return annotationCopy(md)
}

// annotationCopy says which annotation of a Secret's metadata md holds a copy
// of Secret data ("" when none).
func annotationCopy(md map[string]any) string {
	ann, _ := asMap(md["annotations"])
	if _, ok := ann[lastApplied]; ok {
		return "keeps a copy of itself, data included, in the annotation " + lastApplied
	}
	for _, v := range ann {
		s, ok := v.(string)
		if !ok || !strings.ContainsAny(s, "{:") {
			continue
		}
		var doc any
		if yaml.Unmarshal([]byte(s), &doc) != nil {
			continue
		}
		m, _ := asMap(doc)
		if m == nil {
			continue
		}
		if (m["data"] != nil || m["stringData"] != nil) && !encrypted(m) {
			return "has an annotation holding a serialized object whose data or stringData is not encrypted"
		}
	}
	return ""
}

// Encrypted reports whether obj holds SOPS-encrypted content that
// kustomize-controller decrypts before it applies it (and so needs the
// Kustomization's decryption): an object with SOPS metadata (a top-level sops
// mapping holding a MAC), or a Secret generated from SOPS-encrypted files.
func Encrypted(obj map[string]any) bool {
	s, _ := asMap(obj["sops"])
	if mac, _ := s["mac"].(string); mac != "" {
		return true
	}
	if k, _ := obj["kind"].(string); k != "Secret" {
		return false
	}
	return fromSOPSFiles(obj)
}

// fromSOPSFiles reports whether a Secret is what kustomize's secretGenerator
// makes of SOPS-encrypted sources, which kustomize-controller decrypts before
// the build: every data value is a SOPS-encrypted file (files: …), or a
// dotenv source's entries (envs: …), each an envelope, with its sops_mac
// envelope beside them. It has no stringData.
func fromSOPSFiles(obj map[string]any) bool {
	if obj["stringData"] != nil {
		return false
	}
	data, _ := asMap(obj["data"])
	if len(data) == 0 {
		return false
	}
	env, mac := false, false
	for k, v := range data {
		s, ok := v.(string)
		if !ok {
			return false
		}
		dec, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return false
		}
		switch {
		case k == "sops_mac":
			if !isEnvelope(string(dec)) {
				return false
			}
			mac = true
		case strings.HasPrefix(k, "sops_"):
			env = true
		case isEnvelope(string(dec)):
			env = true
		case sopsFile(dec):
		default:
			return false
		}
	}
	return !env || mac
}
