package images

import (
	"os/exec"
	"testing"
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

// TestNoExec: while a build runs, no program can be found on PATH.
func TestNoExec(t *testing.T) {
	t.Parallel()
	restore := noExec()
	_, err := exec.LookPath("git")
	restore()
	if err == nil {
		t.Fatal("git is found on PATH during a build")
	}
}
