package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/test/testenv"
)

// substitutionLayer is a layer whose objects use each rule of Flux's
// post-build substitution: the real kustomize-controller applies it on the
// workload cluster, and assertion 7 compares what is live with what
// fleetgen's model (pkg/layers) says that cluster receives.
const substitutionLayer = "substitution"

var substitutionFiles = map[string]string{
	"substitution/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: default\nresources: [rules.yaml, generated]\n",
	"substitution/rules.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: subst-rules
  labels: {cluster: "${cluster}", env: "${env}"}
data:
  plain: ${region}
  team: ${team}
  quoted: "name=${cluster}"
  default-unset: ${tier:=silver}
  default-empty: ${empty:-fallback}
  default-nested: ${missing:=${cluster}-x}
  escaped: echo $${HOME} $$ $PATH
  upper: ${env^^}
  length: "n=${#region}"
  slice: ${cluster:0:4}
  replaced: ${cluster/-/_}
  block: |
    host=${cluster}.example
    port=80
  ${region}-key: from a variable key
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: subst-opt-out-annotation
  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}
data:
  script: echo ${NOT_A_FLUX_VARIABLE}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: subst-opt-out-label
  labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}
data:
  script: echo ${NOT_A_FLUX_VARIABLE:-x}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: subst-${env}-named
data:
  retyped: "${region}"
`,
	"substitution/generated/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
configMapGenerator:
- name: subst-generated
  options: {disableNameSuffixHash: true}
  literals:
  - cluster=${cluster}
  - team=${team}
`,
}

// addSubstitutionLayer writes the layer into the example and selects it
// for every cluster.
func addSubstitutionLayer(t *testing.T, ex *example) {
	t.Helper()
	for p, d := range substitutionFiles {
		write(t, filepath.Join(ex.dir, filepath.FromSlash(p)), []byte(d))
	}
	testenv.ReplaceIn(t, ex.cfg.File, "  groups:\n",
		"    - name: "+substitutionLayer+"\n      path: ./"+substitutionLayer+"\n      substitute: {empty: \"\", team: platform}\n  groups:\n")
}

// substitutionMatches is assertion 7: every object the model says c receives
// from the substitution layer is live on c as the model has it (the model's
// fields a subset of the live object's), and the model has every object of
// the layer's inventory.
func substitutionMatches(ctx context.Context, c *cluster, ex *example) (int, error) {
	ld, err := pipeline.Load(ctx, ex.cfg)
	if err != nil {
		return 0, err
	}
	set := ld.Model.Received(c.name, substitutionLayer)
	if set == nil || set.Objects == nil {
		return 0, fmt.Errorf("the model has nothing for %s from layer %s", c.name, substitutionLayer)
	}
	inv, err := inventory(ctx, c, substitutionLayer)
	if err != nil {
		return 0, err
	}
	if len(inv) != len(set.Objects) {
		return 0, fmt.Errorf("kustomize-controller applied %d objects (%s), the model has %d", len(inv), strings.Join(inv, " "), len(set.Objects))
	}
	if err := liveAsModel(ctx, c, set.Objects); err != nil {
		return 0, err
	}
	return len(set.Objects), nil
}

func mergeField(m any, k string, v any) map[string]any {
	out, _ := m.(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	out[k] = v
	return out
}
