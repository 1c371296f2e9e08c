package problem

import "testing"

func TestSuggest(t *testing.T) {
	t.Parallel()
	candidates := []string{"host", "prefix", "layout", "insecure"}
	for s, want := range map[string]string{
		"layuot":   "layout",
		"Layout":   "layout",
		"hots":     "host",
		"insecur":  "insecure",
		"hostname": "",
		"x":        "",
		"region":   "",
	} {
		if got := suggest(s, candidates); got != want {
			t.Errorf("suggest(%q) = %q, want %q", s, got, want)
		}
	}
}
