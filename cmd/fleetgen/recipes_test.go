package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.yaml.in/yaml/v3"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestCIRecipesRun runs the CI recipes of docs/ci/ as a runner would, against
// a local bare Git repository and local registries, so that a recipe that does
// not run fails here. Every `run:` step of the GitHub workflows and every
// script line of the GitLab file runs unedited in bash; only what a runner
// provides is stood in for: `actions/checkout` clones the fleet repository
// (or, for the published tree, the bare gitops repository), `setup-go` and
// `cache` are the machine's Go and a HOME shared between jobs, and the GitHub
// and GitLab APIs (the comment steps) are a recording `gh` and a local HTTP
// server. The install step really clones fleetgen's repository at HEAD and
// runs `make install`.
//
// It checks: the paths filters cover every input of the fleet; two merge jobs
// of an unchanged fleet make one commit; a pull request that changes nothing
// posts no comment, one that changes something posts one, on both GitHub and
// GitLab.
func TestCIRecipesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fleetgen from a clone and runs the CI jobs")
	}
	for _, tool := range []string{"bash", "git", "make", "curl", "jq"} {
		testenv.Tool(t, tool)
	}
	src, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	commit, err := testenv.GitErr(src, "rev-parse", "HEAD")
	if err != nil {
		t.Skipf("not a Git checkout: the install recipe clones a commit of fleetgen (%v)", err)
	}
	var r recipes
	r.setup(t, src, commit)

	ghMerge := readWorkflow(t, "github-merge.yml")
	ghPR := readWorkflow(t, "github-pull-request.yml")
	gl := readGitLab(t)
	for name, paths := range map[string][]string{
		"github-merge.yml":        ghMerge.On.Push.Paths,
		"github-pull-request.yml": ghPR.On.PullRequest.Paths,
		"gitlab-ci.yml review":    gl.Jobs["review"].Rules[0].Changes,
		"gitlab-ci.yml publish":   gl.Jobs["publish"].Rules[0].Changes,
	} {
		for _, in := range r.inputs {
			if !slices.ContainsFunc(paths, func(p string) bool { return globMatch(p, in) }) {
				t.Errorf("%s: the paths filter %v misses the input %s: a change to it would not run the job", name, paths, in)
			}
		}
	}

	// The merge job, twice, from fresh checkouts of an unchanged fleet.
	r.github(t, ghMerge, "main")
	first := bareCount(t, r.bare)
	r.github(t, ghMerge, "main")
	second := bareCount(t, r.bare)
	t.Logf("gitops commits after two GitHub merge jobs of an unchanged fleet: %s, %s", first, second)
	if first != "1" || second != "1" {
		t.Fatalf("two merge jobs made %s then %s commits, want 1 and 1", first, second)
	}

	// A pull request that changes nothing: no comment.
	r.github(t, ghPR, "main")
	if calls := r.ghCalls(t); len(calls) != 0 {
		t.Errorf("the pull request job commented on a change that changes nothing: %q", calls)
	}
	// One that changes a cluster: one comment, from diff.md.
	testenv.Git(t, r.repo, "checkout", "--quiet", "-b", "pr")
	testenv.ReplaceIn(t, filepath.Join(r.repo, "fleet.yaml"), "labels: {env: prod, region: eu}", "labels: {env: prod, region: eu, tier: gold}")
	testenv.Git(t, r.repo, "commit", "--quiet", "-am", "edge-1: tier gold")
	testenv.Git(t, r.repo, "checkout", "--quiet", "main")
	ws := r.github(t, ghPR, "pr")
	calls := r.ghCalls(t)
	if !slices.Contains(calls, "pr comment 7 --body-file diff.md") {
		t.Errorf("the pull request job did not post diff.md as a comment; gh calls: %q", calls)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "diff.md")); err != nil || !strings.HasPrefix(string(b), "<!-- fleetgen diff -->") {
		t.Errorf("diff.md = %.80q, %v; want the markdown report with its marker", b, err)
	}

	// GitLab: the review of the same two states, then the publish job.
	r.gitlab(t, gl, "review", "main")
	if n := len(r.notes()); n != 0 {
		t.Errorf("the review job posted %d notes for a change that changes nothing", n)
	}
	r.gitlab(t, gl, "review", "pr")
	if notes := r.notes(); len(notes) != 1 || !strings.HasPrefix(notes[0], "<!-- fleetgen diff -->") {
		t.Errorf("the review job posted %d notes, want one report: %.80q", len(notes), notes)
	}
	r.gitlab(t, gl, "publish", "main")
	if n := bareCount(t, r.bare); n != "1" {
		t.Errorf("the GitLab publish job of the unchanged fleet made a commit: %s commits", n)
	}

	// A pull request that adds an agent cluster without committing its client
	// ID: the comment shows "(generated at render)" (docs/ci.md), then
	// --locked fails the job naming the cluster; on GitLab too.
	testenv.Git(t, r.repo, "checkout", "--quiet", "-b", "new-agent", "main")
	testenv.ReplaceIn(t, filepath.Join(r.repo, "fleet.yaml"), "  clusters:\n", "  clusters:\n    - name: edge-9\n      labels: {env: dev}\n")
	testenv.Git(t, r.repo, "commit", "--quiet", "-am", "edge-9, its client ID not in the lock")
	testenv.Git(t, r.repo, "checkout", "--quiet", "main")
	ws, failed, out := r.githubJobs(t, ghPR, "new-agent")
	if !strings.Contains(failed, "annotate") || !strings.Contains(out, "edge-9") {
		t.Errorf("the pull request job that lacks edge-9's client ID: failed step %q, want annotate naming edge-9:\n%s", failed, out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "diff.md")); err != nil || !strings.Contains(string(b), "generated at render") {
		t.Errorf("the comment does not show (generated at render): %v\n%s", err, b)
	}
	if calls := r.ghCalls(t); !slices.Contains(calls, "pr comment 7 --body-file diff.md") {
		t.Errorf("the comment was not posted before the job failed; gh calls: %q", calls)
	}
	glOut, err := r.gitlabJob(t, gl, "review", "new-agent")
	if err == nil || !strings.Contains(glOut, "edge-9") {
		t.Errorf("the GitLab review that lacks edge-9's client ID: %v, want a failure naming it:\n%s", err, glOut)
	}
	if notes := r.notes(); len(notes) != 1 || !strings.Contains(notes[0], "generated at render") {
		t.Errorf("the GitLab note does not show (generated at render): %.300q", notes)
	}

	// An invalid fleet.yaml: GitLab's review job fails with the problem in
	// its log, file:line:col and field.
	testenv.Git(t, r.repo, "checkout", "--quiet", "-b", "invalid", "main")
	testenv.ReplaceIn(t, filepath.Join(r.repo, "fleet.yaml"), "registration: {mode: agent, tokenTTL: 24h}", "registration: {mode: pull, tokenTTL: 24h}")
	testenv.Git(t, r.repo, "commit", "--quiet", "-am", "a mode that does not exist")
	testenv.Git(t, r.repo, "checkout", "--quiet", "main")
	glOut, err = r.gitlabJob(t, gl, "review", "invalid")
	if err == nil || !regexp.MustCompile(`fleet\.yaml:\d+:\d+: spec\.clusters\[\d+\]\.registration\.mode: unsupported value "pull"`).MatchString(glOut) {
		t.Errorf("the GitLab review of an invalid fleet: %v, want the problem in the log:\n%s", err, glOut)
	}
}

// recipes is the world the CI jobs run in.
type recipes struct {
	src, commit string   // fleetgen's repository and the commit the install step builds
	repo        string   // the fleet repository (a work tree; jobs clone it)
	bare        string   // the gitops repository the jobs publish to
	inputs      []string // every input file of the fleet, relative to repo
	home        string   // HOME shared by the jobs: the install step's cache
	tools       string   // the recording gh
	ghLog       string
	ageKey      string

	api      *httptest.Server // GitLab's notes API
	mu       sync.Mutex
	notesLog []string
}

// setup makes the fleet repository from examples/quickstart with its images
// in a local source registry (spec.sourceMirrors) mirrored to a local target
// registry, its lock made by `fleetgen mirror`, and an empty gitops repository.
func (r *recipes) setup(t *testing.T, src, commit string) {
	r.src, r.commit = src, commit
	qs := filepath.Join(src, "examples", "quickstart")
	r.repo = localQuickstart(t, src)
	r.ageKey = filepath.Join(qs, "age.agekey")
	testenv.Git(t, r.repo, "init", "--quiet", "--initial-branch=main")
	testenv.Git(t, r.repo, "add", "-A")
	testenv.Git(t, r.repo, "commit", "--quiet", "-m", "fleet")
	r.bare = testenv.BareRepo(t, "fleet-gitops.git")

	f, err := schema.Load(filepath.Join(r.repo, "fleet.yaml"), schema.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.inputs = fleetInputs(t, r.repo, f)

	r.home = t.TempDir()
	r.tools = t.TempDir()
	r.ghLog = filepath.Join(t.TempDir(), "gh.log")
	gh := "#!/bin/sh\n# gh stands in for GitHub's API here: it records its arguments.\necho \"$*\" >> \"$GH_LOG\"\n"
	if err := os.WriteFile(filepath.Join(r.tools, "gh"), []byte(gh), 0o755); err != nil {
		t.Fatal(err)
	}
	r.api = httptest.NewServer(http.HandlerFunc(r.serveNotes))
	t.Cleanup(r.api.Close)
}

// localQuickstart copies examples/quickstart (without its age key) to a new
// folder whose images come from a local source registry (spec.sourceMirrors)
// and are mirrored to a local target registry by `fleetgen mirror`, which
// wrote its lock; it returns the folder. The registries live as long as the
// test process.
func localQuickstart(t *testing.T, src string) string {
	t.Helper()
	srcReg := strings.TrimPrefix(httptest.NewServer(registry.New()).URL, "http://")
	dstReg := strings.TrimPrefix(httptest.NewServer(registry.New()).URL, "http://")
	qs := filepath.Join(src, "examples", "quickstart")
	repo := testenv.CopyTree(t, qs, ".fleetgen", "age.agekey")
	old, err := lock.Load(filepath.Join(qs, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	mirrors := map[string]string{}
	for _, img := range old.Images {
		host, rest, _ := strings.Cut(img.Source, "/")
		mirror := srcReg + "/" + strings.ReplaceAll(host, ".", "-")
		mirrors[host] = mirror
		im, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(mirror+"/"+rest, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, im); err != nil {
			t.Fatal(err)
		}
	}
	var sm strings.Builder
	sm.WriteString("  sourceMirrors:\n")
	for _, host := range sortedKeys(mirrors) {
		fmt.Fprintf(&sm, "    - {host: %s, mirror: %q, insecure: true}\n", host, mirrors[host])
	}
	testenv.ReplaceIn(t, filepath.Join(repo, "fleet.yaml"),
		"  registry:\n    host: quickstart.azurecr.io\n", "  registry:\n    host: \""+dstReg+"\"\n    insecure: true\n"+sm.String())
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"mirror", "-q", "-f", filepath.Join(repo, "fleet.yaml")}, nil, io.Discard, &stderr); code != 0 {
		t.Fatalf("fleetgen mirror: exit %d: %s", code, stderr.String())
	}
	return repo
}

// fleetInputs lists, relative to root, every file fleetgen reads for f:
// fleet.yaml, the lock, every file in the folder of each {file:} reference
// and in each layer's top-level folder.
func fleetInputs(t *testing.T, root string, f *schema.Fleet) []string {
	t.Helper()
	set := map[string]bool{"fleet.yaml": true, lock.FileName: true}
	folders := map[string]bool{}
	for _, p := range f.FileRefs() {
		folders[path.Dir(filepath.ToSlash(p))] = true
	}
	for _, l := range f.Spec.Layers {
		for i := range f.Spec.Clusters {
			folders[strings.SplitN(schema.CleanPath(schema.ExpandPath(l.Path, &f.Spec.Clusters[i])), "/", 2)[0]] = true
		}
	}
	for d := range folders {
		err := filepath.WalkDir(filepath.Join(root, filepath.FromSlash(d)), func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			set[filepath.ToSlash(rel)] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return sortedKeys(set)
}

// globMatch reports whether a paths filter pattern (GitHub's and GitLab's
// globs: ** for any depth) matches the slash path p.
func globMatch(pattern, p string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/**"); ok {
		return strings.HasPrefix(p, dir+"/")
	}
	if dir, ok := strings.CutSuffix(pattern, "/**/*"); ok {
		return strings.HasPrefix(p, dir+"/")
	}
	m, _ := path.Match(pattern, p)
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func bareCount(t *testing.T, bare string) string {
	t.Helper()
	n, err := testenv.GitErr(bare, "rev-list", "--count", "main")
	if err != nil {
		return "0"
	}
	return n
}

// settings are what a user configures once in the CI system (repository or
// CI/CD variables and secrets), here pointing at the local world.
func (r *recipes) settings() map[string]string {
	key, _ := os.ReadFile(r.ageKey)
	return map[string]string{
		"vars.FLEETGEN_SOURCE":             r.src,
		"vars.FLEETGEN_COMMIT":             r.commit,
		"vars.FLEET_GITOPS_URL":            r.bare,
		"vars.FLEET_GITOPS_REPOSITORY":     "contoso/fleet-gitops",
		"secrets.FLEET_GITOPS_TOKEN":       "token-for-the-gitops-repository",
		"secrets.FLEET_GITOPS_READ_TOKEN":  "read-token",
		"secrets.FLEET_REGISTRY_USERNAME":  "",
		"secrets.FLEET_REGISTRY_PASSWORD":  "",
		"secrets.FLEET_AGE_KEY":            string(key),
		"github.token":                     "github-token",
		"github.event.pull_request.number": "7",
	}
}

// baseEnv is the environment every step starts from: the machine's Go (setup-go)
// without network, a HOME shared by the jobs (cache), and the recording gh.
func (r *recipes) baseEnv(t *testing.T, extraPath []string) []string {
	t.Helper()
	goEnv := func(k string) string {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	goBin := filepath.Dir(must(exec.LookPath("go")))
	p := append(append([]string{}, extraPath...), r.tools, goBin, "/usr/local/bin", "/usr/bin", "/bin")
	return []string{
		"PATH=" + strings.Join(p, ":"), "HOME=" + r.home, "GH_LOG=" + r.ghLog, "CI=true",
		"GOCACHE=" + goEnv("GOCACHE"), "GOMODCACHE=" + goEnv("GOMODCACHE"), "GOPATH=" + goEnv("GOPATH"),
		"GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=-buildvcs=false",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=ci", "GIT_AUTHOR_EMAIL=ci@example.invalid", "GIT_COMMITTER_NAME=ci", "GIT_COMMITTER_EMAIL=ci@example.invalid",
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// workflow is the part of a GitHub Actions workflow the runner reads.
type workflow struct {
	On struct {
		Push        struct{ Paths []string } `yaml:"push"`
		PullRequest struct{ Paths []string } `yaml:"pull_request"`
	} `yaml:"on"`
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Env   map[string]string `yaml:"env"`
		Steps []struct {
			ID   string            `yaml:"id"`
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			If   string            `yaml:"if"`
			Run  string            `yaml:"run"`
			Env  map[string]string `yaml:"env"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func readWorkflow(t *testing.T, file string) *workflow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ci", file))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return &w
}

var exprRE = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// expand evaluates the ${{ … }} of s from the settings; an expression the
// runner here does not know fails the test (a recipe may not use it untested).
func (r *recipes) expand(t *testing.T, s string) string {
	t.Helper()
	set := r.settings()
	return exprRE.ReplaceAllStringFunc(s, func(m string) string {
		k := exprRE.FindStringSubmatch(m)[1]
		v, ok := set[k]
		if !ok {
			t.Fatalf("expression %q: not one the recipe test provides", m)
		}
		return v
	})
}

var (
	outputCond = regexp.MustCompile(`^steps\.([a-z0-9_-]+)\.outputs\.([a-z0-9_]+) == '([^']*)'$`)
	hashCond   = regexp.MustCompile(`^hashFiles\('([^']+)'\) != ''$`)
)

// github runs every job of w in a fresh checkout of the fleet repository at
// ref, as a GitHub runner would, and returns the (last) job's workspace. A
// failing step fails the test.
func (r *recipes) github(t *testing.T, w *workflow, ref string) string {
	t.Helper()
	ws, failed, out := r.githubJobs(t, w, ref)
	if failed != "" {
		t.Fatalf("%s failed:\n%s", failed, out)
	}
	return ws
}

// githubJobs is github, stopping at the first failing step: it returns the
// workspace, the failing step ("" when none) and that step's output.
func (r *recipes) githubJobs(t *testing.T, w *workflow, ref string) (ws, failed, failedOut string) {
	t.Helper()
	for _, jobName := range sortedKeys(w.Jobs) {
		job := w.Jobs[jobName]
		ws = filepath.Join(t.TempDir(), "ws")
		temp := t.TempDir()
		ghPath := filepath.Join(temp, "github_path")
		var extraPath []string
		outputs := map[string]map[string]string{}
		for i, st := range job.Steps {
			label := fmt.Sprintf("%s step %d (%s%s)", jobName, i, st.Name, st.Uses)
			switch {
			case strings.HasPrefix(st.Uses, "actions/checkout@"):
				repo, dest, at := r.repo, ws, ref
				if st.With["repository"] != "" {
					repo, at, dest = r.bare, r.expand(t, st.With["ref"]), filepath.Join(ws, st.With["path"])
				}
				testenv.Git(t, "", "clone", "--quiet", "--branch", at, repo, dest)
				continue
			case strings.HasPrefix(st.Uses, "actions/setup-go@"), strings.HasPrefix(st.Uses, "actions/cache@"):
				continue // the machine's Go; the shared HOME is the cache
			case st.Uses != "":
				t.Fatalf("%s: an action the recipe test does not stand in for", label)
			}
			if st.If != "" {
				cond := strings.TrimSpace(st.If)
				var run bool
				if m := outputCond.FindStringSubmatch(cond); m != nil {
					run = outputs[m[1]][m[2]] == m[3]
				} else if m := hashCond.FindStringSubmatch(cond); m != nil {
					matches, _ := filepath.Glob(filepath.Join(ws, strings.TrimSuffix(m[1], "/**")))
					run = len(matches) > 0
				} else {
					t.Fatalf("%s: condition %q is not one the recipe test evaluates", label, cond)
				}
				if !run {
					t.Logf("%s: skipped (%s)", label, cond)
					continue
				}
			}
			outFile := filepath.Join(temp, fmt.Sprintf("output-%d", i))
			env := append(r.baseEnv(t, extraPath), "RUNNER_TEMP="+temp, "GITHUB_PATH="+ghPath, "GITHUB_OUTPUT="+outFile,
				"GITHUB_WORKSPACE="+ws, "GITHUB_REPOSITORY=contoso/fleet", "GITHUB_ACTIONS=true")
			for _, m := range []map[string]string{w.Env, job.Env, st.Env} {
				for _, k := range sortedKeys(m) {
					env = append(env, k+"="+r.expand(t, m[k]))
				}
			}
			out, err := runScript(ws, env, r.expand(t, st.Run))
			if err != nil {
				return ws, label, fmt.Sprintf("%v\n%s", err, out)
			}
			t.Logf("%s: ok", label)
			if b, err := os.ReadFile(outFile); err == nil {
				outputs[st.ID] = map[string]string{}
				for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					if k, v, ok := strings.Cut(l, "="); ok {
						outputs[st.ID][k] = v
					}
				}
			}
			if b, err := os.ReadFile(ghPath); err == nil {
				extraPath = nil
				for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					extraPath = append([]string{l}, extraPath...)
				}
			}
		}
	}
	return ws, "", ""
}

// runScript runs a step's script as GitHub's and GitLab's runners run bash:
// bash --noprofile --norc -eo pipefail.
func runScript(dir string, env []string, script string) (string, error) {
	f, err := os.CreateTemp("", "step-*.sh")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(script + "\n"); err != nil {
		return "", err
	}
	f.Close()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", f.Name())
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (r *recipes) ghCalls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(r.ghLog)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(r.ghLog)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// gitlabFile is the part of .gitlab-ci.yml the runner reads.
type gitlabFile struct {
	Variables map[string]string
	Default   struct {
		BeforeScript []string `yaml:"before_script"`
	}
	Jobs map[string]gitlabJob `yaml:",inline"`
}

type gitlabJob struct {
	Script []string
	Rules  []struct {
		If      string
		Changes []string
	}
}

func readGitLab(t *testing.T) *gitlabFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ci", "gitlab-ci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	// The top-level keys that are not jobs decode into Jobs too; drop them.
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	g := &gitlabFile{Jobs: map[string]gitlabJob{}}
	for k, n := range raw {
		var err error
		switch k {
		case "variables":
			err = n.Decode(&g.Variables)
		case "default":
			err = n.Decode(&g.Default)
		case "stages":
		default:
			var j gitlabJob
			err = n.Decode(&j)
			g.Jobs[k] = j
		}
		if err != nil {
			t.Fatalf("gitlab-ci.yml %s: %v", k, err)
		}
	}
	return g
}

// gitlab runs job of g in a fresh checkout at ref: before_script and script
// in one bash, the file's variables overridden by the CI/CD variables. A
// failing job fails the test.
func (r *recipes) gitlab(t *testing.T, g *gitlabFile, job, ref string) {
	t.Helper()
	if out, err := r.gitlabJob(t, g, job, ref); err != nil {
		t.Fatalf("GitLab job %s failed: %v\n%s", job, err, out)
	}
	t.Logf("GitLab job %s at %s: ok", job, ref)
}

// gitlabJob is gitlab, returning the job's log and its failure.
func (r *recipes) gitlabJob(t *testing.T, g *gitlabFile, job, ref string) (string, error) {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	testenv.Git(t, "", "clone", "--quiet", "--branch", ref, r.repo, ws)
	key := filepath.Join(t.TempDir(), "age.agekey")
	b, _ := os.ReadFile(r.ageKey)
	if err := os.WriteFile(key, b, 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for k, v := range g.Variables {
		vars[k] = v
	}
	for k, v := range map[string]string{
		"FLEETGEN_SOURCE": r.src, "FLEETGEN_COMMIT": r.commit, "GITOPS_URL": r.bare,
		"FLEETGEN_GIT_TOKEN": "token", "FLEET_REVIEW_TOKEN": "api-token", "FLEET_AGE_KEY": key,
		"CI_API_V4_URL": r.api.URL + "/api/v4", "CI_PROJECT_ID": "1", "CI_MERGE_REQUEST_IID": "7",
		"CI_JOB_TOKEN": "job-token", "CI_PIPELINE_SOURCE": "merge_request_event",
	} {
		vars[k] = v
	}
	env := r.baseEnv(t, nil)
	for _, k := range sortedKeys(vars) {
		env = append(env, k+"="+vars[k])
	}
	// default.cache keeps .fleetgen-bin/ between jobs, as GitLab's cache does.
	cache := filepath.Join(r.home, "gitlab-cache")
	if _, err := os.Stat(cache); err == nil {
		if out, err := exec.Command("cp", "-a", cache, filepath.Join(ws, ".fleetgen-bin")).CombinedOutput(); err != nil {
			t.Fatalf("restore the cache: %v: %s", err, out)
		}
	}
	script := strings.Join(append(slices.Clone(g.Default.BeforeScript), g.Jobs[job].Script...), "\n")
	out, err := runScript(ws, env, script)
	if _, serr := os.Stat(cache); serr != nil {
		if out, err := exec.Command("cp", "-a", filepath.Join(ws, ".fleetgen-bin"), cache).CombinedOutput(); err != nil {
			t.Fatalf("save the cache: %v: %s", err, out)
		}
	}
	return out, err
}

// serveNotes is GitLab's merge request notes API, as much as the review job
// uses: list, create, edit.
func (r *recipes) serveNotes(w http.ResponseWriter, req *http.Request) {
	if req.Header.Get("PRIVATE-TOKEN") == "" || !strings.HasPrefix(req.URL.Path, "/api/v4/projects/1/merge_requests/7/notes") {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch req.Method {
	case http.MethodGet:
		list := []map[string]any{}
		for i, n := range r.notesLog {
			list = append(list, map[string]any{"id": i + 1, "body": n})
		}
		json.NewEncoder(w).Encode(list)
	case http.MethodPost, http.MethodPut:
		var body struct{ Body string }
		if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.Method == http.MethodPost {
			r.notesLog = append(r.notesLog, body.Body)
		} else if len(r.notesLog) > 0 {
			r.notesLog[len(r.notesLog)-1] = body.Body
		}
		json.NewEncoder(w).Encode(map[string]any{"id": len(r.notesLog)})
	default:
		http.Error(w, "method", http.StatusMethodNotAllowed)
	}
}

func (r *recipes) notes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.notesLog)
}
