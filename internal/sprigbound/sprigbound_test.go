package sprigbound

import (
	"errors"
	"slices"
	"testing"

	"github.com/Masterminds/sprig/v3"
)

// TestMatchesSprig: within their bounds the functions return what Sprig
// v3.3's own do (the oracle), and past them ErrTooLarge.
func TestMatchesSprig(t *testing.T) {
	t.Parallel()
	ours, theirs := Funcs(100, 100), sprig.TxtFuncMap()
	seq, sprigSeq := ours["seq"].(func(...int) (string, error)), theirs["seq"].(func(...int) string)
	for _, p := range [][]int{{}, {5}, {-3}, {0}, {2, 6}, {6, 2}, {1, 2, 9}, {9, -2, 1}, {9, 2, 1}, {1, -2, 9}, {1, 2, 3, 4}} {
		if got, err := seq(p...); err != nil || got != sprigSeq(p...) {
			t.Errorf("seq %v = %q, %v; Sprig's %q", p, got, err, sprigSeq(p...))
		}
	}
	until, sprigUntil := ours["until"].(func(int) ([]int, error)), theirs["until"].(func(int) []int)
	for _, n := range []int{0, 1, 7, -4} {
		if got, err := until(n); err != nil || !slices.Equal(got, sprigUntil(n)) {
			t.Errorf("until %d = %v, %v; Sprig's %v", n, got, err, sprigUntil(n))
		}
	}
	untilStep, sprigUntilStep := ours["untilStep"].(func(int, int, int) ([]int, error)), theirs["untilStep"].(func(int, int, int) []int)
	for _, p := range [][3]int{{0, 10, 3}, {10, 0, -3}, {0, 10, -1}, {5, 5, 1}} {
		if got, err := untilStep(p[0], p[1], p[2]); err != nil || !slices.Equal(got, sprigUntilStep(p[0], p[1], p[2])) {
			t.Errorf("untilStep %v = %v, %v; Sprig's %v", p, got, err, sprigUntilStep(p[0], p[1], p[2]))
		}
	}
	repeat, sprigRepeat := ours["repeat"].(func(int, string) (string, error)), theirs["repeat"].(func(int, string) string)
	if got, err := repeat(3, "ab"); err != nil || got != sprigRepeat(3, "ab") {
		t.Errorf("repeat 3 ab = %q, %v", got, err)
	}
	for name, err := range map[string]error{
		"seq":       func() error { _, err := seq(101); return err }(),
		"until":     func() error { _, err := until(1 << 30); return err }(),
		"untilStep": func() error { _, err := untilStep(0, 1<<30, 1); return err }(),
		"repeat":    func() error { _, err := repeat(51, "ab"); return err }(),
	} {
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s past its bound: %v, want ErrTooLarge", name, err)
		}
	}
}
