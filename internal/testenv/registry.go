// Package testenv starts real services on loopback for end-to-end tests: the
// distribution registry (Debian's docker-registry) and, later, git daemon.
package testenv

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// RegistryBinary is where Debian's docker-registry package installs the
// distribution registry.
const RegistryBinary = "/usr/bin/docker-registry"

// need skips the test when a tool is missing, except in CI (CI=true), where a
// missing tool is a failure: .ci/run installs it.
func need(t testing.TB, path, pkg string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not found: .ci/run must install Debian package %s", path, pkg)
		}
		t.Skipf("%s not found (apt-get install %s)", path, pkg)
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Registry starts a real distribution registry on 127.0.0.1 with throwaway
// storage, stops it when the test ends, and returns its host:port (plain HTTP).
func Registry(t testing.TB) string {
	t.Helper()
	need(t, RegistryBinary, "docker-registry")
	dir := t.TempDir()
	var (
		cmd  *exec.Cmd
		host string
		logs bytes.Buffer
	)
	for attempt := 0; attempt < 3; attempt++ {
		host = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(dir, "storage"), host)
		cfgPath := filepath.Join(dir, "config.yml")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		logs.Reset()
		cmd = exec.Command(RegistryBinary, "serve", cfgPath)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatalf("start registry: %v", err)
		}
		if waitHTTP("http://"+host+"/v2/", 10*time.Second) {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_, _ = cmd.Process.Wait()
			})
			return host
		}
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	}
	t.Fatalf("registry did not start on %s: %s", host, logs.String())
	return ""
}

func waitHTTP(url string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
