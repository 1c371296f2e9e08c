package publish

import "testing"

// TestShownPath: a path from a layer folder cannot forge a line of the dry
// run's listing.
func TestShownPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"apps/x.yaml":                        "apps/x.yaml",
		"apps/x.yaml\nA manager/forged.yaml": `"apps/x.yaml\nA manager/forged.yaml"`,
		"apps/\"q\".yaml":                    `"apps/\"q\".yaml"`,
	} {
		if got := shownPath(in); got != want {
			t.Errorf("shownPath(%q) = %s, want %s", in, got, want)
		}
	}
}
