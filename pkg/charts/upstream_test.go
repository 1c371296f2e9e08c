package charts

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/chartutil"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"
)

// TestValuesMatchChartutil runs fluxcd/pkg/chartutil v1.27.2 (what
// helm-controller v1.6.4 composes values with, against a cluster) as the
// oracle of Release.Values (against the closure's objects).
func TestValuesMatchChartutil(t *testing.T) {
	t.Parallel()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "values", Namespace: "apps"},
		Data: map[string]string{
			"values.yaml": "replicas: 3\nimage: {repository: a, tag: '1'}\nlist: [1, 2]\n",
			"extra.yaml":  "image: {tag: '2'}\nlist: [3]\n",
			"flat":        "{a,b,c}",
			"quoted":      `"0123"`,
			"literal":     "key={x,y}[0]",
			"number":      "42",
		},
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "secret", Namespace: "apps"},
		Data:       map[string][]byte{"values.yaml": []byte("password: hunter2\nimage: {pullPolicy: Always}\n"), "token": []byte("t0k3n")},
	}
	for name, refs := range map[string][]meta.ValuesReference{
		"whole documents in order": {{Kind: "ConfigMap", Name: "values"}, {Kind: "ConfigMap", Name: "values", ValuesKey: "extra.yaml"}, {Kind: "Secret", Name: "secret"}},
		"target paths":             {{Kind: "ConfigMap", Name: "values", ValuesKey: "flat", TargetPath: "list"}, {Kind: "ConfigMap", Name: "values", ValuesKey: "number", TargetPath: "image.tag"}, {Kind: "Secret", Name: "secret", ValuesKey: "token", TargetPath: "auth.token"}},
		"quoted string":            {{Kind: "ConfigMap", Name: "values", ValuesKey: "quoted", TargetPath: "code"}},
		"literal":                  {{Kind: "ConfigMap", Name: "values", ValuesKey: "literal", TargetPath: "cfg.raw", Literal: true}},
		"indexed path":             {{Kind: "ConfigMap", Name: "values", ValuesKey: "number", TargetPath: "list[1]"}},
		"optional missing":         {{Kind: "ConfigMap", Name: "nothing", Optional: true}, {Kind: "Secret", Name: "secret", ValuesKey: "nokey", Optional: true}, {Kind: "ConfigMap", Name: "values"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spec := map[string]any{"image": map[string]any{"tag": "spec"}, "extra": true}
			c := fake.NewClientBuilder().WithObjects(cm.DeepCopy(), secret.DeepCopy()).Build()
			want, err := chartutil.ChartValuesFromReferences(context.Background(), logr.Discard(), c, "apps", spec, refs...)
			if err != nil {
				t.Fatal(err)
			}
			rel := &Release{Name: "web", Namespace: "apps"}
			rel.Spec.Values = spec
			for _, r := range refs {
				rel.Spec.ValuesFrom = append(rel.Spec.ValuesFrom, ValuesReference{Kind: r.Kind, Name: r.Name, ValuesKey: r.ValuesKey, TargetPath: r.TargetPath, Optional: r.Optional, Literal: r.Literal})
			}
			objs := map[string]map[string]any{}
			for _, o := range []any{cm, secret} {
				b, _ := json.Marshal(o)
				var m map[string]any
				json.Unmarshal(b, &m)
				meta := m["metadata"].(map[string]any)
				kind := "ConfigMap"
				if _, ok := o.(*corev1.Secret); ok {
					kind = "Secret"
				}
				objs[kind+"/apps/"+meta["name"].(string)] = m
			}
			got, notes, err := rel.Values(lookupIn(objs))
			if err != nil {
				t.Fatal(err)
			}
			if len(notes) > 0 {
				t.Errorf("notes %v", notes)
			}
			if diff := cmp.Diff(map[string]any(want), got); diff != "" {
				t.Errorf("values (-chartutil +ours):\n%s", diff)
			}
		})
	}
}

// TestReleaseDecodesUpstream: the fields ParseRelease reads have the
// upstream HelmRelease's names and shapes (a strict decode into
// helm-controller/api v2 admits them).
func TestReleaseDecodesUpstream(t *testing.T) {
	t.Parallel()
	rel := release(t, webRelease+`  releaseName: web-release
  targetNamespace: web
  install: {disableSchemaValidation: true, disableHooks: true}
  commonMetadata: {labels: {team: a}, annotations: {x: z}}
  postRenderStrategy: separate
  postRenderers:
    - kustomize:
        images: [{name: a, newName: b, newTag: "1", digest: "sha256:00"}]
        patches: [{patch: "{}", target: {group: apps, version: v1, kind: Deployment, name: web, namespace: ns, labelSelector: a=b, annotationSelector: c=d}}]
`)
	rel.Spec.ChartRef = &SourceReference{APIVersion: "source.toolkit.fluxcd.io/v1", Kind: "OCIRepository", Name: "web", Namespace: "flux-system"}
	rel.Spec.Chart.Spec.ValuesFiles = []string{"values-prod.yaml"}
	rel.Spec.Chart.Spec.IgnoreMissingValuesFiles = true
	b, err := json.Marshal(rel.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var up helmv2.HelmReleaseSpec
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&up); err != nil {
		t.Fatalf("strict decode into helm-controller's HelmReleaseSpec: %v", err)
	}
	back, err := json.Marshal(up)
	if err != nil {
		t.Fatal(err)
	}
	var ours, theirs map[string]any
	yaml.Unmarshal(b, &ours)
	yaml.Unmarshal(back, &theirs)
	delete(theirs, "interval") // required upstream, not read here
	if diff := cmp.Diff(ours, theirs); diff != "" {
		t.Errorf("round trip through upstream (-ours +upstream):\n%s", diff)
	}
	up2 := helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: rel.Name, Namespace: rel.Namespace}, Spec: up}
	if rel.HelmName() != up2.GetReleaseName() || rel.HelmNamespace() != up2.GetReleaseNamespace() {
		t.Errorf("release %s/%s, upstream %s/%s", rel.HelmNamespace(), rel.HelmName(), up2.GetReleaseNamespace(), up2.GetReleaseName())
	}
}
