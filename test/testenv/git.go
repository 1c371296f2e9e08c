package testenv

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// GitBinary is Debian's git.
const GitBinary = "/usr/bin/git"

// gitEnv isolates git from the user's and system's configuration and gives it
// a fixed identity.
func gitEnv() []string {
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.invalid",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.invalid",
		"GIT_TERMINAL_PROMPT=0",
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Git runs the git CLI in dir (isolated from user config) and returns its
// trimmed stdout; a failure fails the test with git's output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	Tool(t, "git")
	out, err := GitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// GitErr runs the git CLI in dir like Git but returns the error (with git's
// stderr) instead of failing, for use outside the test goroutine.
func GitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command(GitBinary, args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// BareRepo makes an empty bare repository named name (e.g. "fleet.git") in a
// fresh temporary folder and returns its path. Its default branch is main.
func BareRepo(t testing.TB, name string) string {
	t.Helper()
	Tool(t, "git")
	dir := filepath.Join(t.TempDir(), name)
	Git(t, "", "init", "--quiet", "--bare", "--initial-branch=main", dir)
	return dir
}

// GitDaemon serves the bare repository at repo with `git daemon` (push
// enabled, no auth) on 127.0.0.1, stops it when the test ends, and returns its
// URL, git://127.0.0.1:PORT/<base name of repo>.
func GitDaemon(t testing.TB, repo string) string {
	t.Helper()
	Tool(t, "git")
	base, name := filepath.Dir(repo), filepath.Base(repo)
	// Logs go to a file, not a pipe: git daemon forks a child per connection,
	// and a pipe would keep Wait blocked on them.
	logPath := filepath.Join(t.TempDir(), "git-daemon.log")
	for attempt := 0; attempt < 3; attempt++ {
		port := FreePort(t)
		logs, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(GitBinary, "daemon",
			"--reuseaddr", "--export-all", "--enable=receive-pack", "--informative-errors",
			"--base-path="+base, "--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), base)
		cmd.Env = gitEnv()
		cmd.Stdout, cmd.Stderr = logs, logs
		// Own process group, so stopping it also stops the per-connection children.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		err = cmd.Start()
		logs.Close()
		if err != nil {
			t.Fatalf("start git daemon: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if waitTCP(addr, exited, 10*time.Second) {
			t.Cleanup(stop)
			return fmt.Sprintf("git://%s/%s", addr, name)
		}
		stop()
	}
	b, _ := os.ReadFile(logPath)
	t.Fatalf("git daemon did not start: %s", b)
	return ""
}

// waitTCP waits until addr accepts connections; false when the process exited
// or the time ran out.
func waitTCP(addr string, exited <-chan struct{}, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// GitHTTP serves the bare repository at repo over smart HTTP (git
// http-backend behind net/http/cgi, push enabled) on 127.0.0.1, requiring
// basic auth user:password, and returns its URL,
// http://127.0.0.1:PORT/git/<base name of repo>. It stops when the test ends.
func GitHTTP(t testing.TB, repo, user, password string) string {
	t.Helper()
	Tool(t, "git")
	Git(t, repo, "config", "http.receivepack", "true")
	backend := &cgi.Handler{
		Path: GitBinary,
		Args: []string{"http-backend"},
		Root: "/git",
		Env:  append(gitEnv(), "GIT_PROJECT_ROOT="+filepath.Dir(repo), "GIT_HTTP_EXPORT_ALL=1"),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/git/" + filepath.Base(repo)
}
