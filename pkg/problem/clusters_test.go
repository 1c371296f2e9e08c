package problem

import "testing"

func TestClusters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		names []string
		verb  string
		want  string
	}{
		{[]string{"a"}, "", "cluster a"},
		{[]string{"a"}, "receive", "cluster a receives"},
		{[]string{"b", "a"}, "", "clusters a, b"},
		{[]string{"b", "a"}, "receive", "clusters a, b receive"},
		{[]string{"e", "d", "c", "b", "a"}, "", "clusters a, b, c and 2 more"},
		{[]string{"e", "d", "c", "b", "a"}, "receive", "clusters a, b, c and 2 more receive"},
	} {
		in := append([]string(nil), tc.names...)
		if got := Clusters(tc.names, tc.verb); got != tc.want {
			t.Errorf("Clusters(%q, %q) = %q, want %q", tc.names, tc.verb, got, tc.want)
		}
		if tc.names[0] != in[0] {
			t.Errorf("Clusters sorted its argument in place: %q", tc.names)
		}
	}
}
