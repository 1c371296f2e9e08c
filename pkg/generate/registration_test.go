package generate

import (
	"testing"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// TestModesTable: every mode of schema.Modes renders here, and nothing else
// does.
func TestModesTable(t *testing.T) {
	t.Parallel()
	for _, m := range schema.Modes {
		r, ok := modes[m.Name]
		if !ok || r.render == nil {
			t.Errorf("mode %s has no render function in modes", m.Name)
		}
		if m.Namespace == nil {
			t.Errorf("mode %s: schema.Modes has no Namespace", m.Name)
		}
	}
	if len(modes) != len(schema.Modes) {
		t.Errorf("modes has %d entries, schema.Modes %d", len(modes), len(schema.Modes))
	}
}
