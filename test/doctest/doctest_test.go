package doctest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	t.Parallel()
	md := "# page\n\n```sh\nfleetgen validate\n```\n\ntext\n\n```yaml\na: 1\n```\n\n" +
		"- a list:\n\n  ```sh no-test: needs a cluster\n  kubectl get pods\n  ```\n\n````text\n```sh\nnot a block\n```\n````\n"
	got, err := Parse("page.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{File: "page.md", Line: 3, Lang: "sh", Text: "fleetgen validate\n"},
		{File: "page.md", Line: 9, Lang: "yaml", Text: "a: 1\n"},
		{File: "page.md", Line: 15, Lang: "sh", NoTest: "needs a cluster", Text: "kubectl get pods\n"},
		{File: "page.md", Line: 19, Lang: "text", Text: "```sh\nnot a block\n```\n"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Parse (-want +got):\n%s", d)
	}
	if !got[0].Runs() || got[1].Runs() || got[2].Runs() || got[3].Runs() {
		t.Errorf("Runs: want only the first block to run")
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for md, want := range map[string]string{
		"```\nfleetgen validate\n```\n":         "page.md:1: a fenced block without a language",
		"```sh skip\nfleetgen validate\n```\n":  `page.md:1: shell block info "sh skip": want ` + "```sh or ```sh no-test: WHY",
		"text\n```sh no-test:\nfleetgen\n```\n": `page.md:2: shell block info "sh no-test:"`,
		"```sh\nfleetgen validate\n":            "page.md:1: the fenced block is never closed",
	} {
		if _, err := Parse("page.md", []byte(md)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want %s", md, err, want)
		}
	}
}

// TestRun: the blocks run in order in one bash with -euo pipefail, a failure
// names its block, and what a script leaves in the background is stopped.
func TestRun(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s, err := NewSandbox(work)
	if err != nil {
		t.Fatal(err)
	}
	s.Dir = work
	pidFile := filepath.Join(work, "pid")
	blocks := []Block{
		{File: "p.md", Line: 1, Lang: "sh", Text: "X=1\ncd /\n"},
		{File: "p.md", Line: 5, Lang: "sh", NoTest: "never", Text: "exit 9\n"},
		{File: "p.md", Line: 9, Lang: "sh", Text: "test \"$X\" = 1 && test \"$PWD\" = / && echo ok\nsleep 300 &\necho $! > " + pidFile + "\n"},
		{File: "p.md", Line: 14, Lang: "sh", Text: "echo \"$HOME $REGISTRY\"\nfalse | true\n"},
		{File: "p.md", Line: 18, Lang: "sh", Text: "false\necho never\n"},
	}
	out, err := s.Run(context.Background(), Script(blocks), nil)
	if err == nil {
		t.Fatalf("a failing block passed:\n%s", out)
	}
	for _, want := range []string{"ok\n", s.Home + " 127.0.0.1:", "doctest: failed in the block at p.md:14"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "never") {
		t.Errorf("a no-test block or a line after a failure ran:\n%s", out)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if alive(strings.TrimSpace(string(b))) {
		t.Fatalf("the background process %s outlived the script", b)
	}
}

// alive reports whether process pid runs, within 5 s: a zombie (killed,
// not yet reaped by init) does not.
func alive(pid string) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return false
		}
		if _, rest, ok := strings.Cut(string(b), ") "); ok && strings.HasPrefix(rest, "Z") {
			return false
		}
	}
	return true
}

// TestRunBackground: a script that succeeds but leaves a process running
// (registry serve &) succeeds, and neither waits for it nor leaves it behind.
func TestRunBackground(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s, err := NewSandbox(work)
	if err != nil {
		t.Fatal(err)
	}
	s.Dir = work
	start := time.Now()
	out, err := s.Run(context.Background(), "sleep 300 &\necho $! > pid\n", nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Run waited %s for the background process", d)
	}
	b, err := os.ReadFile(filepath.Join(work, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	if alive(strings.TrimSpace(string(b))) {
		t.Errorf("the background process %s outlived the script", b)
	}
}
