package pipeline

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/test/testenv"
)

// TestPublishWhatTheModelRead: a layer whose kustomization takes in
// ../shared, and a Flux Kustomization in it that reads another top-level
// folder, pass validate, and publish copies exactly those files besides the
// layer folders, so that Flux builds from the published source what was
// validated (issue 39, item 3; SPEC §6). A file of the fleet's folder the
// model did not read is not published, nor is one in the input's copy of the
// rendered tree.
func TestPublishWhatTheModelRead(t *testing.T) {
	cfg, o, bare, _ := pubSetup(t, false)
	root := filepath.Dir(cfg.File)
	pubWrite(t, root, map[string]string{
		"infrastructure/prod/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cm.yaml, ../../shared/base, ks.yaml]\n",
		"shared/base/kustomization.yaml":         "resources: [cm.yaml]\n",
		"shared/base/cm.yaml":                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: default}\n",
		"shared/unused.yaml":                     "not read by any build\n",
		"infrastructure/prod/ks.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  prune: true
  path: ./apps/nested
  sourceRef: {kind: GitRepository, name: flux-system}
`,
		"apps/nested/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nested, namespace: default}\n",
		"clusters/prod-1/planted.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: planted}\n",
		"unrelated/x.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
	})
	ws, err := Validate(context.Background(), cfg)
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	if len(ws) != 0 {
		t.Errorf("warnings: %v", ws)
	}
	if err := Render(context.Background(), cfg, RenderOptions{OutDir: o.OutDir}); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(context.Background(), cfg, o); err != nil {
		t.Fatal(err)
	}
	files := testenv.Git(t, bare, "ls-tree", "-r", "--name-only", "main")
	for _, want := range []string{"shared/base/kustomization.yaml", "shared/base/cm.yaml", "apps/nested/cm.yaml", "infrastructure/prod/ks.yaml"} {
		if !strings.Contains(files, want) {
			t.Errorf("published tree lacks %s:\n%s", want, files)
		}
	}
	for _, not := range []string{"shared/unused.yaml", "unrelated/x.yaml", "clusters/prod-1/planted.yaml"} {
		if strings.Contains(files, not) {
			t.Errorf("published tree holds %s:\n%s", not, files)
		}
	}
}
