package examples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/test/testenv"
)

// TestTryLocally runs examples/try-locally.sh (docs/try-locally.md) end to
// end: registry on loopback, seed, sourceMirrors, mirror, render, publish to
// a bare Git repository. Skipped without docker-registry, git or curl.
func TestTryLocally(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fleetgen and starts a registry")
	}
	for _, tool := range []string{"docker-registry", "git", "curl", "go"} {
		testenv.Tool(t, tool)
	}
	t.Parallel()
	work := t.TempDir()
	cmd := exec.Command("bash", "try-locally.sh")
	cmd.Env = append(os.Environ(), "WORK="+work)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("try-locally.sh: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "==> done") {
		t.Errorf("try-locally.sh did not finish:\n%s", out)
	}
	lockData, err := os.ReadFile(filepath.Join(work, "fleet", "fleet.lock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"source: docker.io/library/busybox:1.36", "referrers:", "application/vnd.dev.cosign.simplesigning.v1+json"} {
		if !strings.Contains(string(lockData), want) {
			t.Errorf("lock lacks %q:\n%s", want, lockData)
		}
	}
	if err := exec.Command("git", "--git-dir", filepath.Join(work, "remote.git"), "rev-parse", "--verify", "main").Run(); err != nil {
		t.Errorf("nothing published to the bare repository: %v", err)
	}
}
