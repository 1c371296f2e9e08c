package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestForgedSecretExitCodes plants a damaged sealed Secret whose readable
// parts and annotation are genuine (its data value replaced by another SOPS
// value): without a key render --check passes (docs/secrets.md says so); with
// the example's key it is drift (exit 3) and publish refuses (exit 1). The
// forgery with a valid MAC is pkg/pipeline's TestForgedSealedSecret.
func TestForgedSecretExitCodes(t *testing.T) {
	src := filepath.Join("..", "..", "examples", "fleet-standalone")
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	key, err := filepath.Abs(filepath.Join(src, "age.agekey"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOPS_AGE_KEY_FILE", "")
	fleet := filepath.Join(root, "fleet.yaml")
	out := filepath.Join(root, "out")
	fleetgen := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	if code, msg := fleetgen("render", "-f", fleet, "-o", out); code != 0 {
		t.Fatalf("render: exit %d\n%s", code, msg)
	}
	target := filepath.Join(out, "manager", "fleet", "my-cluster", "kubeconfig.yaml")
	b, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	mac := regexp.MustCompile(`mac: (ENC\[[^\]]*\])`).FindSubmatch(b)
	value := regexp.MustCompile(`value: ENC\[[^\]]*\]`)
	if mac == nil || !value.Match(b) {
		t.Fatalf("no SOPS value in %s", target)
	}
	forged := value.ReplaceAll(b, append([]byte("value: "), mac[1]...))
	if err := os.WriteFile(target, forged, 0o644); err != nil {
		t.Fatal(err)
	}

	if code, msg := fleetgen("render", "-f", fleet, "-o", out, "--check"); code != 0 {
		t.Fatalf("check without a key: exit %d, want 0 (the documented limit)\n%s", code, msg)
	}
	code, msg := fleetgen("--age-key-file", key, "render", "-f", fleet, "-o", out, "--check")
	if code != 3 || !strings.Contains(msg, "manager/fleet/my-cluster/kubeconfig.yaml: the sealed Secret does not decrypt") {
		t.Fatalf("check with the key: exit %d, want 3 naming the file\n%s", code, msg)
	}
	t.Setenv("SOPS_AGE_KEY_FILE", key)
	if code, msg := fleetgen("publish", "-f", fleet, "-o", out); code != 1 || !strings.Contains(msg, "nothing pushed") {
		t.Fatalf("publish with the key: exit %d, want 1\n%s", code, msg)
	}
	if code, msg := fleetgen("render", "-f", fleet, "-o", out); code != 0 || !strings.Contains(msg, "re-sealed") {
		t.Fatalf("render with the key: exit %d, want 0 and a warning\n%s", code, msg)
	}
	if code, msg := fleetgen("render", "-f", fleet, "-o", out, "--check"); code != 0 {
		t.Fatalf("check after render: exit %d\n%s", code, msg)
	}
}
