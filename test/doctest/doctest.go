// Package doctest runs the shell blocks of fleetgen's documentation as
// written, so that a command a reader is told to run cannot rot.
//
// The marker is the fence's info string. Every fenced block names its
// language (```sh, ```yaml, ```text, …). A ```sh (or bash, shell) block is
// one a reader is told to run: the tests run it, unchanged. One that cannot
// run here (it needs a Kubernetes cluster, a cloud registry, a tool fleetgen
// does not build) says so after the language:
//
//	```sh no-test: needs a Kubernetes cluster
//
// The blocks of one file run in order in one bash (-euo pipefail, as a
// reader pastes them into one terminal), in a sandbox the caller prepares
// (Sandbox: a folder, HOME, GOPATH and a free loopback port in REGISTRY).
package doctest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Block is one fenced block of a Markdown file.
type Block struct {
	File string // as given to Parse
	Line int    // of the opening fence, 1-based
	Lang string // the info string's first word
	// NoTest is why the block does not run ("" for a block that runs),
	// from the info string's "no-test: WHY".
	NoTest string
	Text   string
}

// Shell reports whether b is a shell block, one a reader runs.
func (b Block) Shell() bool {
	return b.Lang == "sh" || b.Lang == "bash" || b.Lang == "shell"
}

// Runs reports whether the tests run b.
func (b Block) Runs() bool { return b.Shell() && b.NoTest == "" }

var (
	fence  = regexp.MustCompile("^(\\s*)(```+|~~~+)(.*)$")
	noTest = regexp.MustCompile(`^no-test:\s*(\S.*)$`)
)

// Parse returns the fenced blocks of md in order. A fence without a
// language, and a shell block whose info string says more than no-test:
// WHY, are errors naming the file and line: every block says what it is.
func Parse(file string, md []byte) ([]Block, error) {
	var out []Block
	var errs []string
	var cur *Block
	var closer, indent string
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if cur != nil {
			if strings.TrimSpace(line) == closer {
				out = append(out, *cur)
				cur = nil
				continue
			}
			cur.Text += strings.TrimPrefix(line, indent) + "\n"
			continue
		}
		m := fence.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent, closer = m[1], m[2]
		info := strings.TrimSpace(m[3])
		lang, rest, _ := strings.Cut(info, " ")
		b := &Block{File: file, Line: n, Lang: lang}
		switch rest = strings.TrimSpace(rest); {
		case lang == "":
			errs = append(errs, fmt.Sprintf("%s:%d: a fenced block without a language: say what it is (```sh to run it, ```text, ```yaml, …)", file, n))
		case rest != "" && b.Shell():
			if nm := noTest.FindStringSubmatch(rest); nm != nil {
				b.NoTest = nm[1]
			} else {
				errs = append(errs, fmt.Sprintf("%s:%d: shell block info %q: want ```%s or ```%s no-test: WHY", file, n, info, lang, lang))
			}
		}
		cur = b
	}
	if cur != nil {
		errs = append(errs, fmt.Sprintf("%s:%d: the fenced block is never closed", file, cur.Line))
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return out, sc.Err()
}

// ParseFile is Parse of a file's content.
func ParseFile(path string) ([]Block, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Script is the blocks that run, in order, as one bash script; a failure
// names the block's file and line.
func Script(blocks []Block) string {
	var b strings.Builder
	b.WriteString("trap 'echo \"doctest: failed in the block at $DOCTEST_BLOCK\" >&2' ERR\n")
	for _, bl := range blocks {
		if !bl.Runs() {
			continue
		}
		fmt.Fprintf(&b, "DOCTEST_BLOCK=%s\necho \"doctest: $DOCTEST_BLOCK\" >&2\n%s", strconv.Quote(fmt.Sprintf("%s:%d", bl.File, bl.Line)), bl.Text)
	}
	return b.String()
}

// Sandbox is where a file's blocks run: Dir is the working folder the first
// block starts in; Home, the GOPATH and a loopback port for a registry
// (REGISTRY=127.0.0.1:PORT) are the sandbox's own, the Go build and module
// caches the machine's (no download, no rebuild of what was built).
type Sandbox struct {
	Dir  string
	Home string
	// Env is the environment the script runs with (Env() sets it up).
	Env []string
}

// NewSandbox makes a sandbox under work: work/home and work/go (GOPATH,
// whose bin is first on PATH), with pathDirs next on PATH and the Git
// identity set; Dir is set by the caller.
func NewSandbox(work string, pathDirs ...string) (*Sandbox, error) {
	s := &Sandbox{Home: filepath.Join(work, "home")}
	gopath := filepath.Join(work, "go")
	for _, d := range []string{s.Home, filepath.Join(gopath, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	goEnv := func(k string) (string, error) {
		out, err := exec.Command("go", "env", k).Output()
		return strings.TrimSpace(string(out)), err
	}
	cache, err := goEnv("GOCACHE")
	if err != nil {
		return nil, err
	}
	modcache, err := goEnv("GOMODCACHE")
	if err != nil {
		return nil, err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	path := append([]string{filepath.Join(gopath, "bin")}, pathDirs...)
	path = append(path, filepath.Dir(goBin), "/usr/local/bin", "/usr/bin", "/bin")
	s.Env = []string{
		"PATH=" + strings.Join(path, ":"), "HOME=" + s.Home, "GOPATH=" + gopath,
		"GOCACHE=" + cache, "GOMODCACHE=" + modcache, "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=-mod=mod",
		"REGISTRY=127.0.0.1:" + strconv.Itoa(port), "TERM=dumb", "LANG=C.UTF-8",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=doctest", "GIT_AUTHOR_EMAIL=doctest@example.invalid",
		"GIT_COMMITTER_NAME=doctest", "GIT_COMMITTER_EMAIL=doctest@example.invalid",
	}
	return s, nil
}

// Run runs script in s.Dir with bash -euo pipefail and returns its combined
// output, which it also copies to also when that is not nil. Every process
// it started (a registry left in the background) is killed when it ends, or
// when ctx is done.
func (s *Sandbox) Run(ctx context.Context, script string, also io.Writer) (string, error) {
	cmd := exec.Command("bash", "--noprofile", "--norc", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = s.Dir, s.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	var w io.Writer = &out
	if also != nil {
		w = io.MultiWriter(&out, also)
	}
	cmd.Stdout, cmd.Stderr = w, w
	// A process the script left in the background holds the output open:
	// Wait gives up on it a second after bash exits.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
		if err == nil {
			err = ctx.Err()
		}
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // bash succeeded; what it left running is stopped below
	}
	// What the script left running in the background (its process group).
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	time.Sleep(50 * time.Millisecond)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return out.String(), err
}

// FreePort returns a TCP port free on 127.0.0.1 now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Clone makes dst a clone of the Git work tree src as it is now: the files
// Git tracks or would track (uncommitted changes included, ignored files
// not), committed to a new repository on branch main, as `git clone`
// followed by the reader's edits would leave it.
func Clone(src, dst string) error {
	out, err := exec.Command("git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("git ls-files in %s: %w", src, err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		from := filepath.Join(src, rel)
		st, err := os.Lstat(from)
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(from)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, b, st.Mode().Perm()); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q", "--initial-branch=main"}, {"add", "-A"}, {"commit", "-q", "--no-gpg-sign", "-m", "clone"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dst
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=doctest", "GIT_AUTHOR_EMAIL=doctest@example.invalid", "GIT_COMMITTER_NAME=doctest", "GIT_COMMITTER_EMAIL=doctest@example.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dst, err, out)
		}
	}
	return nil
}
