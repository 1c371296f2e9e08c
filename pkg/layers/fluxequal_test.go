//go:build fluxequal

// The proof that fleetgen substitutes as Flux does: every case below runs
// through Flux's own SubstituteVariables (github.com/fluxcd/pkg/kustomize,
// the package kustomize-controller v1.9 calls) and through pkg/layers, and the
// two must give the same object, or the same error. It is behind a build tag
// because Flux's package links controller-runtime and client-go, which the
// rest of the tests (and the binary) no longer compile:
//
//	go test -tags fluxequal -run Flux ./pkg/layers
package layers

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resource"
)

func TestFluxSubstitutionEqual(t *testing.T) {
	for name, tc := range substitutionCases {
		t.Run(name, func(t *testing.T) {
			res := parseResource(t, tc.obj)
			vars := map[string]string{"cluster": "edge-1"}
			for k, v := range tc.vars {
				vars[k] = v
			}

			// Flux.
			flux := res.DeepCopy()
			subst := map[string]any{}
			for k, v := range vars {
				subst[k] = v
			}
			ks := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"postBuild": map[string]any{"substitute": subst}}}}
			fluxOut, fluxErr := fluxkustomize.SubstituteVariables(context.Background(), nil, ks, flux,
				fluxkustomize.SubstituteWithDryRun(true), fluxkustomize.SubstituteWithStrict(true))

			// fleetgen.
			text, err := res.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			ours, ourErr := substitute(newTemplate(string(text)), optsOut(res), vars)

			if (fluxErr == nil) != (ourErr == nil) {
				t.Fatalf("errors differ: flux %v, fleetgen %v", fluxErr, ourErr)
			}
			if fluxErr != nil {
				if fluxErr.Error() != ourErr.Error() {
					t.Errorf("error texts differ:\nflux:     %v\nfleetgen: %v", fluxErr, ourErr)
				}
				return
			}
			want := mapOf(t, res) // Flux opted out: the object as built
			if fluxOut != nil {
				want = mapOf(t, fluxOut)
			}
			got := mapOf(t, res)
			if ours != nil {
				got = ours
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("objects differ (-flux +fleetgen):\n%s", d)
			}
			if y := yamlOf(t, fluxOrRes(fluxOut, res)); tc.want != "" && !strings.Contains(y, tc.want) {
				t.Errorf("the case no longer shows what it is for: %q not in\n%s", tc.want, y)
			}
		})
	}
}

func parseResource(t testing.TB, y string) *resource.Resource {
	t.Helper()
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	rs, err := rf.SliceFromBytes([]byte(y))
	if err != nil || len(rs) != 1 {
		t.Fatalf("parse: %v (%d objects)", err, len(rs))
	}
	return rs[0]
}

func fluxOrRes(flux, res *resource.Resource) *resource.Resource {
	if flux != nil {
		return flux
	}
	return res
}

func mapOf(t testing.TB, r *resource.Resource) map[string]any {
	t.Helper()
	m, err := r.Map()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func yamlOf(t testing.TB, r *resource.Resource) string {
	t.Helper()
	b, err := r.AsYAML()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFluxGeneratorEqual: the kustomization fleetgen builds a folder with is
// byte for byte the one Flux's generator makes, for a Kustomization that sets
// none of the fields it copies in (a layer's) and for followed
// Kustomizations' specs that set each of them.
func TestFluxGeneratorEqual(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
	folders := map[string]map[string]string{
		"own kustomization":               {"kustomization.yaml": "resources: [cm.yaml]\nunknownField: x\n", "cm.yaml": cm},
		"kustomization without resources": {"kustomization.yaml": "configMapGenerator: [{name: g, literals: [a=b]}]\n"},
		"Kustomization file name":         {"Kustomization": "resources: [cm.yaml]\n", "cm.yaml": cm},
		"plain manifests":                 {"b.yaml": cm, "a.yml": cm, "README.md": "x", "sub/c.yaml": cm, "sub/d.json": "{}"},
		"nested kustomization":            {"x.yaml": cm, "app/kustomization.yaml": "resources: [cm.yaml]\n", "app/cm.yaml": cm, "app/other.yaml": cm},
		"empty folder":                    {".keep": ""},
		"legacy fields":                   {"kustomization.yaml": "bases: [../x]\npatchesStrategicMerge: [p.yaml]\ncommonLabels: {a: b}\n"},
	}
	for name, files := range folders {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "layer")
			for p, data := range files {
				full := filepath.Join(dir, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for specName, spec := range generatorSpecs {
				t.Run(specName, func(t *testing.T) {
					generatorEqual(t, root, dir, spec)
				})
			}
		})
	}
}

// generatorSpecs are Kustomization specs, each setting fields Flux's
// generator copies into the kustomization ("" sets none: a layer's).
var generatorSpecs = map[string]string{
	"none":            "",
	"targetNamespace": `{"targetNamespace": "apps"}`,
	"empty prefix":    `{"namePrefix": "", "nameSuffix": "-x"}`,
	"patches":         `{"patches": [{"patch": "- {op: replace, path: /kind, value: Secret}", "target": {"kind": "ConfigMap", "name": "a", "labelSelector": "x=y"}}, {"patch": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {b: c}\n"}]}`,
	"images":          `{"images": [{"name": "nginx", "newName": "mirror/nginx", "digest": "sha256:0000000000000000000000000000000000000000000000000000000000000000"}, {"name": "redis", "newTag": "7"}]}`,
	"components":      `{"components": ["../missing", "comp"], "ignoreMissingComponents": true}`,
	"buildMetadata":   `{"buildMetadata": ["originAnnotations"]}`,
}

func generatorEqual(t *testing.T, root, dir, spec string) {
	t.Helper()
	k := map[string]any{}
	var ov *overlay
	if spec != "" {
		var sp map[string]any
		if err := json.Unmarshal([]byte(spec), &sp); err != nil {
			t.Fatal(err)
		}
		k["spec"] = sp
		ov = &overlay{}
		if err := json.Unmarshal([]byte(spec), ov); err != nil {
			t.Fatal(err)
		}
	}
	want, wantFile, _, wantErr := fluxkustomize.NewGenerator(root, unstructured.Unstructured{Object: k}).GenerateManifest(dir)
	b, err := newBuilder(root)
	if err != nil {
		t.Fatal(err)
	}
	got, gotFile, gotErr := kustomizationFor(b.fs, b.root, dir, ov)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("errors differ: flux %v, fleetgen %v", wantErr, gotErr)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("kustomization differs (-flux +fleetgen):\n%s", d)
	}
	if wantFile != gotFile {
		t.Errorf("file %s, flux %s", gotFile, wantFile)
	}
}
