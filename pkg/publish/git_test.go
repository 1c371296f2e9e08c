package publish

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/test/testenv"
	"github.com/google/go-cmp/cmp"
)

const clusterURL = "ssh://git@github.com/contoso/fleet-gitops.git"

// cloneTree clones branch main of url with the git CLI and returns its files.
func cloneTree(t testing.TB, url string) (map[string]string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	testenv.Git(t, "", "clone", "--quiet", "--branch", "main", url, dir)
	return testenv.ReadTree(t, dir, ".git"), dir
}

// seed pushes files as one commit to branch main of url and returns the commit.
func seed(t testing.TB, url string, files map[string]string) string {
	t.Helper()
	work := t.TempDir()
	testenv.Git(t, work, "init", "--quiet", "--initial-branch=main")
	testenv.WriteTree(t, work, files)
	testenv.Git(t, work, "add", "-A")
	testenv.Git(t, work, "commit", "--quiet", "-m", "seed")
	testenv.Git(t, work, "push", "--quiet", url, "main")
	return testenv.Git(t, work, "rev-parse", "HEAD")
}

func TestGitPublish(t *testing.T) {
	for _, tc := range []struct {
		name    string
		srcPath string
		remote  func(t *testing.T, bare string) string
	}{
		{"git daemon, root", "", func(t *testing.T, bare string) string { return testenv.GitDaemon(t, bare) }},
		{"git daemon, path", "deploy/fleet", func(t *testing.T, bare string) string { return testenv.GitDaemon(t, bare) }},
		{"file url", "", func(t *testing.T, bare string) string { return "file://" + bare }},
		{"local path", "deploy", func(t *testing.T, bare string) string { return bare }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			bare := testenv.BareRepo(t, "fleet.git")
			url := tc.remote(t, bare)
			fx := newFixture(t, "git", clusterURL, tc.srcPath, "")
			opts := []Option{WithPushURL(url), WithLookupEnv(env(map[string]string{EnvGitAuthor: "CI Bot <ci@example.invalid>"}))}

			// Empty remote: the branch starts.
			res, err := Git(ctx, fx.f, fx.l, fx.files, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Changed || res.Attempts != 1 {
				t.Errorf("first publish: %+v, want changed in 1 attempt", res)
			}
			got, clone := cloneTree(t, url)
			if d := cmp.Diff(fx.want, got); d != "" {
				t.Errorf("published tree (-want +got):\n%s", d)
			}
			if head := testenv.Git(t, clone, "rev-parse", "HEAD"); head != res.Revision {
				t.Errorf("HEAD %s, Result.Revision %s", head, res.Revision)
			}
			digest, err := InputDigest(fx.f, fx.l)
			if err != nil {
				t.Fatal(err)
			}
			if msg, wantMsg := testenv.Git(t, clone, "log", "-1", "--format=%an <%ae>|%s"),
				"CI Bot <ci@example.invalid>|fleetgen: publish contoso (input "+digest+")"; msg != wantMsg {
				t.Errorf("commit %q, want %q", msg, wantMsg)
			}

			// Again: no new commit.
			res2, err := Git(ctx, fx.f, fx.l, fx.files, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if res2.Changed || res2.Revision != res.Revision {
				t.Errorf("second publish: %+v, want unchanged at %s", res2, res.Revision)
			}
			if n := testenv.Git(t, bare, "rev-list", "--count", "main"); n != "1" {
				t.Errorf("%s commits after publishing twice, want 1", n)
			}
		})
	}
}

func TestGitKeepsForeignFiles(t *testing.T) {
	h := layout.Header
	for _, tc := range []struct {
		name    string
		srcPath string
		foreign map[string]string // kept byte for byte
		stale   map[string]string // fleetgen files this render lacks: removed
	}{
		{
			name:    "root",
			srcPath: "",
			foreign: map[string]string{
				"README.md": "hello\n", "docs/notes.md": "notes\n", "fleet.yaml": "user's own\n",
				// Someone else's files in the rendered folders and a layer folder.
				"manager/fleet/old/cluster.yaml":  "old\n",
				"clusters/gone/kustomization.yml": "old\n",
				"agents/gone/values.yaml":         "old\n",
				"infrastructure/old/x.yaml":       "old\n",
				// fleetgen files outside this render's folders: another fleet's.
				"managerial/x.yaml":               h + "x\n",
				"fleets/other/clusters/a/ks.yaml": h + "other fleet\n",
				"infrastructure/other/ks.yaml":    h + "not in a rendered folder\n",
			},
			stale: map[string]string{
				"manager/fleet/old/token.yaml":       h + "old\n",
				"clusters/gone/source.yaml":          h + "old\n",
				"agents/gone/values.yaml.bak":        h + "old\n",
				".sops.yaml":                         h + "old\n",
				"clusters/prod-1/old-layer.yaml":     h + "old\n",
				"manager/fleet/prod-1/executable.sh": h + "old\n",
			},
		},
		{
			name:    "path",
			srcPath: "deploy",
			foreign: map[string]string{
				"README.md": "hello\n", "manager/mine.yaml": "user's\n", "clusters/mine/x.yaml": "user's\n",
				"clusters/theirs.yaml":    h + "another fleet at the root\n",
				"deploy/manager/old.yaml": "old\n", "apps/old.yaml": "old\n",
			},
			stale: map[string]string{"deploy/manager/old-fleetgen.yaml": h + "old\n", "deploy/anything/x.yaml": h + "old\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			bare := testenv.BareRepo(t, "fleet.git")
			url := "file://" + bare
			seedFiles := map[string]string{}
			for p, d := range tc.foreign {
				seedFiles[p] = d
			}
			for p, d := range tc.stale {
				seedFiles[p] = d
			}
			base := seed(t, url, seedFiles)
			fx := newFixture(t, "git", clusterURL, tc.srcPath, "")
			res, err := Git(ctx, fx.f, fx.l, fx.files, WithPushURL(url))
			if err != nil {
				t.Fatal(err)
			}
			got, clone := cloneTree(t, url)
			want := map[string]string{}
			for p, d := range fx.want {
				want[p] = d
			}
			for p, d := range tc.foreign {
				want[p] = d
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("tree (-want +got):\n%s", d)
			}
			if parent := testenv.Git(t, clone, "rev-parse", "HEAD^"); parent != base {
				t.Errorf("parent %s, want the seeded commit %s", parent, base)
			}
			if !res.Changed {
				t.Error("Changed = false")
			}
		})
	}
}

func TestGitRetriesOnMovedBranch(t *testing.T) {
	ctx := context.Background()
	bare := testenv.BareRepo(t, "fleet.git")
	url := testenv.GitDaemon(t, bare)
	seed(t, url, map[string]string{"README.md": "hello\n"})

	// Another writer pushes between our fetch and our push, once.
	other := filepath.Join(t.TempDir(), "other")
	testenv.Git(t, "", "clone", "--quiet", url, other)
	var intruder string
	hook := func(attempt int) {
		if attempt != 1 {
			return
		}
		testenv.WriteTree(t, other, map[string]string{"docs/other.md": "someone else\n"})
		testenv.Git(t, other, "add", "-A")
		testenv.Git(t, other, "commit", "--quiet", "-m", "someone else")
		testenv.Git(t, other, "push", "--quiet", "origin", "main")
		intruder = testenv.Git(t, other, "rev-parse", "HEAD")
	}
	fx := newFixture(t, "git", clusterURL, "", "")
	res, err := Git(ctx, fx.f, fx.l, fx.files, WithPushURL(url), withBeforePush(hook))
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 {
		t.Errorf("Attempts = %d, want 2", res.Attempts)
	}
	_, clone := cloneTree(t, url)
	if parent := testenv.Git(t, clone, "rev-parse", "HEAD^"); parent != intruder {
		t.Errorf("our commit's parent %s, want the other writer's %s", parent, intruder)
	}
	if b, err := os.ReadFile(filepath.Join(clone, "docs/other.md")); err != nil || string(b) != "someone else\n" {
		t.Errorf("other writer's file lost: %q, %v", b, err)
	}
}

func TestGitGivesUpWhenBranchKeepsMoving(t *testing.T) {
	ctx := context.Background()
	bare := testenv.BareRepo(t, "fleet.git")
	url := testenv.GitDaemon(t, bare)
	seed(t, url, map[string]string{"README.md": "hello\n"})
	other := filepath.Join(t.TempDir(), "other")
	testenv.Git(t, "", "clone", "--quiet", url, other)
	hook := func(attempt int) {
		testenv.WriteTree(t, other, map[string]string{"docs/other.md": fmt.Sprintf("push %d\n", attempt)})
		testenv.Git(t, other, "add", "-A")
		testenv.Git(t, other, "commit", "--quiet", "-m", "other", "--allow-empty")
		testenv.Git(t, other, "push", "--quiet", "origin", "main")
	}
	fx := newFixture(t, "git", clusterURL, "", "")
	_, err := Git(ctx, fx.f, fx.l, fx.files, WithPushURL(url), WithRetries(2), withBeforePush(hook))
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Fatalf("err = %v, want giving up after 3 attempts", err)
	}
	_, clone := cloneTree(t, url)
	if _, err := os.Stat(filepath.Join(clone, "manager")); err == nil {
		t.Error("our tree reached the branch although every push failed")
	}
}

func TestGitRacingPublishers(t *testing.T) {
	ctx := context.Background()
	bare := testenv.BareRepo(t, "fleet.git")
	url := testenv.GitDaemon(t, bare)
	seed(t, url, map[string]string{"README.md": "hello\n"})

	const n = 4
	results := make([]Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		fx := newFixture(t, "git", clusterURL, "", fmt.Sprintf("publisher: %d\n", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = Git(ctx, fx.f, fx.l, fx.files, WithPushURL(url), WithRetries(10))
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("publisher %d: %v", i, errs[i])
		}
		if !results[i].Changed {
			t.Errorf("publisher %d: unchanged", i)
		}
	}
	if got := testenv.Git(t, bare, "rev-list", "--count", "main"); got != fmt.Sprint(n+1) {
		t.Errorf("%s commits on main, want %d (seed + one per publisher)", got, n+1)
	}
	for i, r := range results {
		if _, err := testenv.GitErr(bare, "merge-base", "--is-ancestor", r.Revision, "main"); err != nil {
			t.Errorf("publisher %d's commit %s is not in main's history", i, r.Revision)
		}
	}
}

func TestGitHTTPSToken(t *testing.T) {
	ctx := context.Background()
	bare := testenv.BareRepo(t, "fleet.git")
	url := testenv.GitHTTP(t, bare, "x-access-token", "fake-token")
	fx := newFixture(t, "git", clusterURL, "", "")

	if _, err := Git(ctx, fx.f, fx.l, fx.files, WithPushURL(url), WithLookupEnv(env(nil))); err == nil || !strings.Contains(err.Error(), "authentication required") {
		t.Fatalf("without a token: err = %v, want authentication required", err)
	}
	res, err := Git(ctx, fx.f, fx.l, fx.files, WithPushURL(url),
		WithLookupEnv(env(map[string]string{EnvGitToken: "fake-token"})))
	if err != nil {
		t.Fatal(err)
	}
	if got := testenv.Git(t, bare, "rev-parse", "main"); got != res.Revision {
		t.Errorf("main = %s, want %s", got, res.Revision)
	}
	// A token in the URL never shows in errors.
	_, err = Git(ctx, fx.f, fx.l, fx.files, WithPushURL("http://user:fake-secret@127.0.0.1:1/x.git"))
	if err == nil || strings.Contains(err.Error(), "fake-secret") {
		t.Errorf("err = %v, want an error without the credential", err)
	}
}
