package pipeline

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/test/testenv"
)

// gitCommitAll makes dir a Git work tree (when it is not one yet) and commits
// everything in it; it returns HEAD.
func gitCommitAll(t *testing.T, dir, msg string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		testenv.Git(t, dir, "init", "--quiet", "--initial-branch=main")
	}
	testenv.Git(t, dir, "add", "-A")
	testenv.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", msg)
	return testenv.Git(t, dir, "rev-parse", "HEAD")
}

// commits returns how many commits the bare repository's main has.
func commits(t *testing.T, bare string) string {
	t.Helper()
	n, err := testenv.GitErr(bare, "rev-list", "--count", "main")
	if err != nil {
		return "0"
	}
	return n
}

// TestPublishRefusesDirty: inside a Git work tree, publish refuses (an input
// error, nothing pushed) while fleet.yaml, the lock or a layer folder has
// uncommitted changes, untracked files included; --allow-dirty publishes and
// says so in the message; a clean tree's commit message names HEAD.
func TestPublishRefusesDirty(t *testing.T) {
	t.Parallel()
	cfg, o, bare, _ := pubSetup(t, false)
	root := filepath.Dir(cfg.File)
	head := gitCommitAll(t, root, "fleet")

	dirty := map[string]func(){
		"fleet.yaml modified": func() {
			testenv.ReplaceIn(t, cfg.File, "metadata:", "# a comment\nmetadata:")
		},
		"lock modified": func() {
			testenv.ReplaceIn(t, filepath.Join(root, "fleet.lock.yaml"), "images:", "# a comment\nimages:")
		},
		"untracked file in a layer folder": func() {
			pubWrite(t, root, map[string]string{"infrastructure/dev/new.yaml": "kind: ConfigMap\n"})
		},
		"layer file staged": func() {
			pubWrite(t, root, map[string]string{"infrastructure/prod/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n  namespace: default\n"})
			testenv.Git(t, root, "add", "-A")
		},
	}
	for _, name := range []string{"fleet.yaml modified", "lock modified", "untracked file in a layer folder", "layer file staged"} {
		dirty[name]()
		_, err := Publish(context.Background(), cfg, o)
		if err == nil || !problem.IsInvalid(err) || !strings.Contains(err.Error(), "uncommitted changes") {
			t.Errorf("%s: publish = %v, want an input error about uncommitted changes", name, err)
		}
		if n := commits(t, bare); n != "0" {
			t.Fatalf("%s: %s commits pushed, want none", name, n)
		}
		testenv.Git(t, root, "reset", "--quiet", "--hard")
		testenv.Git(t, root, "clean", "--quiet", "-fd")
	}

	// A file outside fleet.yaml, the lock and the layer folders does not count.
	pubWrite(t, root, map[string]string{"README.md": "notes\n"})
	if _, err := Publish(context.Background(), cfg, o); err != nil {
		t.Fatal(err)
	}
	if msg := testenv.Git(t, bare, "log", "-1", "--format=%B", "main"); !strings.Contains(msg, "fleet repository: "+head) || strings.Contains(msg, "(dirty)") {
		t.Errorf("commit message %q does not name the fleet repository's commit %s", msg, head)
	}

	// --allow-dirty publishes the uncommitted change of a tracked file and
	// marks the commit (an untracked file is never published).
	pubWrite(t, root, map[string]string{"infrastructure/prod/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dirty\n  namespace: default\n"})
	do := o
	do.AllowDirty = true
	if _, err := Publish(context.Background(), cfg, do); err != nil {
		t.Fatal(err)
	}
	if msg := testenv.Git(t, bare, "log", "-1", "--format=%B", "main"); !strings.Contains(msg, "fleet repository: "+head+" (dirty)") {
		t.Errorf("commit message %q lacks %s (dirty)", msg, head)
	}
}

// TestPublishDryRun: --dry-run does everything but push and prints what the
// commit would add, change and remove.
func TestPublishDryRun(t *testing.T) {
	t.Parallel()
	cfg, o, bare, _ := pubSetup(t, false)
	do := o
	do.DryRun = true
	res, err := Publish(context.Background(), cfg, do)
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.NewBufferString(res.DryRun)
	if n := commits(t, bare); n != "0" {
		t.Fatalf("dry run pushed %s commits", n)
	}
	for _, want := range []string{"would commit to", "A manager/kustomization.yaml\n", "A infrastructure/prod/kustomization.yaml\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out.String())
		}
	}
	// After a real publish, a changed layer file reads M, a removed one D.
	if _, err := Publish(context.Background(), cfg, o); err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(cfg.File)
	pubWrite(t, root, map[string]string{"infrastructure/prod/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: z\n  namespace: default\n"})
	if res, err = Publish(context.Background(), cfg, do); err != nil {
		t.Fatal(err)
	}
	out = bytes.NewBufferString(res.DryRun)
	if !strings.Contains(out.String(), "M infrastructure/prod/cm.yaml\n") || !strings.Contains(out.String(), "changing 1 files") {
		t.Errorf("dry run output:\n%s", out.String())
	}
	if n := commits(t, bare); n != "1" {
		t.Fatalf("%s commits after a dry run, want 1", n)
	}
}

// TestLockedImages: mirror --locked refuses a lock whose image entries would
// be added, changed or dropped, counting them (image references come from
// layers, and messages quote none), and accepts the same entries.
func TestLockedImages(t *testing.T) {
	t.Parallel()
	img := func(src, digest string) lock.Image {
		return lock.Image{Source: src, Target: "r.example/" + src, Digest: "sha256:" + strings.Repeat(digest, 64)}
	}
	old := lock.New()
	old.SetImages([]lock.Image{img("a:1", "a"), img("b:1", "b"), img("c:1", "c")})
	if err := lockedImages(old, old.Clone()); err != nil {
		t.Errorf("same entries: %v", err)
	}
	next := lock.New()
	next.SetImages([]lock.Image{img("a:1", "a"), img("b:1", "d"), img("n:1", "e")})
	err := lockedImages(old, next)
	if err == nil || !problem.IsInvalid(err) || !strings.Contains(err.Error(), "change 3 image entries") || strings.Contains(err.Error(), "n:1") || !strings.Contains(err.Error(), "run `fleetgen mirror` locally") {
		t.Errorf("changed entries: %v", err)
	}
}
