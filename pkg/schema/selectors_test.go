package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// TestLabelHint: a selector that selects nothing says which of its pairs
// no cluster holds and which values each key has.
func TestLabelHint(t *testing.T) {
	t.Parallel()
	cs := []*Cluster{{Name: "a", Labels: map[string]string{"env": "prod", "tier": "web"}}, {Name: "b", Labels: map[string]string{"env": "dev"}}}
	for sel, want := range map[string]map[string]string{
		"no cluster has env=prdo: env is dev or prod":                              {"env": "prdo"},
		"no cluster has the label zone":                                            {"zone": "eu"},
		"no cluster has env=qa: env is dev or prod; no cluster has the label zone": {"env": "qa", "zone": "eu"},
		"no cluster has all of env=dev,tier=web":                                   {"env": "dev", "tier": "web"},
	} {
		if got := LabelHint(want, cs); got != sel {
			t.Errorf("LabelHint(%v) = %q, want %q", want, got, sel)
		}
	}
	many := []*Cluster{}
	for _, v := range strings.Split("a b c d e f g h i j k l", " ") {
		many = append(many, &Cluster{Labels: map[string]string{"env": v}})
	}
	if got, want := LabelHint(map[string]string{"env": "z"}, many), "no cluster has env=z: env is a, b, c, d, e, f, g, h, i or j and 2 more"; got != want {
		t.Errorf("LabelHint over 12 values = %q, want %q", got, want)
	}
}

// TestUnmatchedLayers: a layer whose selector selects no cluster is a
// warning (empty-selection) and is listed in Reach; a layer without a
// selector, or one that selects a cluster, is neither.
func TestUnmatchedLayers(t *testing.T) {
	t.Parallel()
	f := &Fleet{Spec: Spec{
		Layers: []Layer{{Name: "all", Path: "all"}, {Name: "prod", Path: "p", Selector: map[string]string{"env": "prod"}},
			{Name: "tools", Path: "t", Selector: map[string]string{"tier": "tools"}}},
		Clusters: []Cluster{{Name: "a", Labels: map[string]string{"env": "prod"}, Registration: Registration{Mode: ModeCAPI}}},
	}}
	r := f.Reach()
	want := []UnmatchedLayer{{Layer: "tools", Selector: map[string]string{"tier": "tools"}, Why: "no cluster has the label tier", Path: "spec.layers[2].selector"}}
	if d := cmp.Diff(want, r.UnmatchedLayers); d != "" {
		t.Errorf("unmatched layers (-want +got):\n%s", d)
	}
	var got []string
	for _, w := range Warnings(f) {
		got = append(got, w.ErrorCode()+" "+w.Path+": "+w.Msg)
	}
	if d := cmp.Diff([]string{problem.CodeEmptySelection + ` spec.layers[2].selector: layer "tools" selects no cluster: no cluster has the label tier; its Flux Kustomization is rendered for none`}, got); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}

// TestLoadPartial: a fleet.yaml with a misspelled field and a file that
// does not exist still gives its Fleet, defaulted, beside every problem;
// one that is not YAML gives none; Load gives the problems alone.
func TestLoadPartial(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "fleet.yaml")
	const fleet = `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: demo}
spec:
  registry: {host: registry.demo.example}
  source: {kind: git, url: https://git.demo.example/demo/fleet.git}
  layers:
    - {name: apps, path: ./apps, intervall: 5m}
  clusters:
    - name: c1
      registration: {mode: manager, kubeconfig: {file: missing.yaml}}
`
	if err := os.WriteFile(file, []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	f, errs, err := LoadPartial(file, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range errs {
		paths = append(paths, e.Path)
	}
	if d := cmp.Diff([]string{"spec.layers[0].intervall", "spec.clusters[0].registration.kubeconfig.file"}, paths); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	if f == nil || len(f.Spec.Layers) != 1 || f.Spec.Layers[0].Interval == "" || f.Spec.Manager.Name == "" {
		t.Errorf("the Fleet is missing or not defaulted: %+v", f)
	}
	if f, err := Load(file, LoadOptions{}); f != nil || err == nil || err.Error() != errs.Error() {
		t.Errorf("Load = %v, %v; want the same problems and no Fleet", f, err)
	}
	if err := os.WriteFile(file, []byte("spec: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, errs, err := LoadPartial(file, LoadOptions{}); f != nil || err != nil || len(errs) == 0 {
		t.Errorf("LoadPartial of broken YAML = %v, %v, %v; want only problems", f, errs, err)
	}
}

// TestSelectClusters: --cluster takes the names of spec.clusters and the
// manager; an unknown one suggests the closest.
func TestSelectClusters(t *testing.T) {
	t.Parallel()
	f := &Fleet{File: "fleet.yaml", Spec: Spec{Manager: Manager{Name: "hub"}, Clusters: []Cluster{{Name: "edge-1"}, {Name: "edge-2"}}}}
	keep, mgr, err := f.SelectClusters([]string{"edge-2", "hub"})
	if err != nil || !keep["edge-2"] || !keep["hub"] || keep["edge-1"] || !mgr {
		t.Errorf("SelectClusters = %v, %v, %v", keep, mgr, err)
	}
	if keep, _, err := f.SelectClusters(nil); keep != nil || err != nil {
		t.Errorf("no names: %v, %v; want nil, nil", keep, err)
	}
	_, _, err = f.SelectClusters([]string{"edge-3"})
	if !problem.IsInvalid(err) || !strings.Contains(err.Error(), `--cluster "edge-3": no cluster of that name in fleet.yaml (did you mean "edge-1"?)`) {
		t.Errorf("unknown name: %v", err)
	}
}
