package generate

import (
	"testing"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// TestModesTable: every mode schema accepts has its one entry here, complete.
func TestModesTable(t *testing.T) {
	for _, name := range []string{schema.ModeAgent, schema.ModeManager, schema.ModeCAPI, schema.ModeVerrazzano} {
		m, ok := modes[name]
		if !ok {
			t.Errorf("mode %s has no entry in modes", name)
			continue
		}
		if m.render == nil || m.namespace == nil {
			t.Errorf("mode %s: render and namespace are required", name)
		}
	}
	if got, want := modeNames(), "agent, capi, manager or verrazzano"; got != want {
		t.Errorf("modeNames() = %q, want %q", got, want)
	}
}
