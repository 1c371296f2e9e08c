package layers_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Attacks on the layer builds from a pull request: each must be refused as an
// input error, leak nothing and fetch nothing.

const marker = "FLEETGEN_SECRET_MARKER_5f1c"

// stealEnv copies a file into a ConfigMap and from there into an image field,
// so that a build error quoting the image would print the file.
const stealEnv = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [deploy.yaml]
configMapGenerator:
- name: loot
  files: [e=%s]
replacements:
- source: {kind: ConfigMap, name: loot, fieldPath: data.e}
  targets:
  - select: {kind: Deployment, name: web}
    fieldPaths: [spec.template.spec.containers.0.image]
`

const deploy = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: web, image: nginx:1.27}]
`

func attackFleet(dir string) *schema.Fleet {
	return fleet(dir, []schema.Layer{{Name: "apps", Path: "./apps"}})
}

// refused runs Discover and checks that it fails as an input error that
// holds want and no secret marker.
func refused(t *testing.T, f *schema.Fleet, want string) {
	t.Helper()
	_, err := discover(f)
	if err == nil {
		t.Fatal("Discover succeeded")
	}
	if !problem.IsInvalid(err) {
		t.Errorf("error %v is not an input error", err)
	}
	if strings.Contains(err.Error(), marker) {
		t.Fatalf("error quotes the environment: %v", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
}

func TestConfinedEnvironFile(t *testing.T) {
	t.Setenv("FLEETGEN_TEST_MARKER", marker)
	for name, file := range map[string]string{
		"absolute": "/proc/self/environ",
		"dotdot":   "../../../../../../../../proc/self/environ",
		"symlink":  "env",
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"apps/kustomization.yaml": strings.Replace(stealEnv, "%s", file, 1),
				"apps/deploy.yaml":        deploy,
			})
			if err := os.Symlink("/proc/self/environ", filepath.Join(dir, "apps", "env")); err != nil {
				t.Fatal(err)
			}
			refused(t, attackFleet(dir), "is not in or below")
		})
	}
}

// TestConfinedImageNotQuoted: a replacement that turns a file inside the
// fleet into an invalid image is reported by object, not by value.
func TestConfinedImageNotQuoted(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"apps/kustomization.yaml": strings.Replace(stealEnv, "%s", "notes.txt", 1),
		"apps/deploy.yaml":        deploy,
		"apps/notes.txt":          "TOKEN=" + marker + "\n",
	})
	refused(t, attackFleet(dir), "Deployment web containers web: invalid image reference")
}

func TestConfinedNoHTTP(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(deploy))
	}))
	defer srv.Close()
	u := srv.URL + "/deploy.yaml"
	for name, k := range map[string]string{
		"resource":       "resources: [" + u + "]\n",
		"patch":          "resources: [deploy.yaml]\npatches: [{path: " + u + "}]\n",
		"generator file": "resources: [deploy.yaml]\nconfigMapGenerator: [{name: x, files: [e=" + u + "]}]\n",
		"component":      "resources: [deploy.yaml]\ncomponents: [" + u + "]\n",
		"nested":         "resources: [deploy.yaml, sub]\n",
		"openapi":        "resources: [deploy.yaml]\nopenapi: {path: " + u + "}\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{
				"apps/kustomization.yaml":     k,
				"apps/deploy.yaml":            deploy,
				"apps/sub/kustomization.yaml": "resources: [" + u + "]\n",
			})
			refused(t, attackFleet(dir), "fleetgen fetches nothing remote")
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server saw %d requests, want 0", n)
	}
}

func TestConfinedNoGit(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"apps/kustomization.yaml": "resources:\n- github.com/fluxcd/flux2//manifests/install?ref=v2.9.5\n",
	})
	refused(t, attackFleet(dir), "fleetgen fetches nothing remote")
}

// TestConfinedOutside: ../ references and symlinks that leave the folder of
// fleet.yaml are refused, however they are spelled.
func TestConfinedOutside(t *testing.T) {
	t.Parallel()
	outer := writeTree(t, map[string]string{
		"outside/kustomization.yaml": "resources: [deploy.yaml]\n",
		"outside/deploy.yaml":        deploy,
	})
	root := filepath.Join(outer, "fleet")
	write := func(files map[string]string) {
		for p, c := range files {
			full := filepath.Join(root, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("dotdot resource", func(t *testing.T) {
		os.RemoveAll(root)
		write(map[string]string{"apps/kustomization.yaml": "resources: [../../outside]\n"})
		refused(t, attackFleet(root), "is neither a file nor a folder inside the folder of fleet.yaml")
	})
	t.Run("symlinked manifest", func(t *testing.T) {
		os.RemoveAll(root)
		write(map[string]string{"apps/ok.yaml": deploy})
		if err := os.Symlink(filepath.Join(outer, "outside", "deploy.yaml"), filepath.Join(root, "apps", "web.yaml")); err != nil {
			t.Fatal(err)
		}
		refused(t, attackFleet(root), "is not in or below")
	})
	t.Run("symlinked folder", func(t *testing.T) {
		os.RemoveAll(root)
		write(map[string]string{"base/x.yaml": deploy})
		if err := os.Symlink(filepath.Join(outer, "outside"), filepath.Join(root, "apps")); err != nil {
			t.Fatal(err)
		}
		refused(t, attackFleet(root), "is not in or below")
	})
}

// TestOpenAPILayer: a layer that brings its own OpenAPI schema builds, and
// the layers built after it still see kustomize's builtin schema (a
// strategic merge patch on a Deployment merges containers by name).
func TestOpenAPILayer(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"a/kustomization.yaml": "resources: [deploy.yaml]\nopenapi: {path: schema.json}\n",
		"a/schema.json":        `{"definitions": {}}`,
		"a/deploy.yaml":        deploy,
		"b/kustomization.yaml": "resources: [deploy.yaml]\npatches: [{path: patch.yaml}]\n",
		"b/deploy.yaml":        deploy,
		"b/patch.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers: [{name: sidecar, image: "busybox:1.36"}]
`,
	})
	f := fleet(dir, []schema.Layer{{Name: "a", Path: "./a"}, {Name: "b", Path: "./b"}})
	res, err := discover(f)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(res.LayerImages["b"], " ")
	if got != "busybox:1.36 nginx:1.27" {
		t.Errorf("layer b images = %q, want both containers (builtin schema merged them by name)", got)
	}
}
