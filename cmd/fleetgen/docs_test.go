package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"fleetgen.dev/fleetgen/test/doctest"
	"fleetgen.dev/fleetgen/test/testenv"
)

// docPages are the pages whose shell blocks run (test/doctest), each with
// where its first block starts: "clone", a clone of this repository that the
// pages share, in this order (a page can rely on what an earlier one built,
// as a reader who read them in order can); "fleet", the quickstart's folder
// with local registries standing in for Docker Hub, ghcr.io and the mirror
// (localQuickstart), its lock mirrored and its tree rendered to rendered/,
// with fleetgen on PATH.
var docPages = []struct{ page, start string }{
	{"README.md", "clone"},
	{"examples/README.md", "clone"},
	{"docs/try-locally.md", "clone"},
	{"docs/supply-chain.md", "clone"},
	{"docs/mirroring.md", "fleet"},
	{"docs/cli.md", "fleet"},
}

// docChecks are what a page's run must have done, beyond exiting 0.
var docChecks = map[string]func(t *testing.T, s *doctest.Sandbox, out string){
	"docs/try-locally.md":  checkFirstHour,
	"docs/supply-chain.md": checkSupplyChain,
}

// docTools are the programs a page runs beyond what the sandbox has (the
// ones test/e2e/tools/build.sh builds, as testenv.Tool finds them): put on
// PATH under their plain names, as a reader has them. A page whose tool is
// missing is skipped (failed in CI).
var docTools = map[string][]string{
	"docs/supply-chain.md": {"cosign", "notation", "oras"},
}

// TestDocs runs every shell block of README.md, examples/README.md and
// docs/*.md as written (test/doctest), and fails on a fenced block that does
// not say what it is and on a page with blocks to run that docPages does not
// list. Blocks marked no-test (a Kubernetes cluster, a cloud, a tool fleetgen
// does not build) are left out, and say why.
//
// docs/try-locally.md is the first hour's path: from a clone, make install,
// init, edit, mirror with a signed image (and one the policy refuses),
// validate, render, diff, publish to a bare repository and clone it, every
// command as the page writes it (checkFirstHour).
func TestDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fleetgen in a clone and runs the documentation's commands")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the pages need git (.ci/run installs it): %v", err)
	}
	src, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"README.md", "examples/README.md"}
	docs, err := filepath.Glob(filepath.Join(src, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		pages = append(pages, "docs/"+filepath.Base(d))
	}
	blocks := map[string][]doctest.Block{}
	for _, p := range pages {
		bs, err := doctest.ParseFile(filepath.Join(src, filepath.FromSlash(p)))
		if err != nil {
			t.Errorf("%s", strings.ReplaceAll(err.Error(), src+string(filepath.Separator), ""))
		}
		runs := slices.ContainsFunc(bs, doctest.Block.Runs)
		listed := slices.ContainsFunc(docPages, func(d struct{ page, start string }) bool { return d.page == p })
		if runs && !listed {
			t.Errorf("%s has shell blocks to run: add it to docPages in cmd/fleetgen/docs_test.go (or mark each ```sh no-test: WHY)", p)
		}
		for i := range bs {
			bs[i].File = p
		}
		blocks[p] = bs
	}
	if t.Failed() {
		return
	}

	t.Run("clone", func(t *testing.T) {
		t.Parallel()
		work := t.TempDir()
		tools := filepath.Join(work, "tools")
		if err := os.MkdirAll(tools, 0o755); err != nil {
			t.Fatal(err)
		}
		s, err := doctest.NewSandbox(work, tools)
		if err != nil {
			t.Fatal(err)
		}
		s.Dir = filepath.Join(work, "fleetgen")
		if err := doctest.Clone(src, s.Dir); err != nil {
			t.Fatal(err)
		}
		for _, d := range docPages {
			if d.start == "clone" {
				runPage(t, s, d.page, blocks[d.page], s.Dir, tools)
			}
		}
	})
	t.Run("fleet", func(t *testing.T) {
		t.Parallel()
		work := t.TempDir()
		bin := filepath.Join(work, "bin")
		build := exec.Command("go", "build", "-o", filepath.Join(bin, "fleetgen"), "./cmd/fleetgen")
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/fleetgen: %v\n%s", err, out)
		}
		s, err := doctest.NewSandbox(work, bin)
		if err != nil {
			t.Fatal(err)
		}
		fleet := localQuickstart(t, src)
		var stderr bytes.Buffer
		if code := run(context.Background(), []string{"render", "-q", fleet, "-o", filepath.Join(fleet, "rendered")}, nil, io.Discard, &stderr); code != 0 {
			t.Fatalf("fleetgen render: exit %d: %s", code, stderr.String())
		}
		for _, d := range docPages {
			if d.start == "fleet" {
				runPage(t, s, d.page, blocks[d.page], fleet, bin)
			}
		}
	})
}

// runPage runs page's blocks in s, starting in dir, then its docChecks;
// the page's docTools go into tools, a folder on the sandbox's PATH.
func runPage(t *testing.T, s *doctest.Sandbox, page string, blocks []doctest.Block, dir, tools string) {
	t.Run(page, func(t *testing.T) {
		if !slices.ContainsFunc(blocks, doctest.Block.Runs) {
			t.Skipf("%s has no block to run", page)
		}
		for _, name := range docTools[page] {
			link := filepath.Join(tools, name)
			if _, err := os.Lstat(link); err == nil {
				continue
			}
			if err := os.Symlink(testenv.Tool(t, name), link); err != nil {
				t.Fatal(err)
			}
		}
		s.Dir = dir
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		start := time.Now()
		out, err := s.Run(ctx, doctest.Script(blocks), nil)
		if err != nil {
			t.Fatalf("%s: %v\n%s", page, err, out)
		}
		t.Logf("%s: its blocks ran in %s", page, time.Since(start).Round(time.Second))
		if check := docChecks[page]; check != nil {
			check(t, s, out)
		}
	})
}

// checkFirstHour checks what docs/try-locally.md says it does: the policy
// refused the unsigned image, the lock holds the verified signature, and the
// published repository's HEAD is main, so its clone checked out the tree,
// which pins the signed image at the mirror by digest.
func checkFirstHour(t *testing.T, s *doctest.Sandbox, out string) {
	try := filepath.Join(s.Home, "fleetgen-try")
	if !strings.Contains(out, "mirror refused the unsigned image (exit 1)") || !strings.Contains(out, "no signature") {
		t.Errorf("the policy did not refuse the unsigned image:\n%s", out)
	}
	lockData, err := os.ReadFile(filepath.Join(try, "myfleet", "fleet.lock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"source: docker.io/contoso/hello:1.0", "artifactType: application/vnd.dev.sigstore.bundle.v0.3+json", "policy: spec.verify[0]", "source: docker.io/rancher/fleet-agent:v0.16.1"} {
		if !strings.Contains(string(lockData), want) {
			t.Errorf("fleet.lock.yaml lacks %q:\n%s", want, lockData)
		}
	}
	if strings.Contains(string(lockData), "unsigned") {
		t.Errorf("the refused image reached the lock:\n%s", lockData)
	}
	if head, err := testenv.GitErr(filepath.Join(try, "fleet-gitops.git"), "symbolic-ref", "HEAD"); err != nil || head != "refs/heads/main" {
		t.Errorf("the bare repository's HEAD is %q (%v), want refs/heads/main: a clone would check out nothing", head, err)
	}
	deploy, err := os.ReadFile(filepath.Join(try, "checkout", "clusters", "edge-1", "apps.yaml"))
	if err != nil {
		t.Fatalf("the clone of the published repository: %v", err)
	}
	var registry string
	for _, e := range s.Env {
		if v, ok := strings.CutPrefix(e, "REGISTRY="); ok {
			registry = v
		}
	}
	pin := regexp.MustCompile(`- digest: sha256:[0-9a-f]{64}\n    name: contoso/hello\n    newName: "` + regexp.QuoteMeta(registry) + `/contoso/hello"\n`)
	if !pin.Match(deploy) || !strings.Contains(string(deploy), "tier: edge") {
		t.Errorf("the published Kustomization does not pin hello by digest at the mirror, or lacks the edit:\n%s", deploy)
	}
}

// checkSupplyChain checks what docs/supply-chain.md says it does: both
// signatures verify, the unsigned image is refused by verify and mirror,
// and the layout crossed the gap.
func checkSupplyChain(t *testing.T, s *doctest.Sandbox, out string) {
	for _, want := range []string{
		"exit 1: contoso/tool has no signature",
		"exit 1: nothing of contoso/tool was copied",
		"REFUSED",
		"signatures at the source:",
		"images to oci-layout:images.tar",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("docs/supply-chain.md's run does not say %q:\n%s", want, out)
		}
	}
	lockData, err := os.ReadFile(filepath.Join(s.Home, "supply-chain", "fleet.lock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"policy: spec.verify[0]", "application/vnd.dev.sigstore.bundle.v0.3+json", "application/vnd.cncf.notary.signature"} {
		if !strings.Contains(string(lockData), want) {
			t.Errorf("fleet.lock.yaml lacks %q:\n%s", want, lockData)
		}
	}
}

// TestDocLinks: every relative link of README.md, examples/README.md and
// docs/*.md names a file or folder of the repository, and an anchor into a
// Markdown page names one of its headings (GitHub's slugs).
func TestDocLinks(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(src, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(src, "README.md"), filepath.Join(src, "examples", "README.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	slugs := map[string]map[string]bool{}
	headings := func(page string) map[string]bool {
		if h, ok := slugs[page]; ok {
			return h
		}
		h := map[string]bool{}
		b, _ := os.ReadFile(page)
		inFence := false
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "```") {
				inFence = !inFence
			}
			if title, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " "); ok && !inFence && strings.HasPrefix(l, "#") {
				h[githubSlug(title)] = true
			}
		}
		slugs[page] = h
		return h
	}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(testenv.OutsideCode(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			full := page
			if file != "" {
				full = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
				if _, err := os.Stat(full); err != nil {
					t.Errorf("%s: link %s: no such file or folder", page, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(full, ".md") && !headings(full)[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", page, target, full, anchor)
			}
		}
	}
}

// githubSlug is the anchor GitHub gives a heading: lower case, spaces as
// '-', every other character but letters, digits, '-' and '_' dropped.
func githubSlug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(title)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
