package publish

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
	"github.com/google/go-containerregistry/pkg/registry"
)

// marker stands for a credential: it must never reach a branch, an artifact
// or an error.
const marker = "c2VjcmV0LW1hcmtlci0xMjM0NQ=="

// kubeconfigSecret is a plaintext kubeconfig Secret as someone might leave it
// in a layer folder.
const kubeconfigSecret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: prod-kubeconfig\n  namespace: flux-system\ndata:\n  value: " + marker + "\n"

// TestPublishRefusesPlaintextSecrets: a Secret with plaintext data anywhere in
// what would be pushed (a layer's top-level folder, the render) refuses the
// publish, to Git and to OCI, with nothing pushed and the data never echoed.
func TestPublishRefusesPlaintextSecrets(t *testing.T) {
	var requests atomic.Int64
	reg := registry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ociURL := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/contoso/fleet"

	for _, tc := range []struct {
		name    string
		layer   map[string]string // added to the source root
		render  map[string]string // added to the render
		secret  bool              // the render file is a credential file
		wantErr string
	}{
		{name: "kubeconfig in a layer's top-level folder", layer: map[string]string{"infrastructure/kubeconfig.yaml": kubeconfigSecret},
			wantErr: "infrastructure/kubeconfig.yaml: Secret flux-system/prod-kubeconfig holds unencrypted data"},
		{name: "stringData deep in a layer", layer: map[string]string{"apps/base/x/creds.yaml": "kind: Secret\nmetadata:\n  name: c\nstringData:\n  password: " + marker + "\n"},
			wantErr: "apps/base/x/creds.yaml: Secret c holds unencrypted data"},
		{name: "Secret in a List in a layer", layer: map[string]string{"apps/list.yaml": "kind: List\nitems:\n- " + strings.ReplaceAll(kubeconfigSecret, "\n", "\n  ") + "\n"},
			wantErr: "apps/list.yaml: Secret flux-system/prod-kubeconfig"},
		{name: "plaintext Secret in the render", render: map[string]string{"manager/fleet/prod-1/kubeconfig.yaml": layout.Header + kubeconfigSecret}, secret: true,
			wantErr: "manager/fleet/prod-1/kubeconfig.yaml: Secret flux-system/prod-kubeconfig"},
	} {
		for _, kind := range []string{schema.SourceGit, schema.SourceOCI} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				bare := testenv.BareRepo(t, "fleet.git")
				url := clusterURL
				if kind == schema.SourceOCI {
					url = ociURL
				}
				fx := newFixture(t, kind, url, "", "")
				fx.f.Spec.Source.Insecure = true
				testenv.WriteTree(t, fx.f.Dir, tc.layer)
				for p, d := range tc.render {
					setFile(fx, p, d)
					for i := range fx.files {
						if fx.files[i].Path == p {
							fx.files[i].Secret = tc.secret
						}
					}
				}
				requests.Store(0)
				var err error
				if kind == schema.SourceGit {
					_, err = Git(context.Background(), fx.f, fx.l, fx.files, WithPushURL(bare))
				} else {
					_, err = OCI(context.Background(), fx.f, fx.l, fx.files)
				}
				var pe *PlaintextError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want a PlaintextError", err)
				}
				if problem.IsInvalid(err) {
					t.Error("a refused publish is a runtime failure (exit 1), not an input error")
				}
				if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "nothing pushed") {
					t.Errorf("error lacks %q:\n%v", tc.wantErr, err)
				}
				if strings.Contains(err.Error(), marker) {
					t.Error("the error quotes the Secret's data")
				}
				if refs := testenv.Git(t, bare, "for-each-ref"); refs != "" {
					t.Errorf("pushed to Git: %s", refs)
				}
				if n := requests.Load(); n != 0 {
					t.Errorf("%d requests reached the registry", n)
				}
			})
		}
	}
}

// TestPublishSkipsOutDirInLayerFolder: an output folder inside a layer's
// top-level folder is not published as layer files.
func TestPublishSkipsOutDirInLayerFolder(t *testing.T) {
	fx := newFixture(t, schema.SourceGit, clusterURL, "", "")
	testenv.WriteTree(t, fx.f.Dir, map[string]string{"apps/out/clusters/prod-1/dropped.yaml": kubeconfigSecret})
	o := quiet(t)
	o.outDir = fx.f.Dir + "/apps/out"
	c, err := collect(fx.f, fx.files, o)
	if err != nil {
		t.Fatal(err)
	}
	for p := range c.files {
		if strings.HasPrefix(p, "apps/out/") {
			t.Errorf("published %s from the output folder", p)
		}
	}
}

// TestContentCheck: a WithContentCheck sees every published file and its
// error refuses the publish.
func TestContentCheck(t *testing.T) {
	bare := testenv.BareRepo(t, "fleet.git")
	fx := newFixture(t, schema.SourceGit, clusterURL, "", "")
	var seen []string
	check := func(files []layout.File) error {
		for _, f := range files {
			seen = append(seen, f.Path)
		}
		return errors.New("sealed Secret manager/fleet/prod-1/kubeconfig.yaml does not decrypt to what fleet.yaml says")
	}
	_, err := Git(context.Background(), fx.f, fx.l, fx.files, WithPushURL(bare), WithContentCheck(check))
	if err == nil || !strings.Contains(err.Error(), "nothing pushed: sealed Secret") {
		t.Fatalf("err = %v", err)
	}
	if len(seen) != len(fx.want) {
		t.Errorf("the check saw %d files, want %d", len(seen), len(fx.want))
	}
	if refs := testenv.Git(t, bare, "for-each-ref"); refs != "" {
		t.Errorf("pushed: %s", refs)
	}
}

// TestCollectRefusesSymlinkedLayerFolder: a layer's top-level folder that is
// a symlink (say, to the runner's home) is refused, not followed.
func TestCollectRefusesSymlinkedLayerFolder(t *testing.T) {
	fx := newFixture(t, schema.SourceGit, clusterURL, "", "")
	outside := t.TempDir()
	testenv.WriteTree(t, outside, map[string]string{"prod/secret.yaml": "outside the source root\n"})
	if err := os.RemoveAll(filepath.Join(fx.f.Dir, "apps")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(fx.f.Dir, "apps")); err != nil {
		t.Fatal(err)
	}
	_, err := collect(fx.f, fx.files, quiet(t))
	if !problem.IsInvalid(err) || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("err = %v, want an input error about the symlink", err)
	}
}
