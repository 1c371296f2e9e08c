package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"

	"fleetgen.dev/fleetgen/pkg/layout"
	"go.yaml.in/yaml/v3"
)

// ExceptPublic returns files without those that hold a Secret which is
// public by construction: an Argo CD cluster Secret (spec.argocd) holding a
// cluster's name, server URL, CA certificate and an exec provider that
// authenticates at run time (argocd-k8s-auth azure with workload identity),
// and nothing else. Scan and Plaintext see the rest: render and publish let
// such a Secret through in plaintext when spec.encryption is not set,
// whoever wrote the file, because what decides is its content, checked key
// by key (docs/secrets.md). A File.Secret (sealed when spec.encryption is
// set) is always kept, for Scan to check it is sealed.
//
// It is applied by Scan's callers rather than inside Scan (scan.go, whose
// per-cluster rework is under way); the rule lives here, once.
func ExceptPublic(files []layout.File) []layout.File {
	var out []layout.File
	for i, f := range files {
		if f.Secret || !bytes.Contains(f.Data, []byte("argocd.argoproj.io/secret-type")) || !PublicArgoCDCluster(f.Data) {
			if out != nil {
				out = append(out, f)
			}
			continue
		}
		if out == nil {
			out = append(make([]layout.File, 0, len(files)), files[:i]...)
		}
	}
	if out == nil {
		return files
	}
	return out
}

// Argo CD's cluster Secret, as fleetgen writes it (pkg/generate/argocd.go).
const (
	argoSecretTypeLabel = "argocd.argoproj.io/secret-type"
	argoAuthCommand     = "argocd-k8s-auth"
)

// argoPublicEnv are the exec provider's environment variables that name an
// identity or an endpoint, never a secret (Argo CD's AKS documentation; the
// service principal's client secret and the user password flows are not
// among them).
var argoPublicEnv = map[string]bool{
	"AAD_LOGIN_METHOD": true, "AZURE_CLIENT_ID": true, "AZURE_TENANT_ID": true,
	"AAD_ENVIRONMENT_NAME": true, "AZURE_AUTHORITY_HOST": true,
	"AZURE_FEDERATED_TOKEN_FILE": true, "AAD_SERVER_APPLICATION_ID": true,
}

// argoPublicConfig is every key an Argo CD cluster config may hold to be
// public; json decoding refuses any other (a bearerToken, a password, key
// data, an AWS or other provider's settings).
type argoPublicConfig struct {
	ExecProviderConfig *struct {
		Command    string            `json:"command"`
		Args       []string          `json:"args"`
		Env        map[string]string `json:"env"`
		APIVersion string            `json:"apiVersion"`
	} `json:"execProviderConfig"`
	TLSClientConfig struct {
		Insecure   bool   `json:"insecure"`
		ServerName string `json:"serverName"`
		CAData     []byte `json:"caData"`
	} `json:"tlsClientConfig"`
}

// PublicArgoCDCluster reports whether data is one YAML document holding
// exactly an Argo CD cluster Secret with no credential: apiVersion, kind,
// metadata (name, namespace, labels with argocd.argoproj.io/secret-type:
// cluster; no annotations, which could copy values), type Opaque and data
// with only name, server, config and shard (a decimal replica number,
// spec.shards.argocd); config is JSON with only
// execProviderConfig (argocd-k8s-auth azure, workload identity, environment
// variables that name identities only) and tlsClientConfig (insecure,
// serverName, caData of CERTIFICATE blocks only).
func PublicArgoCDCluster(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return false
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return false // a second document, or one that does not parse
	}
	if !onlyKeys(doc, "apiVersion", "kind", "metadata", "type", "data") ||
		doc["apiVersion"] != "v1" || doc["kind"] != "Secret" || (doc["type"] != nil && doc["type"] != "Opaque") {
		return false
	}
	md, ok := doc["metadata"].(map[string]any)
	if !ok || !onlyKeys(md, "name", "namespace", "labels") {
		return false
	}
	labels, ok := md["labels"].(map[string]any)
	if !ok || labels[argoSecretTypeLabel] != "cluster" {
		return false
	}
	d, ok := doc["data"].(map[string]any)
	if !ok || !onlyKeys(d, "name", "server", "config", "shard") {
		return false
	}
	values := map[string][]byte{}
	for k, v := range d {
		s, ok := v.(string)
		if !ok {
			return false
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return false
		}
		values[k] = b
	}
	if s, ok := values["shard"]; ok && !decimal(s) {
		return false // the application-controller replica: a number, nothing else
	}
	var cfg argoPublicConfig
	jd := json.NewDecoder(bytes.NewReader(values["config"]))
	jd.DisallowUnknownFields()
	if err := jd.Decode(&cfg); err != nil || jd.More() {
		return false
	}
	e := cfg.ExecProviderConfig
	if e == nil || e.Command != argoAuthCommand || len(e.Args) != 1 || e.Args[0] != "azure" || e.Env["AAD_LOGIN_METHOD"] != "workloadidentity" {
		return false
	}
	for k := range e.Env {
		if !argoPublicEnv[k] {
			return false
		}
	}
	return certificatesOnly(cfg.TLSClientConfig.CAData)
}

// onlyKeys reports whether m has no key but those.
func onlyKeys(m map[string]any, keys ...string) bool {
	n := 0
	for _, k := range keys {
		if _, ok := m[k]; ok {
			n++
		}
	}
	return n == len(m)
}

// certificatesOnly reports whether b is empty or PEM CERTIFICATE blocks and
// nothing else (no key, no other text).
func certificatesOnly(b []byte) bool {
	for rest := bytes.TrimSpace(b); len(rest) > 0; rest = bytes.TrimSpace(rest) {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil || blk.Type != "CERTIFICATE" || len(blk.Headers) > 0 {
			return false
		}
	}
	return true
}

// decimal reports whether b is a small non-negative decimal number.
func decimal(b []byte) bool {
	if len(b) == 0 || len(b) > 4 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
