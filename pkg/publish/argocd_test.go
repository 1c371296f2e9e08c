package publish

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// argoSecret is an Argo CD cluster Secret with config.
func argoSecret(config string) string {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  labels:\n    argocd.argoproj.io/secret-type: cluster\n  name: cluster-prod-1\n  namespace: argocd\ntype: Opaque\ndata:\n  name: " +
		b64("prod-1") + "\n  server: " + b64("https://prod-1.example:6443") + "\n  config: " + b64(config) + "\n"
}

const argoPublicConfig = `{"execProviderConfig":{"command":"argocd-k8s-auth","args":["azure"],"env":{"AAD_LOGIN_METHOD":"workloadidentity","AZURE_CLIENT_ID":"00000000-0000-0000-0000-000000000001"},"apiVersion":"client.authentication.k8s.io/v1beta1"},"tlsClientConfig":{"insecure":false}}`

// TestPublishArgoCDSecrets: publish pushes the Argo CD cluster Secret
// fleetgen renders without encryption (it holds no credential), and refuses
// one that holds a bearer token, whether in the render or in a layer folder.
func TestPublishArgoCDSecrets(t *testing.T) {
	fx := newFixture(t, schema.SourceGit, clusterURL, "", "")
	fx.files = append(fx.files, layout.File{Path: "manager/argocd/prod-1.yaml", Data: []byte(layout.Header + argoSecret(argoPublicConfig))})
	if _, err := collect(fx.f, fx.files, quiet(t)); err != nil {
		t.Fatalf("publish refuses a public Argo CD cluster Secret: %v", err)
	}

	withToken := strings.Replace(argoPublicConfig, `{"exec`, `{"bearerToken":"`+marker+`","exec`, 1)
	fx = newFixture(t, schema.SourceGit, clusterURL, "", "")
	testenv.WriteTree(t, fx.f.Dir, map[string]string{"apps/argocd.yaml": argoSecret(withToken)})
	_, err := collect(fx.f, fx.files, quiet(t))
	var pe *PlaintextError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "apps/argocd.yaml: Secret argocd/cluster-prod-1 holds unencrypted data") {
		t.Fatalf("an Argo CD Secret with a token in a layer: err = %v, want a PlaintextError", err)
	}
	if strings.Contains(err.Error(), marker) {
		t.Error("the error quotes the token")
	}
}
