package pipeline

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/internal/testenv"
	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/lock"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const pubFleet = `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata:
  name: contoso
spec:
  registry:
    host: %HOST%
    insecure: true
  source:
    kind: git
    url: ssh://git@github.com/contoso/fleet-gitops.git
    ref: main
  images:
    - ghcr.io/kubereboot/kured:1.12.0
  layers:
    - name: infrastructure
      path: ./infrastructure/${env}
  clusters:
    - name: prod-1
      labels: {env: prod}
      registration: {mode: capi}
`

// pubSetup makes a source root whose lock names one image pushed to an
// in-process registry (and, with missing, a second one the registry lacks),
// renders it (or, while render is a skeleton, writes a hand-made tree) and
// returns the config and a bare repository to push to.
func pubSetup(t *testing.T, missing bool) (Config, string, string) {
	t.Helper()
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(host+"/kubereboot/kured:1.12.0", name.Insecure)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()

	root := t.TempDir()
	files := map[string]string{
		"fleet.yaml":                             strings.ReplaceAll(pubFleet, "%HOST%", host),
		"infrastructure/prod/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cm.yaml]\n",
		"infrastructure/prod/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\n",
	}
	pubWrite(t, root, files)
	l := lock.New()
	images := []lock.Image{{Source: "ghcr.io/kubereboot/kured:1.12.0", Target: host + "/kubereboot/kured:1.12.0", Digest: d.String()}}
	if missing {
		images = append(images, lock.Image{Source: "ghcr.io/x/gone:1", Target: host + "/x/gone:1", Digest: "sha256:" + strings.Repeat("0", 64)})
	}
	l.SetImages(images)
	if err := lock.Write(filepath.Join(root, lock.FileName), l); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	cfg := Config{File: filepath.Join(root, "fleet.yaml"), OutDir: out}
	if err := Render(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(out); len(entries) == 0 {
		t.Fatal("render wrote nothing")
	}
	bare := testenv.BareRepo(t, "fleet.git")
	cfg.PushURL = bare
	return cfg, bare, host
}

func pubWrite(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, d := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPublishGit(t *testing.T) {
	cfg, bare, _ := pubSetup(t, false)
	if err := Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if n := testenv.Git(t, bare, "rev-list", "--count", "main"); n != "1" {
		t.Errorf("%s commits, want 1", n)
	}
	files := testenv.Git(t, bare, "ls-tree", "-r", "--name-only", "main")
	for _, want := range []string{"manager/kustomization.yaml", "infrastructure/prod/kustomization.yaml"} {
		if !strings.Contains(files, want) {
			t.Errorf("published tree lacks %s:\n%s", want, files)
		}
	}
	if err := Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if n := testenv.Git(t, bare, "rev-list", "--count", "main"); n != "1" {
		t.Errorf("%s commits after publishing the same tree again, want 1", n)
	}
}

func TestPublishOCI(t *testing.T) {
	cfg, bare, host := pubSetup(t, false)
	fleet, err := os.ReadFile(cfg.File)
	if err != nil {
		t.Fatal(err)
	}
	oci := strings.Replace(string(fleet), "    kind: git\n    url: ssh://git@github.com/contoso/fleet-gitops.git\n    ref: main\n",
		"    kind: oci\n    url: oci://"+host+"/contoso/manifests\n    ref: latest\n    insecure: true\n", 1)
	if oci == string(fleet) {
		t.Fatal("fixture did not change")
	}
	pubWrite(t, filepath.Dir(cfg.File), map[string]string{"fleet.yaml": oci})
	cfg.PushURL = ""
	if err := Render(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if err := Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(host+"/contoso/manifests:latest", name.Insecure)
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("artifact not pushed: %v", err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != "application/vnd.cncf.flux.config.v1+json" {
		t.Errorf("config media type %s", m.Config.MediaType)
	}
	if refs := testenv.Git(t, bare, "for-each-ref"); refs != "" {
		t.Errorf("an OCI fleet pushed to Git: %s", refs)
	}
}

func TestPublishRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		missing bool
		extra   func(host string) string // a fleetgen file added to the output
		edit    bool                     // hand-edit a rendered file
		wantErr []string
		notErr  []string
	}{
		{
			name:    "registry lacks a locked digest",
			missing: true,
			wantErr: []string{"nothing pushed", "/x/gone@sha256:" + strings.Repeat("0", 64), "fleetgen mirror"},
		},
		{
			name: "output names a digest the lock lacks",
			extra: func(host string) string {
				return generate.Header + "image: " + host + "/kubereboot/kured@sha256:" + strings.Repeat("1", 64) + "\n"
			},
			wantErr: []string{"nothing pushed", "extra.yaml: ", "kubereboot/kured@sha256:" + strings.Repeat("1", 64)},
		},
		{
			// The registry lacks a digest too: the local drift check comes
			// first, so the user hears of the hand edit without a registry call.
			name:    "output was edited by hand",
			missing: true,
			edit:    true,
			wantErr: []string{"nothing pushed", "differs from a fresh render", "manager/kustomization.yaml", "# hand edit"},
			notErr:  []string{"gone"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, bare, host := pubSetup(t, tc.missing)
			if tc.extra != nil {
				pubWrite(t, cfg.OutDir, map[string]string{"manager/extra.yaml": tc.extra(host)})
			}
			if tc.edit {
				p := filepath.Join(cfg.OutDir, "manager", "kustomization.yaml")
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, append(b, "# hand edit\n"...), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := Publish(context.Background(), cfg)
			if err == nil {
				t.Fatal("published")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			for _, w := range tc.notErr {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error mentions %q:\n%v", w, err)
				}
			}
			if refs := testenv.Git(t, bare, "for-each-ref"); refs != "" {
				t.Errorf("something was pushed: %s", refs)
			}
		})
	}
}
