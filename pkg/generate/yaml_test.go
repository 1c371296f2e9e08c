package generate

import (
	"encoding/json"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/google/go-cmp/cmp"
	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	yamlv3 "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// trickyStrings are scalars a careless encoder gets wrong.
var trickyStrings = []string{
	"", " ", "a", "true", "True", "FALSE", "yes", "no", "on", "Off", "y", "N", "null", "Null", "~",
	"1", "-1", "+1", "1.0", "1e5", "1E5", "0x1f", "0o17", "0b101", "017", "1_000", ".5", ".inf", ".NaN", "-.inf",
	"1.12.0", "10m", "240h", "1:20", "190:20:30", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
	"a: b", "a:b", "a:", "a #b", "a#b", "#a", "- a", "-a", "? a", ":a", ",a", "[a]", "{a}", "a]", "!a", "&a", "*a",
	"|a", ">a", "'a'", "\"a\"", "%a", "@a", "`a`", "a b", "a  b", " a", "a ", "\ta", "a\tb",
	"multi\nline\n", "multi\nline", "multi\n\nline\n", "trailing\n\n", "\nleading", " indented\nfirst\n",
	"spaces \nin line\n", "crlf\r\nline\n", "tab\tin\nblock\n", "ünïcödé", "line\u2028sep", "bom\ufeff", "nul\x00",
	"bad\xffutf8", "=", "<<", "./path", "../x", "/abs", "https://example.com:6443/x?y=1#frag",
	"ssh://git@github.com/contoso/fleet.git", "repo@sha256:abc", "v0.13.0@sha256:1111",
	"0123456789abcdef", "1e", "1E10", "0X1F", "12abc", "6e3x", "1e-5", "0b", "1-2", "1.5e+3",
	"---", "...", "--- a", "a\n---\nb\n", "kustomize.toolkit.fluxcd.io/prune",
}

// TestEncodeMatchesSigsYAML proves the encoder writes the same data
// sigs.k8s.io/yaml (YAML 1.1, what Kubernetes tools use) and yaml.v3 (YAML
// 1.2) read back.
func TestEncodeMatchesSigsYAML(t *testing.T) {
	t.Parallel()
	for _, s := range trickyStrings {
		v := map[string]any{
			"key":  s,
			s + "": "value",
			"list": []string{s, "x"},
			"nested": map[string]any{
				"a": s,
				"b": []map[string]string{{"k": s, "l": "x"}},
			},
		}
		if s == "" {
			delete(v, "")
		}
		data, err := encode(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s, "\xff") {
			continue // not valid UTF-8: readers replace it; only check no panic
		}
		want := jsonRoundTrip(t, v)
		var got any
		if err := yaml.Unmarshal(data, &got); err != nil {
			t.Errorf("%q: sigs.k8s.io/yaml: %v\n%s", s, err, data)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q: sigs.k8s.io/yaml reads back differently (-want +got):\n%s\n%s", s, diff, data)
		}
		var got3 any
		if err := yamlv3.Unmarshal(data, &got3); err != nil {
			t.Errorf("%q: yaml.v3: %v\n%s", s, err, data)
			continue
		}
		if diff := cmp.Diff(want, jsonRoundTrip(t, got3)); diff != "" {
			t.Errorf("%q: yaml.v3 reads back differently (-want +got):\n%s\n%s", s, diff, data)
		}
	}
}

func jsonRoundTrip(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEncodeStructs(t *testing.T) {
	t.Parallel()
	type inner struct {
		A string `json:"a,omitempty"`
	}
	type outer struct {
		Z     string            `json:"z"`
		B     bool              `json:"b"`
		O     bool              `json:"o,omitempty"`
		N     int               `json:"n"`
		Empty inner             `json:"empty,omitempty"`
		Kept  inner             `json:"kept"`
		P     *inner            `json:"p,omitempty"`
		M     map[string]string `json:"m"`
		L     []inner           `json:"l"`
		Skip  string            `json:"-"`
	}
	data, err := encode(nil, &outer{Z: "z", B: false, N: 3, P: &inner{A: "x"}, L: []inner{{A: "1"}, {}}, Skip: "no"})
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	want := `b: false
kept: {}
l:
- a: "1"
- {}
m: {}
"n": 3
p:
  a: x
z: z
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestObjectsDecodeStrictly proves every local struct, with every field set,
// decodes strictly (unknown fields rejected) into its upstream Go type.
func TestObjectsDecodeStrictly(t *testing.T) {
	t.Parallel()
	meta := objectMeta{Name: "n", Namespace: "ns", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}}
	ref := &localObjectRef{Name: "r"}
	tests := map[string]struct {
		local    any
		upstream any
	}{
		"Namespace": {&namespace{APIVersion: "v1", Kind: "Namespace", Metadata: meta}, &corev1.Namespace{}},
		"Secret":    {&secret{APIVersion: "v1", Kind: "Secret", Metadata: meta, Type: capiSecretType, Data: map[string]string{"value": "eA=="}}, &corev1.Secret{}},
		"ConfigMap": {&configMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: meta, Data: map[string]string{"server": "https://x"}}, &corev1.ConfigMap{}},
		"Cluster":   {&fleetCluster{APIVersion: fleetAPIVersion, Kind: "Cluster", Metadata: meta, Spec: fleetClusterSpec{ClientID: "c", KubeConfigSecret: "k"}}, &fleetv1.Cluster{}},
		"Token":     {&registrationToken{APIVersion: fleetAPIVersion, Kind: "ClusterRegistrationToken", Metadata: meta, Spec: registrationTokenSpec{TTL: "240h"}}, &fleetv1.ClusterRegistrationToken{}},
		"Group":     {&clusterGroup{APIVersion: fleetAPIVersion, Kind: "ClusterGroup", Metadata: meta, Spec: clusterGroupSpec{Selector: labelSelector{MatchLabels: map[string]string{"env": "prod"}}}}, &fleetv1.ClusterGroup{}},
		"Git":       {&gitRepository{APIVersion: sourceAPIVersion, Kind: "GitRepository", Metadata: meta, Spec: gitRepositorySpec{Interval: "1m", URL: "https://x", Ref: gitRef{Branch: "main"}, SecretRef: ref}}, &sourcev1.GitRepository{}},
		"OCI":       {&ociRepository{APIVersion: sourceAPIVersion, Kind: "OCIRepository", Metadata: meta, Spec: ociRepositorySpec{Interval: "1m", URL: "oci://x/y", Ref: ociRef{Tag: "v1"}, SecretRef: ref, Insecure: true}}, &sourcev1.OCIRepository{}},
		"Kustomize": {&kustomizeFile{APIVersion: kustomizeConfigAPI, Kind: "Kustomization", Resources: []string{"a.yaml"}}, &kusttypes.Kustomization{}},
		"Flux Kustomization": {&kustomization{APIVersion: kustomizeAPIVersion, Kind: "Kustomization", Metadata: meta, Spec: kustomizationSpec{
			Interval: "10m", Path: "./x", Prune: true, Wait: true, Timeout: "5m",
			SourceRef:  sourceRef{Kind: "GitRepository", Name: "s"},
			DependsOn:  []dependency{{Name: "d"}},
			PostBuild:  &postBuild{Substitute: map[string]string{"cluster": "c"}},
			Decryption: &decryption{Provider: "sops", SecretRef: ref},
			Images:     []kustomizeImage{{Name: "nginx", NewName: "m/nginx", Digest: "sha256:1"}},
		}}, &kustomizev1.Kustomization{}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			data, err := encode(nil, tt.local)
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict(data, tt.upstream); err != nil {
				t.Fatalf("strict decode into %T: %v\n%s", tt.upstream, err, data)
			}
			// And nothing was lost: the upstream object, marshalled back,
			// holds every field we wrote.
			back, err := yaml.Marshal(tt.upstream)
			if err != nil {
				t.Fatal(err)
			}
			var wrote, kept map[string]any
			_ = yaml.Unmarshal(data, &wrote)
			_ = yaml.Unmarshal(back, &kept)
			if missing := missingPaths(wrote, kept, ""); len(missing) > 0 {
				t.Errorf("fields lost through %T: %v", tt.upstream, missing)
			}
		})
	}
}

// missingPaths lists the leaf paths of a that b lacks.
func missingPaths(a, b map[string]any, prefix string) []string {
	var out []string
	for k, v := range a {
		bv, ok := b[k]
		if !ok {
			out = append(out, prefix+k)
			continue
		}
		if am, ok := v.(map[string]any); ok {
			bm, _ := bv.(map[string]any)
			out = append(out, missingPaths(am, bm, prefix+k+".")...)
		}
	}
	return out
}

// TestEncodeUnsupported: a type the encoder cannot write is an error, not a
// panic.
func TestEncodeUnsupported(t *testing.T) {
	t.Parallel()
	type floats struct {
		F float64 `json:"f"`
	}
	type nested struct {
		L [][]string `json:"l"`
	}
	for name, v := range map[string]any{
		"float":            &floats{F: 1.5},
		"nested sequences": &nested{L: [][]string{{"a"}}},
		"not a mapping":    "text",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := encode(nil, v); err == nil {
				t.Fatal("encode: no error")
			}
		})
	}
}
