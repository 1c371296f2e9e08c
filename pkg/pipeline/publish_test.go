package pipeline

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
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
// returns the config, the options that publish it to a bare repository, the
// repository and the registry's host.
func pubSetup(t *testing.T, missing bool) (Config, PublishOptions, string, string) {
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
	cfg := Config{File: filepath.Join(root, "fleet.yaml")}
	if err := Render(context.Background(), cfg, RenderOptions{OutDir: out}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(out); len(entries) == 0 {
		t.Fatal("render wrote nothing")
	}
	bare := testenv.BareRepo(t, "fleet.git")
	return cfg, PublishOptions{OutDir: out, PushURL: bare}, bare, host
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
	cfg, o, bare, _ := pubSetup(t, false)
	if _, err := Publish(context.Background(), cfg, o); err != nil {
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
	if _, err := Publish(context.Background(), cfg, o); err != nil {
		t.Fatal(err)
	}
	if n := testenv.Git(t, bare, "rev-list", "--count", "main"); n != "1" {
		t.Errorf("%s commits after publishing the same tree again, want 1", n)
	}
}

func TestPublishOCI(t *testing.T) {
	cfg, o, bare, host := pubSetup(t, false)
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
	o.PushURL = ""
	if err := Render(context.Background(), cfg, RenderOptions{OutDir: o.OutDir}); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(context.Background(), cfg, o); err != nil {
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
			// A fleetgen file the render does not write is drift.
			name: "output holds a stale fleetgen file",
			extra: func(host string) string {
				return layout.Header + "image: " + host + "/kubereboot/kured@sha256:" + strings.Repeat("1", 64) + "\n"
			},
			wantErr: []string{"nothing pushed", "differs from a fresh render", "a/manager/extra.yaml"},
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
			cfg, o, bare, host := pubSetup(t, tc.missing)
			if tc.extra != nil {
				pubWrite(t, o.OutDir, map[string]string{"manager/extra.yaml": tc.extra(host)})
			}
			if tc.edit {
				p := filepath.Join(o.OutDir, "manager", "kustomization.yaml")
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, append(b, "# hand edit\n"...), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Publish(context.Background(), cfg, o)
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

func TestCheckReferences(t *testing.T) {
	f := &schema.Fleet{Spec: schema.Spec{Registry: schema.Registry{Host: "acr.example.io"}}}
	l := lock.New()
	good := "sha256:" + strings.Repeat("a", 64)
	l.SetImages([]lock.Image{{Source: "ghcr.io/x/y:1", Target: "acr.example.io/x/y:1", Digest: good}})
	files := []layout.File{
		{Path: "clusters/c/ok.yaml", Data: []byte(layout.Header + "newName: acr.example.io/x/y\ndigest: " + good + "\nimage: acr.example.io/x/y:1@" + good + "\n")},
		{Path: "clusters/c/unknown.yaml", Data: []byte(layout.Header + "digest: sha256:" + strings.Repeat("b", 64) + "\n")},
		{Path: "clusters/c/repo.yaml", Data: []byte(layout.Header + "image: acr.example.io/x/z@" + good + "\n")},
	}
	err := checkReferences(f, l, files)
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"nothing pushed", "clusters/c/unknown.yaml: sha256:bbbb", "clusters/c/repo.yaml: acr.example.io/x/z@" + good} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if strings.Contains(err.Error(), "ok.yaml") {
		t.Errorf("error names ok.yaml:\n%v", err)
	}
}

// TestPublishPushesOnlyTheRender: files dropped into the output folder, a
// plaintext Secret among them, pass the drift check (they are not fleetgen's)
// but are never pushed; Publish names them in its log, without content.
func TestPublishPushesOnlyTheRender(t *testing.T) {
	cfg, o, bare, _ := pubSetup(t, false)
	const marker = "c2VjcmV0LW1hcmtlcg=="
	pubWrite(t, o.OutDir, map[string]string{
		"clusters/prod-1/stolen.yaml":        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: stolen\ndata:\n  value: " + marker + "\n",
		"clusters/prod-1/.fleetgen-tmp-1-ks": "a leftover of a killed run\n",
		"notes.txt":                          "hello\n",
	})
	var logs strings.Builder
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	if _, err := Publish(context.Background(), cfg, o); err != nil {
		t.Fatal(err)
	}
	files := testenv.Git(t, bare, "ls-tree", "-r", "--name-only", "main")
	for _, p := range []string{"stolen.yaml", ".fleetgen-tmp", "notes.txt"} {
		if strings.Contains(files, p) {
			t.Errorf("pushed %s:\n%s", p, files)
		}
	}
	if !strings.Contains(files, "clusters/prod-1/") {
		t.Errorf("render not pushed:\n%s", files)
	}
	for _, w := range []string{"not publishing files in the output folder", "count=3", "clusters/prod-1/stolen.yaml", "notes.txt"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log lacks %q:\n%s", w, logs.String())
		}
	}
	if strings.Contains(logs.String(), marker) {
		t.Error("the log quotes the dropped Secret")
	}
}

// TestPublishRefusesPlaintextInLayer: a kubeconfig Secret in a layer's
// top-level folder that no build uses refuses the publish (exit 2, nothing
// pushed): the input checks scan every file publish copies (SPEC §5), and so
// does validate, before any merge.
func TestPublishRefusesPlaintextInLayer(t *testing.T) {
	cfg, o, bare, _ := pubSetup(t, false)
	pubWrite(t, filepath.Dir(cfg.File), map[string]string{
		"infrastructure/kubeconfig.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: kubeconfig\ndata:\n  value: eA==\n",
	})
	if _, err := Validate(context.Background(), cfg); !problem.IsInvalid(err) || !strings.Contains(err.Error(), "infrastructure/kubeconfig.yaml: Secret kubeconfig holds unencrypted data") {
		t.Errorf("validate = %v, want an input error naming the file", err)
	}
	_, err := Publish(context.Background(), cfg, o)
	if !problem.IsInvalid(err) {
		t.Fatalf("err = %v, want an input error (exit 2)", err)
	}
	if !strings.Contains(err.Error(), "infrastructure/kubeconfig.yaml: Secret kubeconfig holds unencrypted data") {
		t.Errorf("error does not name the file:\n%v", err)
	}
	if refs := testenv.Git(t, bare, "for-each-ref"); refs != "" {
		t.Errorf("something was pushed: %s", refs)
	}
}

// TestPublishRefusesStaleLock: spec.registry.host changed after the mirror;
// publish refuses, pushes nothing and never logs that it verified images.
func TestPublishRefusesStaleLock(t *testing.T) {
	cfg, o, bare, host := pubSetup(t, false)
	fleet, err := os.ReadFile(cfg.File)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(string(fleet), "host: "+host, "host: new.azurecr.io", 1)
	pubWrite(t, filepath.Dir(cfg.File), map[string]string{"fleet.yaml": moved})
	var logs strings.Builder
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	_, err = Publish(context.Background(), cfg, o)
	if err == nil {
		t.Fatal("published with a lock made for another registry")
	}
	// The lock's targets (on the old registry) are not quoted: the lock
	// may come from a pull request.
	if !strings.Contains(err.Error(), "made for another registry") || !strings.Contains(err.Error(), "fleetgen mirror") || strings.Contains(err.Error(), host) {
		t.Errorf("error does not say what is wrong and the fix, or quotes the lock:\n%v", err)
	}
	if strings.Contains(logs.String(), "verified") {
		t.Errorf("log claims a verification:\n%s", logs.String())
	}
	if refs := testenv.Git(t, bare, "for-each-ref"); refs != "" {
		t.Errorf("something was pushed: %s", refs)
	}
}

// TestPublishKeepsBootstrap renders and publishes for real onto a branch that
// `flux bootstrap` committed to, twice, the second time after removing a
// cluster from fleet.yaml: Flux's files and the README stay byte for byte, the
// removed cluster's fleetgen files go.
func TestPublishKeepsBootstrap(t *testing.T) {
	cfg, o, bare, _ := pubSetup(t, false)
	root := filepath.Dir(cfg.File)
	one, err := os.ReadFile(cfg.File)
	if err != nil {
		t.Fatal(err)
	}
	two := strings.Replace(string(one), "  clusters:\n", "  clusters:\n    - name: dev-1\n      labels: {env: dev}\n      registration: {mode: capi}\n", 1)
	pubWrite(t, root, map[string]string{
		"fleet.yaml":                            two,
		"infrastructure/dev/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../prod]\n",
	})
	if err := Render(context.Background(), cfg, RenderOptions{OutDir: o.OutDir}); err != nil {
		t.Fatal(err)
	}

	work := t.TempDir()
	boot := map[string]string{"README.md": "# fleet-gitops\n"}
	for _, c := range []string{"prod-1", "dev-1"} {
		boot["clusters/"+c+"/flux-system/gotk-components.yaml"] = "# This manifest was generated by flux. DO NOT EDIT.\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: flux-system\n"
		boot["clusters/"+c+"/flux-system/gotk-sync.yaml"] = "# This manifest was generated by flux. DO NOT EDIT.\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  path: ./clusters/" + c + "\n"
		boot["clusters/"+c+"/flux-system/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- gotk-components.yaml\n- gotk-sync.yaml\n"
	}
	testenv.Git(t, work, "init", "--quiet", "--initial-branch=main")
	pubWrite(t, work, boot)
	testenv.Git(t, work, "add", "-A")
	testenv.Git(t, work, "commit", "--quiet", "-m", "Add Flux sync manifests")
	testenv.Git(t, work, "push", "--quiet", bare, "main")
	kept := []string{"ls-tree", "-r", "main", "--", "README.md", "clusters/prod-1/flux-system", "clusters/dev-1/flux-system"}
	before := testenv.Git(t, bare, kept...)

	if _, err := Publish(context.Background(), cfg, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(testenv.Git(t, bare, "ls-tree", "-r", "--name-only", "main"), "manager/fleet/dev-1/") {
		t.Fatal("dev-1 was not published")
	}
	pubWrite(t, root, map[string]string{"fleet.yaml": string(one)})
	if err := Render(context.Background(), cfg, RenderOptions{OutDir: o.OutDir}); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(context.Background(), cfg, o); err != nil {
		t.Fatal(err)
	}
	if after := testenv.Git(t, bare, kept...); after != before {
		t.Errorf("Flux's files or the README changed:\n%s\nwant\n%s", after, before)
	}
	var left []string
	for _, p := range strings.Split(testenv.Git(t, bare, "ls-tree", "-r", "--name-only", "main"), "\n") {
		if strings.Contains(p, "dev-1/") && !strings.HasPrefix(p, "clusters/dev-1/flux-system/") {
			left = append(left, p)
		}
	}
	if len(left) > 0 {
		t.Errorf("the removed cluster's files are still there: %v", left)
	}
	if n := testenv.Git(t, bare, "rev-list", "--count", "main"); n != "3" {
		t.Errorf("%s commits, want 3 (bootstrap and two publishes)", n)
	}
}
