package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGitDaemon(t *testing.T) {
	t.Parallel()
	repo := BareRepo(t, "fleet.git")
	url := GitDaemon(t, repo)

	work := t.TempDir()
	Git(t, work, "init", "--quiet", "--initial-branch=main")
	if err := os.WriteFile(filepath.Join(work, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, work, "add", "a.txt")
	Git(t, work, "commit", "--quiet", "-m", "first")
	want := Git(t, work, "rev-parse", "HEAD")
	Git(t, work, "push", "--quiet", url, "main")

	if got := Git(t, repo, "rev-parse", "main"); got != want {
		t.Errorf("bare repo main = %s, want %s", got, want)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	Git(t, "", "clone", "--quiet", url, clone)
	b, err := os.ReadFile(filepath.Join(clone, "a.txt"))
	if err != nil || string(b) != "a\n" {
		t.Errorf("clone a.txt = %q, %v", b, err)
	}
}
