package schema

import "testing"

func TestExpandPath(t *testing.T) {
	t.Parallel()
	c := &Cluster{Name: "edge-1", Labels: map[string]string{"env": "prod", "cluster": "ignored", "topology.kubernetes.io/region": "eu"}}
	for path, want := range map[string]string{
		"./apps":                                 "./apps",
		"./apps/${env}":                          "./apps/prod",
		"${cluster}/${env}/${cluster}":           "edge-1/prod/edge-1",
		"./r/${topology.kubernetes.io/region}/x": "./r/eu/x",
		"./x/${missing}/${env}":                  "./x/${missing}/prod",
		"./x/${env":                              "./x/${env",
		"${env}${env}":                           "prodprod",
	} {
		if got := ExpandPath(path, c); got != want {
			t.Errorf("ExpandPath(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestCleanPath(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"./apps": "apps", "apps/": "apps", "/apps": "apps", "//apps": "apps", ".//apps/./x/": "apps/x",
		"": ".", ".": ".", "./": ".", "/": ".", "a/../b": "b",
	} {
		if got := CleanPath(p); got != want {
			t.Errorf("CleanPath(%q) = %q, want %q", p, got, want)
		}
	}
}

func TestSelects(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"env": "prod", "region": "eu"}
	for _, tc := range []struct {
		name     string
		selector map[string]string
		want     bool
	}{
		{"empty selects all", nil, true},
		{"one pair", map[string]string{"env": "prod"}, true},
		{"all pairs", map[string]string{"env": "prod", "region": "eu"}, true},
		{"wrong value", map[string]string{"env": "dev"}, false},
		{"missing key", map[string]string{"tier": "x"}, false},
		{"empty value is not missing", map[string]string{"tier": ""}, false},
	} {
		if got := Selects(tc.selector, labels); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestIsVarName: the label test Variables uses says what substVarRE says.
func TestIsVarName(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"", "a", "_", "A9", "_x_1", "9a", "a-b", "a.b", "kubernetes.io/os", "é", "a b", "a\n", "Z", "z0", "0", "ab\x00"} {
		if got, want := IsVarName(k), substVarRE.MatchString(k); got != want {
			t.Errorf("IsVarName(%q) = %v, substVarRE says %v", k, got, want)
		}
	}
}
