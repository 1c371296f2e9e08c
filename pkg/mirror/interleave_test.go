package mirror

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestInterleave(t *testing.T) {
	in := []Pair{
		{"s/a:1", "t/a:1"}, {"s/a:2", "t/a:2"}, {"s/a:3", "t/a:3"},
		{"s/b:1", "t/b:1"},
		{"s/c:1", "t/c:1"}, {"s/c:2", "t/c:2"},
	}
	want := []Pair{
		{"s/a:1", "t/a:1"}, {"s/b:1", "t/b:1"}, {"s/c:1", "t/c:1"},
		{"s/a:2", "t/a:2"}, {"s/c:2", "t/c:2"},
		{"s/a:3", "t/a:3"},
	}
	if d := cmp.Diff(want, interleave(in)); d != "" {
		t.Errorf("interleave (-want +got):\n%s", d)
	}
}
