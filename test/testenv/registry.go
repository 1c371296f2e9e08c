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
	"sync"
	"testing"
	"time"
)

// RegistryBinary is where Debian's docker-registry package installs the
// distribution registry.
const RegistryBinary = "/usr/bin/docker-registry"

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Registry starts a real distribution registry on 127.0.0.1 with throwaway
// storage, stops it when the test ends, and returns its host:port (plain HTTP).
func Registry(t testing.TB) string {
	t.Helper()
	Tool(t, "docker-registry")
	host, stop, err := StartRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return host
}

// StartRegistry starts a real distribution registry on a free port of
// 127.0.0.1, storing under dir, and returns its host:port (plain HTTP) and a
// function that stops it. For programs (the mirror benchmark); tests use
// Registry.
func StartRegistry(dir string) (host string, stop func(), err error) {
	return startRegistry(dir, "")
}

// registryPIDs maps the host of each registry running to its process ID.
var registryPIDs sync.Map

// RegistryPID returns the process ID of the registry serving host, 0 when
// none of this process's registries does (benchmirror -cpu reads its CPU
// time from /proc).
func RegistryPID(host string) int {
	pid, _ := registryPIDs.Load(host)
	n, _ := pid.(int)
	return n
}

// RegistryAt starts a real distribution registry on host (127.0.0.1:PORT),
// with new storage, and returns a function that stops it (also when the test
// ends): the air gap's tests run two registries at one address, one after
// the other, so that one fleet.yaml and one lock name both.
func RegistryAt(t testing.TB, host string) (stop func()) {
	t.Helper()
	Tool(t, "docker-registry")
	_, stop, err := startRegistry(t.TempDir(), host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return stop
}

func startRegistry(dir, at string) (host string, stop func(), err error) {
	var (
		cmd  *exec.Cmd
		logs bytes.Buffer
	)
	for attempt := 0; attempt < 3; attempt++ {
		host = at
		if host == "" {
			port, err := freePort()
			if err != nil {
				return "", nil, err
			}
			host = fmt.Sprintf("127.0.0.1:%d", port)
		}
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
			return "", nil, err
		}
		logs.Reset()
		cmd = exec.Command(RegistryBinary, "serve", cfgPath)
		cmd.Stdout, cmd.Stderr = &logs, &logs
		dieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			return "", nil, fmt.Errorf("start registry: %w", err)
		}
		if waitHTTP("http://"+host+"/v2/", 10*time.Second) {
			p := cmd.Process
			registryPIDs.Store(host, p.Pid)
			var once sync.Once
			return host, func() {
				once.Do(func() {
					registryPIDs.CompareAndDelete(host, p.Pid)
					_ = p.Kill()
					_, _ = p.Wait()
				})
			}, nil
		}
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	}
	return "", nil, fmt.Errorf("registry did not start on %s: %s", host, logs.String())
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
