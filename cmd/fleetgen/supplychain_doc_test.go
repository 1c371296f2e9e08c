package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/test/testenv"
)

// TestSupplyChainDoc runs every ```sh block of docs/supply-chain.md as
// written, in order, in one bash (-euo pipefail, as a reader pastes them into
// one terminal), with a new HOME, fleetgen built from this tree and the
// cosign, notation and oras the project builds on PATH (FLEETGEN_COSIGN,
// FLEETGEN_NOTATION, FLEETGEN_ORAS: test/e2e/tools/build.sh), and a proxy
// that answers nothing for anything off loopback: the page's signing and
// verifying work offline. A block marked ```sh no-test: WHY is left out.
// (When test/doctest lands, its TestDocs runs this page and this test goes.)
func TestSupplyChainDoc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fleetgen and runs the page's commands")
	}
	bin := t.TempDir()
	for _, tool := range []struct{ name, env string }{{"cosign", "FLEETGEN_COSIGN"}, {"notation", "FLEETGEN_NOTATION"}, {"oras", "FLEETGEN_ORAS"}} {
		p := os.Getenv(tool.env)
		if p == "" {
			if os.Getenv("CI") != "" {
				t.Fatalf("no %s: .ci/run sets %s (test/e2e/tools/build.sh)", tool.name, tool.env)
			}
			t.Skipf("no %s: set %s (test/e2e/tools/build.sh builds it)", tool.name, tool.env)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool.name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"bash", "curl", "sed", testenv.RegistryBinary} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the page needs %s (.ci/run installs it): %v", tool, err)
		}
	}
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "fleetgen"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script, err := shellBlocks(filepath.Join("..", "..", "docs", "supply-chain.md"))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-euo", "pipefail", "-c", script)
	cmd.Dir = home
	cmd.Env = []string{
		"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "LANG=C.UTF-8",
		fmt.Sprintf("REGISTRY=127.0.0.1:%d", testenv.FreePort(t)),
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost",
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-done:
		}
	}()
	out, err := cmd.CombinedOutput()
	close(done)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the registry it left running
	if err != nil {
		t.Fatalf("docs/supply-chain.md: %v\n%s", err, out)
	}
	for _, want := range []string{
		"exit 1: contoso/tool has no signature",
		"exit 1: nothing of contoso/tool was copied",
		"REFUSED",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the page's run does not say %q:\n%s", want, out)
		}
	}
	t.Logf("%s", out)
}

// shellBlocks returns the ```sh blocks of a Markdown file, in order, as one
// script; a block whose info string says no-test: is left out.
func shellBlocks(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b strings.Builder
	in, run := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```"):
			info := strings.Fields(strings.TrimPrefix(line, "```"))
			in, run = true, len(info) > 0 && info[0] == "sh" && !strings.Contains(line, "no-test:")
			if run {
				fmt.Fprintf(&b, "echo %q >&2\n", fmt.Sprintf("--- %s:%d", path, n))
			}
		case in && strings.HasPrefix(line, "```"):
			in = false
		case in && run:
			b.WriteString(line + "\n")
		}
	}
	return b.String(), sc.Err()
}
