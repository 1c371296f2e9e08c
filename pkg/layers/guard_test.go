package layers

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// TestRemote: kustomize's rule, name by name (api v0.21 internal/git
// NewRepoSpecFromURL and internal/loader IsRemoteFile).
func TestRemote(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"x@127.0.0.1:repo.git":          true,
		"github.com/evil/repo":          true,
		"GitHub.com:evil/repo":          true,
		"GIT::x@host:r.git":             true,
		"git::./local":                  true, // refused as before, though kustomize would read it
		"a@host:r.git?ref=main":         true,
		"root@localhost:r.git":          true,
		"https://example.com/r.git":     true,
		"HTTPS://example.com/x.yaml":    true,
		"https:example.com/x.yaml":      true,
		"ssh://git@host/r":              true,
		"file:///tmp/r":                 true,
		"base":                          false,
		"../base":                       false,
		"./x@127.0.0.1:repo.git":        false, // kustomize reads it locally
		"1x@host:r":                     false, // no user name: local
		"/abs/x@host:r":                 false,
		"deploy.yaml":                   false,
		"github.company.com/x":          false,
		"overlays/github.com/evil/repo": false,
	} {
		if got := remote(s); got != want {
			t.Errorf("remote(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestRemoteCoversKustomize asks kustomize itself: each name is a resource of
// a kustomization on an in-memory file system, built with no git on PATH.
// When kustomize took the name for a repository, its error says it looked
// for git; remote must then say true. PATH is empty for the test, so that
// kustomize can start no git (t.Setenv: not parallel, so no other test of
// the package runs meanwhile). Names remote refuses that kustomize
// reads locally are allowed (remote errs on the side of refusing).
func TestRemoteCoversKustomize(t *testing.T) {
	t.Setenv("PATH", "")
	var names []string
	for _, host := range []string{"127.0.0.1", "host", "github.com", "GitHub.com", "gitlab.com", "x.y", "[::1]"} {
		for _, pat := range []string{
			"x@%s:repo.git", "x@%s:org/repo", "git@%s/org/repo", "%s/org/repo", "%s:org/repo", "%s/org/repo.git",
			"ssh://x@%s/r", "https://%s/org/repo", "HTTP://%s/org/repo.git", "file://%s/r", "git::x@%s:r.git",
			"GIT::https://%s/r", "a-b@%s:r?ref=main", "A1@%s:r.git?timeout=1", "1a@%s:r", "-a@%s:r", "./x@%s:r",
			"%s/_git/r", "https://%s/_git/r//sub", "x@%s:r.git//sub?ref=v1", "%s", "%s.git", "sub/%s:r",
		} {
			names = append(names, fmt.Sprintf(pat, host))
		}
	}
	tried := 0
	for _, n := range names {
		fs := filesys.MakeFsInMemory()
		if err := fs.WriteFile("/app/kustomization.yaml", []byte(fmt.Sprintf("resources: [%q]\n", n))); err != nil {
			t.Fatal(err)
		}
		k := krusty.MakeKustomizer(&krusty.Options{LoadRestrictions: types.LoadRestrictionsNone, PluginConfig: types.DisabledPluginConfig()})
		_, err := k.Run(fs, "/app")
		triedGit := err != nil && strings.Contains(err.Error(), "no 'git' program on path")
		if triedGit {
			tried++
		}
		if triedGit && !remote(n) {
			t.Errorf("kustomize takes %q for a Git repository, remote says local", n)
		}
	}
	// The oracle works: most of these names are repositories to kustomize.
	if tried < len(names)/3 {
		t.Errorf("kustomize tried git for %d of %d names: the oracle is broken", tried, len(names))
	}
	t.Logf("kustomize tried git for %d of %d names", tried, len(names))
}

// TestVarNameSameAsFlux: the variable-name test the model uses
// (schema.IsVarName) says what Flux's varsubRegex (varNameRE) says.
func TestVarNameSameAsFlux(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"", "a", "_", "A9", "_x_1", "9a", "a-b", "a.b", "kubernetes.io/os", "é", "a b", "a\n", "Z", "z0", "0", "ab\x00", "ÄÖ"} {
		if got, want := schema.IsVarName(k), varNameRE.MatchString(k); got != want {
			t.Errorf("schema.IsVarName(%q) = %v, varNameRE says %v", k, got, want)
		}
	}
}
