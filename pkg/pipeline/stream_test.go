package pipeline

import "testing"

// TestObjectsOnly checks which documents render -o - streams: the line scan's
// answer must be the parser's wherever the scan says yes.
func TestObjectsOnly(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		doc  string
		want bool
	}{
		"object":                  {"# header\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    a: b\n  name: x\n", true},
		"flow metadata":           {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", true},
		"quoted name":             {"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"x\"\n", true},
		"two objects":             {"apiVersion: v1\nkind: A\nmetadata:\n  name: x\n---\napiVersion: v1\nkind: B\nmetadata:\n  name: y\n", true},
		"kustomization":           {"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- a.yaml\n", false},
		"agent values":            {"apiServerURL: https://x\nclientID: abc\nlabels:\n  name: x\n", false},
		"sops config":             {"creation_rules:\n- path_regex: x\n", false},
		"nested name only":        {"apiVersion: v1\nkind: A\nmetadata:\n  labels:\n    name: x\n", false},
		"null name":               {"apiVersion: v1\nkind: A\nmetadata:\n  name: null\n", false},
		"empty name":              {"apiVersion: v1\nkind: A\nmetadata:\n  name: \"\"\n", false},
		"object then values":      {"apiVersion: v1\nkind: A\nmetadata:\n  name: x\n---\nfoo: bar\n", false},
		"empty":                   {"# only a comment\n", false},
		"name under another key":  {"apiVersion: v1\nkind: A\nspec:\n  name: x\nmetadata:\n  namespace: y\n", false},
		"metadata name after map": {"apiVersion: v1\nkind: A\nmetadata:\n  annotations:\n    a: b\n  name: x\n", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := objectsOnly([]byte(tc.doc)); got != tc.want {
				t.Errorf("objectsOnly = %v, want %v", got, tc.want)
			}
			if plainObject([]byte(tc.doc)) && !parsedObjects([]byte(tc.doc)) {
				t.Error("the line scan says object where the parser does not")
			}
		})
	}
}
