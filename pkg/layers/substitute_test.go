package layers_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/schema"
)

func TestSubstitutions(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"base/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: app, namespace: default}
data:
  team: ${team}
  tier: ${tier}
  region: ${region:=eu}
  size: ${size:-small}
  env: ${env}
  name: ${cluster}
  owner: ${owner}
`,
		"apps/kustomization.yaml": "resources: [../base, skipped.yaml]\n",
		"apps/skipped.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: raw
  namespace: default
  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}
data: {script: "${NOT_A_FLUX_VARIABLE}"}
`,
	})
	f := fleet(dir, []schema.Layer{{Name: "apps", Path: "./apps", Substitute: map[string]string{"owner": "platform"}}})
	f.Spec.Clusters = append(f.Spec.Clusters,
		schema.Cluster{Name: "dev-2", Labels: map[string]string{"env": "dev"}},
		schema.Cluster{Name: "dev-3", Labels: map[string]string{"env": "dev"}},
		schema.Cluster{Name: "dev-4", Labels: map[string]string{"env": "dev", "tier": "gold"}},
	)
	for i := range f.Spec.Clusters {
		if f.Spec.Clusters[i].Name != "dev-4" {
			continue
		}
		f.Spec.Clusters[i].Labels["team"] = "blue"
	}
	m, err := layers.Load(f, layers.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range m.Check(f) {
		got = append(got, e.Error())
	}
	const tail = ", and Flux 2.9 substitutes strictly (the reconcile fails): want a label %[1]s on the cluster, spec.layers[0].substitute.%[1]s, or a default ${%[1]s:=VALUE}"
	want := []string{
		"spec.layers[0]: layer apps: ${team} in base/cm.yaml (ConfigMap default/app) is not defined for clusters dev-1, dev-2, dev-3 and 2 more" + strings.ReplaceAll(tail, "%[1]s", "team"),
		"spec.layers[0]: layer apps: ${tier} in base/cm.yaml (ConfigMap default/app) is not defined for clusters dev-1, dev-2, dev-3 and 2 more" + strings.ReplaceAll(tail, "%[1]s", "tier"),
	}
	// Reported once per layer, file and variable, in a stable order.
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Substitutions (-want +got):\n%s", d)
	}
}
