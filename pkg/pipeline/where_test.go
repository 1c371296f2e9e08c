package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestImageAt: where a layer's file spells an image, for a lock problem to
// point at: the exact reference, else the first of the same repository (a
// kustomize images: rewrite), else nowhere; a file outside the fleet's
// folder is never read.
func TestImageAt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{
		"app/deploy.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - {name: a, image: \"nginx:1.25\"}\n        - name: b\n          image: ghcr.io/acme/app:2\n",
	})
	outside := filepath.Join(t.TempDir(), "deploy.yaml")
	if err := os.WriteFile(outside, []byte("image: ghcr.io/acme/app:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "app", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		src       images.Source
		line, col int
	}{
		"exact":        {images.Source{File: "app/deploy.yaml", Written: "ghcr.io/acme/app:2"}, 13, 18},
		"flow":         {images.Source{File: "app/deploy.yaml", Written: "nginx:1.25"}, 11, 28},
		"same repo":    {images.Source{File: "app/deploy.yaml", Written: "ghcr.io/acme/app:3@sha256:" + "ab"}, 13, 18},
		"not there":    {images.Source{File: "app/deploy.yaml", Written: "busybox:1.36"}, 0, 0},
		"no such file": {images.Source{File: "app/none.yaml", Written: "nginx:1.25"}, 0, 0},
		"symlink out":  {images.Source{File: "app/link.yaml", Written: "ghcr.io/acme/app:2"}, 0, 0},
		"climbs out":   {images.Source{File: "../deploy.yaml", Written: "ghcr.io/acme/app:2"}, 0, 0},
		"no file":      {images.Source{File: "", Written: "x"}, 0, 0},
	} {
		if line, col := imageAt(dir, tc.src); line != tc.line || col != tc.col {
			t.Errorf("%s: imageAt = %d:%d, want %d:%d", name, line, col, tc.line, tc.col)
		}
	}
}
