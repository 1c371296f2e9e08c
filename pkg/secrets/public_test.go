package secrets

import (
	"encoding/base64"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
)

// argoSecret is an Argo CD cluster Secret as pkg/generate writes it, with
// config and the document's tail replaceable.
func argoSecret(config, extra string) []byte {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return []byte(layout.Header + `apiVersion: v1
data:
  config: ` + b64(config) + `
  name: ` + b64("edge-1") + `
  server: ` + b64("https://edge-1.example:6443") + `
kind: Secret
metadata:
  labels:
    argocd.argoproj.io/secret-type: cluster
    env: prod
  name: cluster-edge-1
  namespace: argocd
type: Opaque
` + extra)
}

const (
	publicConfig = `{"execProviderConfig":{"command":"argocd-k8s-auth","args":["azure"],"env":{"AAD_LOGIN_METHOD":"workloadidentity","AZURE_CLIENT_ID":"00000000-0000-0000-0000-000000000001"},"apiVersion":"client.authentication.k8s.io/v1beta1"},"tlsClientConfig":{"insecure":false,"caData":"%CA%"}}`
	certPEM      = "-----BEGIN CERTIFICATE-----\nMIIBAA==\n-----END CERTIFICATE-----\n"
	keyPEM       = "-----BEGIN EC PRIVATE KEY-----\nMIIBAA==\n-----END EC PRIVATE KEY-----\n"
)

func withCA(pem string) string {
	return strings.Replace(publicConfig, "%CA%", base64.StdEncoding.EncodeToString([]byte(pem)), 1)
}

// TestPublicArgoCDCluster: the Secret fleetgen renders passes the plaintext
// guard; any credential, or anything that could hold one, makes it a Secret
// like any other, which Scan refuses in plaintext.
func TestPublicArgoCDCluster(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		data []byte
		want bool
	}{
		"as rendered":          {argoSecret(withCA(certPEM), ""), true},
		"no CA":                {argoSecret(strings.Replace(withCA(""), `,"caData":""`, "", 1), ""), true},
		"bearer token":         {argoSecret(strings.Replace(withCA(certPEM), `{"exec`, `{"bearerToken":"x","exec`, 1), ""), false},
		"password":             {argoSecret(strings.Replace(withCA(certPEM), `{"exec`, `{"username":"a","password":"x","exec`, 1), ""), false},
		"client key data":      {argoSecret(strings.Replace(withCA(certPEM), `"insecure":false`, `"insecure":false,"keyData":"eA=="`, 1), ""), false},
		"private key as CA":    {argoSecret(withCA(certPEM+keyPEM), ""), false},
		"client secret in env": {argoSecret(strings.Replace(withCA(certPEM), `"AAD_LOGIN_METHOD":"workloadidentity"`, `"AAD_LOGIN_METHOD":"workloadidentity","AAD_SERVICE_PRINCIPAL_CLIENT_SECRET":"x"`, 1), ""), false},
		"spn login":            {argoSecret(strings.Replace(withCA(certPEM), "workloadidentity", "spn", 1), ""), false},
		"another command":      {argoSecret(strings.Replace(withCA(certPEM), "argocd-k8s-auth", "sh", 1), ""), false},
		"no exec provider":     {argoSecret(`{"tlsClientConfig":{"insecure":false}}`, ""), false},
		"config not JSON":      {argoSecret("token: x", ""), false},
		"two JSON values":      {argoSecret(withCA(certPEM)+`{"bearerToken":"x"}`, ""), false},
		"stringData":           {argoSecret(withCA(certPEM), "stringData: {token: x}\n"), false},
		"a second document":    {argoSecret(withCA(certPEM), "---\napiVersion: v1\nkind: Secret\nmetadata: {name: x}\ndata: {token: eA==}\n"), false},
		"annotations":          {[]byte(strings.Replace(string(argoSecret(withCA(certPEM), "")), "  labels:", "  annotations: {a: b}\n  labels:", 1)), false},
		"a shard":              {[]byte(strings.Replace(string(argoSecret(withCA(certPEM), "")), "  name: ZWRnZS0x", "  name: ZWRnZS0x\n  shard: Mg==", 1)), true},
		"a shard not a number": {[]byte(strings.Replace(string(argoSecret(withCA(certPEM), "")), "  name: ZWRnZS0x", "  name: ZWRnZS0x\n  shard: eA==", 1)), false},
		"another data key":     {[]byte(strings.Replace(string(argoSecret(withCA(certPEM), "")), "  name: ZWRnZS0x", "  name: ZWRnZS0x\n  token: eA==", 1)), false},
		"not a cluster Secret": {[]byte(strings.Replace(string(argoSecret(withCA(certPEM), "")), "secret-type: cluster", "secret-type: repository", 1)), false},
		"data not base64":      {[]byte(strings.Replace(string(argoSecret(withCA(certPEM), "")), "name: ZWRnZS0x", "name: \"not base64!\"", 1)), false},
		"duplicate key":        {[]byte(strings.Replace(string(argoSecret(withCA(certPEM), "")), "kind: Secret", "kind: Secret\nkind: Secret", 1)), false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := PublicArgoCDCluster(tt.data); got != tt.want {
				t.Errorf("PublicArgoCDCluster = %v, want %v", got, tt.want)
			}
			f := layout.File{Path: "manager/argocd/edge-1.yaml", Data: tt.data}
			err := Scan(ExceptPublic([]layout.File{f}), false)
			if tt.want && err != nil {
				t.Errorf("Scan refuses the public Secret: %v", err)
			}
			if !tt.want && err == nil {
				t.Error("Scan lets the Secret through in plaintext")
			}
			if err != nil && strings.Contains(err.Error(), "eA==") {
				t.Errorf("the error quotes the Secret: %v", err)
			}
		})
	}
}

// TestExceptPublicKeepsSecretFiles: a File.Secret (to be sealed) is never
// dropped, whatever it holds, so Scan still finds it unsealed.
func TestExceptPublicKeepsSecretFiles(t *testing.T) {
	t.Parallel()
	files := []layout.File{
		{Path: "a.yaml", Data: []byte("a: 1\n")},
		{Path: "manager/argocd/edge-1.yaml", Data: argoSecret(withCA(certPEM), ""), Secret: true},
		{Path: "manager/argocd/edge-2.yaml", Data: argoSecret(withCA(certPEM), "")},
		{Path: "z.yaml", Data: []byte("z: 1\n")},
	}
	got := ExceptPublic(files)
	var paths []string
	for _, f := range got {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, " ") != "a.yaml manager/argocd/edge-1.yaml z.yaml" {
		t.Errorf("ExceptPublic kept %v", paths)
	}
	if err := Scan(got, false); err == nil || !strings.Contains(err.Error(), "manager/argocd/edge-1.yaml") {
		t.Errorf("Scan of an unsealed File.Secret = %v, want a refusal", err)
	}
}
