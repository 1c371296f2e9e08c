package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// MissingTool starts the message of every test skipped for a program it
// needs; `make test` (test/cmd/testrun) lists those tests last by it.
const MissingTool = "missing tool: "

// A tool is a program some tests run, and where a test finds it.
type tool struct {
	env    string // variable naming its file (FLEETGEN_COSIGN), else ""
	built  bool   // test/e2e/tools/build.sh builds it (a pinned version)
	file   string // a fixed file (Debian's docker-registry), else ""
	onPath bool   // else looked up on PATH
	get    string // how to get it, when not built by build.sh
}

// tools are the programs the tests run, by name. build.sh's ones come from
// $env, else from its cache (`build.sh --path NAME`), so a developer who ran
// `build.sh NAME` (or `make e2e-tools`) needs no variable; helm also from PATH.
var tools = map[string]tool{
	"helm":     {env: "FLEETGEN_HELM", built: true, onPath: true},
	"cosign":   {env: "FLEETGEN_COSIGN", built: true},
	"notation": {env: "FLEETGEN_NOTATION", built: true},
	"oras":     {env: "FLEETGEN_ORAS", built: true},
	"regsync":  {env: "FLEETGEN_REGSYNC", built: true},

	"docker-registry": {file: RegistryBinary, get: "apt-get install docker-registry"},
	"skopeo":          {onPath: true, get: "apt-get install skopeo"},
	"git":             {file: GitBinary, get: "apt-get install git"},
	"curl":            {onPath: true, get: "apt-get install curl"},
	"jq":              {onPath: true, get: "apt-get install jq"},
	"make":            {onPath: true, get: "apt-get install make"},
	"bash":            {onPath: true, get: "apt-get install bash"},
	"go":              {onPath: true, get: "the Go toolchain go.mod names, on PATH"},
}

// Tool returns the file of the program name that the test runs (one of
// tools: helm, cosign, notation, oras, regsync, docker-registry, git, …).
// Without it the test is skipped with a message saying how to get it
// (MissingTool…), except in CI (CI set, as .ci/run does): .ci/run provides
// every tool, so there a missing one fails the test.
func Tool(t testing.TB, name string) string {
	t.Helper()
	tl, ok := tools[name]
	if !ok {
		t.Fatalf("testenv.Tool: unknown tool %q (known: %s)", name, strings.Join(toolNames(), ", "))
	}
	if p := tl.find(name); p != "" {
		return p
	}
	Missing(t, name, tl.how(name))
	return ""
}

// Missing skips the test for want, a program or file it needs that is not
// there, with the standard message (MissingTool, then want, then how to get
// it), or fails it when CI is set.
func Missing(t testing.TB, want, how string) {
	t.Helper()
	msg := MissingTool + want + "; get it: " + how
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set: .ci/run must provide it)")
	} else {
		t.Skip(msg)
	}
}

// find returns the tool's file, or "".
func (tl tool) find(name string) string {
	if tl.env != "" {
		if p := os.Getenv(tl.env); p != "" {
			return p
		}
	}
	if tl.built {
		if p := builtPath(name); p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if tl.file != "" {
		if _, err := os.Stat(tl.file); err == nil {
			return tl.file
		}
		return ""
	}
	if tl.onPath {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// how says how to get the tool.
func (tl tool) how(name string) string {
	if !tl.built {
		return tl.get
	}
	return fmt.Sprintf("`test/e2e/tools/build.sh %s` (the tests then find it in build.sh's cache), or set %s to its file", name, tl.env)
}

// buildScript is test/e2e/tools/build.sh of the checkout this package was
// compiled from, or "" when its sources are not there (-trimpath).
func buildScript() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	p := filepath.Join(filepath.Dir(file), "..", "e2e", "tools", "build.sh")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// builtPath is where build.sh builds the tool (`build.sh --path NAME`),
// or "".
func builtPath(name string) string {
	script := buildScript()
	if script == "" {
		return ""
	}
	out, err := exec.Command("bash", script, "--path", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func toolNames() []string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
