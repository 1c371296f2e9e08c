package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"filippo.io/age"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// initLock writes the lock `fleetgen mirror` would write for the starting
// fleet's one image (fleet-agent), mirrored to registry.
func initLock(t *testing.T, dir, registry string) {
	t.Helper()
	l := lock.New()
	l.SetImages([]lock.Image{{
		Source: "docker.io/rancher/fleet-agent:v0.16.1",
		Target: registry + "/rancher/fleet-agent:v0.16.1",
		Digest: "sha256:" + strings.Repeat("1", 64),
	}})
	if err := lock.Write(filepath.Join(dir, lock.FileName), l); err != nil {
		t.Fatal(err)
	}
}

// TestInitValidatesAndRenders: the starting fleet validates and renders as
// written, with the lock mirror writes; with a generated key, the identity
// init wrote is the recipient the fleet encrypts for; uncommenting the
// optional stanzas (and adding the key file verify names) keeps it valid.
func TestInitValidatesAndRenders(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]InitOptions{
		"given":     {Manager: "https://fleet.contoso.example:6443", Registry: "contoso.azurecr.io", Source: "ssh://git@github.com/contoso/fleet-gitops.git", AgeRecipients: []string{"age1qpmdkse4kd0sr7dzclvg8ryty8h4uap43hp0dm78qa2fq5n8syysna60a8"}},
		"generated": {},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o.Dir = filepath.Join(t.TempDir(), "my-fleet")
			res, err := Init(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			fleet := filepath.Join(o.Dir, "fleet.yaml")
			f, err := schema.Load(fleet, schema.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if f.Metadata.Name != "my-fleet" {
				t.Errorf("metadata.name = %q, want the folder's name", f.Metadata.Name)
			}
			if name == "generated" {
				if res.AgeKey != "age.agekey" {
					t.Fatalf("AgeKey = %q", res.AgeKey)
				}
				kf, err := os.Open(filepath.Join(o.Dir, res.AgeKey))
				if err != nil {
					t.Fatal(err)
				}
				ids, err := age.ParseIdentities(kf)
				kf.Close()
				if err != nil || len(ids) != 1 {
					t.Fatalf("age.agekey: %v", err)
				}
				if got := ids[0].(*age.X25519Identity).Recipient().String(); got != f.Spec.Encryption.SOPS.AgeRecipients[0] {
					t.Errorf("the fleet encrypts for %s, not the generated identity's %s", f.Spec.Encryption.SOPS.AgeRecipients[0], got)
				}
				if st, err := os.Stat(filepath.Join(o.Dir, res.AgeKey)); err != nil || st.Mode().Perm() != 0o600 {
					t.Errorf("age.agekey: %v, mode %v; want 0600", err, st.Mode())
				}
				if b, _ := os.ReadFile(filepath.Join(o.Dir, ".gitignore")); !strings.Contains(string(b), "\nage.agekey\n") {
					t.Errorf(".gitignore does not ignore age.agekey:\n%s", b)
				}
			}
			initLock(t, o.Dir, f.Spec.Registry.Host)
			cfg := Config{File: fleet}
			if ws, err := Validate(context.Background(), cfg); err != nil || len(ws) != 0 {
				t.Fatalf("validate the starting fleet: %v, warnings %v", err, ws)
			}
			if err := Render(context.Background(), cfg, RenderOptions{OutDir: filepath.Join(o.Dir, "out")}); err != nil {
				t.Fatalf("render the starting fleet: %v", err)
			}
			for _, p := range []string{"manager/fleet/prod-1/kubeconfig.yaml", "agents/edge-1/values.yaml", "clusters/prod-1/apps.yaml"} {
				if _, err := os.Stat(filepath.Join(o.Dir, "out", p)); err != nil {
					t.Error(err)
				}
			}

			// The optional stanzas, uncommented, with the key verify names,
			// make a valid fleet.yaml (what mirror then checks against the
			// registry is mirror's).
			b, err := os.ReadFile(fleet)
			if err != nil {
				t.Fatal(err)
			}
			optional := regexp.MustCompile(`(?m)^  # ( *[a-z-])`)
			uncommented := optional.ReplaceAll(b, []byte("  $1"))
			for _, stanza := range []string{"\n  deliveries:\n", "\n  argocd:\n", "\n  verify:\n"} {
				if !strings.Contains(string(uncommented), stanza) {
					t.Fatalf("no commented-out %q stanza in fleet.yaml", strings.TrimSpace(stanza))
				}
			}
			testenv.WriteTree(t, o.Dir, map[string]string{"fleet.yaml": string(uncommented), "keys/cosign.pub": string(testenv.NewKey(t).PublicPEM)})
			if _, err := schema.Load(fleet, schema.LoadOptions{}); err != nil {
				t.Fatalf("validate with the optional stanzas uncommented: %v\n%s", err, uncommented)
			}
		})
	}
}

// TestInitNeverOverwrites: one existing file (a symlink too) and init
// writes nothing, naming it (exit 2).
func TestInitNeverOverwrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testenv.WriteTree(t, dir, map[string]string{"apps/hello.yaml": "mine\n"})
	other := t.TempDir()
	if err := os.Symlink(filepath.Join(other, "x"), filepath.Join(dir, ".sops.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := Init(context.Background(), InitOptions{Dir: dir, AgeRecipients: []string{"age1qpmdkse4kd0sr7dzclvg8ryty8h4uap43hp0dm78qa2fq5n8syysna60a8"}})
	if !problem.IsInvalid(err) || !strings.Contains(err.Error(), filepath.Join(dir, "apps", "hello.yaml")) || !strings.Contains(err.Error(), filepath.Join(dir, ".sops.yaml")) {
		t.Fatalf("init over existing files: %v; want an input error naming both", err)
	}
	got := testenv.ReadTree(t, dir)
	if len(got) != 1 || got["apps/hello.yaml"] != "mine\n" {
		t.Errorf("init wrote or changed files: %v", got)
	}
	if _, err := os.Lstat(filepath.Join(other, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("init wrote through the symlink: %v", err)
	}
}

// TestInitNotThroughSymlink: a folder of the starting fleet that is a
// symlink out of DIR is never written through (os.Root), and what init
// wrote before it is removed.
func TestInitNotThroughSymlink(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "kubeconfigs")); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(context.Background(), InitOptions{Dir: dir, AgeRecipients: []string{"age1qpmdkse4kd0sr7dzclvg8ryty8h4uap43hp0dm78qa2fq5n8syysna60a8"}}); err == nil {
		t.Fatal("init wrote through a symlink out of DIR")
	}
	if got := testenv.ReadTree(t, outside); len(got) != 0 {
		t.Errorf("init wrote outside DIR: %v", got)
	}
	if got := testenv.ReadTree(t, dir); len(got) != 0 {
		t.Errorf("init left files behind: %v", got)
	}
}

// TestInitChecksFlags: a value the fleet cannot take is an input error
// naming the flag, and nothing is written.
func TestInitChecksFlags(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "f")
	_, err := Init(context.Background(), InitOptions{Dir: dir, Registry: "https://x.example", Source: "git@github.com:c/f.git", AgeRecipients: []string{"age1nope"}})
	if !problem.IsInvalid(err) {
		t.Fatalf("init with bad flags: %v, want an input error", err)
	}
	for _, want := range []string{"--registry: spec.registry.host", "--source: spec.source.url", "--age-recipient: spec.encryption.sops.ageRecipients[0]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("init made %s: %v", dir, err)
	}
}
