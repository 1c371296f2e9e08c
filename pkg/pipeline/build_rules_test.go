package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestBuildRefusesPlaintextBeforeMirror: build meets the plaintext rule in
// its first step, before mirror copies anything: the registry here does not
// answer, so a build that mirrored first would fail with a runtime error.
func TestBuildRefusesPlaintextBeforeMirror(t *testing.T) {
	t.Parallel()
	dir := testenv.CopyTree(t, filepath.Join("..", "..", "examples", "quickstart"))
	testenv.ReplaceIn(t, filepath.Join(dir, "fleet.yaml"),
		"  encryption:\n", "  x-encryption:\n",
		"host: quickstart.azurecr.io", "host: 127.0.0.1:1")
	// The encryption block goes as a whole: drop the renamed key's lines.
	b, err := os.ReadFile(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	skip := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "  x-encryption:") {
			skip = true
			continue
		}
		if skip && strings.HasPrefix(l, "    ") {
			continue
		}
		skip = false
		kept = append(kept, l)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{File: filepath.Join(dir, "fleet.yaml")}
	err = Build(context.Background(), cfg, BuildOptions{Publish: PublishOptions{OutDir: filepath.Join(t.TempDir(), "out")}})
	if err == nil || !problem.IsInvalid(err) || !strings.Contains(err.Error(), "registration.kubeconfig") {
		t.Fatalf("build without encryption: got %v, want the plaintext refusal (an input error) before mirroring", err)
	}
}
