package publish

import (
	"path/filepath"
	"slices"
	"testing"

	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestPublishTrackedOnly is issue 26 family 4: inside a Git work tree, a file
// of a layer folder that Git ignores or does not track is never published
// (the commit the publish message names does not hold it), while every
// tracked file is; outside a work tree every file is.
func TestPublishTrackedOnly(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"", "fleet"} { // fleet.yaml at the work tree's root, or below it
		t.Run("at "+map[string]string{"": "root", "fleet": "fleet/"}[sub], func(t *testing.T) {
			t.Parallel()
			fx := newFixture(t, schema.SourceGit, "https://git.example/x.git", "", "")
			root := fx.f.Dir
			if sub != "" {
				// Make a work tree above the source root.
				root = filepath.Dir(fx.f.Dir)
			}
			testenv.WriteTree(t, fx.f.Dir, map[string]string{".gitignore": "*.local.yaml\n"})
			testenv.Git(t, root, "init", "--quiet", "--initial-branch=main")
			testenv.Git(t, root, "add", "-A")
			testenv.Git(t, root, "commit", "--quiet", "-m", "fleet")
			testenv.WriteTree(t, fx.f.Dir, map[string]string{
				"apps/prod/secret.local.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ignored}\n",
				"apps/prod/untracked.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: untracked}\n",
				"apps/prod/staged.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: staged}\n",
			})
			testenv.Git(t, fx.f.Dir, "add", "apps/prod/staged.yaml")

			c, err := collect(fx.f, fx.files, quiet(t))
			if err != nil {
				t.Fatal(err)
			}
			paths := c.paths()
			for _, p := range []string{"apps/prod/secret.local.yaml", "apps/prod/untracked.yaml"} {
				if slices.Contains(paths, p) {
					t.Errorf("published %s, which Git does not track", p)
				}
			}
			for _, p := range []string{"apps/prod/staged.yaml", "apps/prod/kustomization.yaml", "infrastructure/base/namespace.yaml"} {
				if !slices.Contains(paths, p) {
					t.Errorf("did not publish %s, which Git tracks", p)
				}
			}
		})
	}

	// Outside a work tree, the folder is all there is.
	fx := newFixture(t, schema.SourceGit, "https://git.example/x.git", "", "")
	testenv.WriteTree(t, fx.f.Dir, map[string]string{"apps/prod/untracked.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: u}\n"})
	c, err := collect(fx.f, fx.files, quiet(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.paths(), "apps/prod/untracked.yaml") {
		t.Error("outside a Git work tree a layer file was left out")
	}
}
