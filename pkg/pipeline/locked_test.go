package pipeline_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/test/testenv"
)

// commitAll makes dir a Git work tree (when it is not one yet) and commits
// everything in it.
func commitAll(t *testing.T, dir, msg string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		testenv.Git(t, dir, "init", "--quiet", "--initial-branch=main")
	}
	testenv.Git(t, dir, "add", "-A")
	testenv.Git(t, dir, "commit", "--quiet", "-m", msg)
}

// bareCommits returns how many commits the bare repository's main has.
func bareCommits(t *testing.T, bare string) string {
	t.Helper()
	n, err := testenv.GitErr(bare, "rev-list", "--count", "main")
	if err != nil {
		return "0"
	}
	return n
}

// TestLockedMergeJobs: a fleet repository gets a new agent cluster and the
// lock is not committed. Two fresh clones run the merge job (`build --publish
// --locked`) against one bare repository: both refuse with an input error and
// neither publishes a client ID. Without --locked the dirty check refuses too
// (the render changed the lock in the work tree).
func TestLockedMergeJobs(t *testing.T) {
	t.Parallel()
	src := strings.TrimPrefix(httptest.NewServer(registry.New()).URL, "http://")
	dst := strings.TrimPrefix(httptest.NewServer(registry.New()).URL, "http://")
	pushKured(t, src)
	agent, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	agentRef := src + "/rancher/fleet-agent:v0.16.1"
	if err := remote.Write(mustTag(t, agentRef), agent); err != nil {
		t.Fatal(err)
	}
	file := aksFleet(t, src, dst, agentRef)
	repo := filepath.Dir(file)
	// The committed state: a complete lock (mirror made it).
	if _, err := pipeline.Mirror(context.Background(), pipeline.Config{File: file}, pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	commitAll(t, repo, "fleet")
	// The pull request adds an agent cluster; nobody ran render.
	testenv.ReplaceIn(t, file, "  clusters:\n", "  clusters:\n    - name: edge-new\n      labels: {region: edge}\n      registration: {mode: agent}\n")
	commitAll(t, repo, "add edge-new")

	bare := testenv.BareRepo(t, "gitops.git")
	for i, locked := range []bool{true, true, false} {
		clone := filepath.Join(t.TempDir(), "clone")
		testenv.Git(t, "", "clone", "--quiet", repo, clone)
		cfg := pipeline.Config{File: filepath.Join(clone, "fleet.yaml"), Locked: locked}
		err := pipeline.Build(context.Background(), cfg, pipeline.BuildOptions{
			Publish: pipeline.PublishOptions{OutDir: filepath.Join(t.TempDir(), "out"), PushURL: bare}, Push: true})
		if err == nil || !problem.IsInvalid(err) {
			t.Fatalf("job %d (locked %v): build --publish = %v, want an input error", i, locked, err)
		}
		if locked && !strings.Contains(err.Error(), "edge-new") {
			t.Errorf("job %d: error %q does not name the cluster", i, err)
		}
		if n := bareCommits(t, bare); n != "0" {
			t.Fatalf("job %d (locked %v) published %s commits", i, locked, n)
		}
	}
}

func mustTag(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}
