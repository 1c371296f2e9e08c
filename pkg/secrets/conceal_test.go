package secrets

import "testing"

// TestConceal: a Secret in any YAML spelling is concealed; other objects,
// and words that only look like Secret, are not.
func TestConceal(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		data string
		want bool
	}{
		"plain":            {"apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n", true},
		"double quoted":    {"apiVersion: v1\nkind: \"Secret\"\n", true},
		"single quoted":    {"kind: 'Secret'\n", true},
		"escaped":          {"kind: \"Secr\\x65t\"\n", true},
		"tagged":           {"kind: !!str Secret\n", true},
		"binary tag":       {"kind: !!binary U2VjcmV0\n", true},
		"flow":             {"{apiVersion: v1, kind: Secret}\n", true},
		"json":             {`{"apiVersion":"v1","kind":"Secret"}`, true},
		"quoted key":       {"\"kind\": Secret\n", true},
		"crlf":             {"apiVersion: v1\r\nkind: Secret\r\n", true},
		"second document":  {"kind: ConfigMap\n---\nkind: Secret\n", true},
		"in a List":        {"kind: List\nitems:\n- kind: Secret\n", true},
		"trailing comment": {"kind: Secret # x\n", true},
		"does not parse":   {"kind: Secret\n  bad: [\n", true},
		"config map":       {"apiVersion: v1\nkind: ConfigMap\ndata: {Secret: x}\n", false},
		"kubeConfigSecret": {"kind: Cluster\nspec: {kubeConfigSecret: c-kubeconfig}\n", false},
		"nested kind":      {"kind: Kustomization\nspec:\n  patches:\n  - target: {kind: Secret}\n", false},
		"lower case":       {"kind: secret\n", false},
		"empty":            {"", false},
	} {
		if got := Conceal([]byte(tc.data)); got != tc.want {
			t.Errorf("%s: Conceal = %t, want %t", name, got, tc.want)
		}
	}
}
