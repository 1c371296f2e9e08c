package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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

// TestDiffFollowedKustomization: a pull request that only edits the folder
// of a Kustomization a layer leads to (not the layer's own folder) shows the
// objects that change for each cluster receiving it, with the fields that
// moved (SPEC §7: diff reads the model's closure).
func TestDiffFollowedKustomization(t *testing.T) {
	t.Parallel()
	cfg, fleet, _ := publishedQuickstart(t, false)
	pubWrite(t, fleet, map[string]string{
		"apps/prod/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\n  - ks.yaml\nreplicas:\n  - name: podinfo\n    count: 3\n",
		"apps/prod/ks.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: extras, namespace: flux-system}
spec:
  interval: 10m
  prune: true
  path: ./apps/extras
  sourceRef: {kind: GitRepository, name: flux-system}
  postBuild:
    substitute: {who: '${cluster}'}
`,
		"apps/extras/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extras, namespace: podinfo}\ndata: {who: '${who}', size: small}\n",
	})
	published := filepath.Join(t.TempDir(), "published")
	if err := Render(context.Background(), cfg, RenderOptions{OutDir: published}); err != nil {
		t.Fatal(err)
	}
	copyLayers(t, fleet, published)
	pubWrite(t, fleet, map[string]string{
		"apps/extras/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extras, namespace: podinfo}\ndata: {who: '${who}', size: large}\n",
	})
	rep, fileDiff, err := Diff(context.Background(), cfg, RenderOptions{OutDir: published})
	if err != nil {
		t.Fatal(err)
	}
	if fileDiff != "" {
		t.Errorf("the rendered tree changed: %s", fileDiff)
	}
	got := map[string][]string{}
	for _, c := range rep.Clusters {
		for _, o := range c.Objects {
			var moved []string
			for _, ch := range o.Changes {
				moved = append(moved, fmt.Sprintf("%s: %v → %v", ch.Field, ch.From, ch.To))
			}
			got[c.Name] = append(got[c.Name], fmt.Sprintf("%s %s %s/%s %s %s", o.Layer, o.Change, o.Kind, o.Namespace, o.Name, strings.Join(moved, "; ")))
		}
	}
	want := []string{"apps changed ConfigMap/podinfo extras data.size: small → large"}
	if d := cmp.Diff(map[string][]string{"edge-1": want, "prod-eu-1": want, "managed1": want}, got); d != "" {
		t.Errorf("received objects per cluster (-want +got):\n%s", d)
	}
}
