package memlimit

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// limitAfterGC collects until cond holds of the runtime's memory limit (the
// hook runs on the finalizer goroutine, after the collection), or fails.
func limitAfterGC(t *testing.T, cond func(int64) bool) int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		l := debug.SetMemoryLimit(-1)
		if cond(l) {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory limit %d after 10 s of collections", l)
		}
	}
}

func TestLimitFollowsLiveHeap(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	debug.SetMemoryLimit(math.MaxInt64)

	const held = 64 << 20
	stop := start(func(string) string { return "" }, 16<<20)
	keep := make([][]byte, held>>20)
	for i := range keep {
		keep[i] = make([]byte, 1<<20)
		keep[i][0] = byte(i)
	}
	got := limitAfterGC(t, func(l int64) bool { return l != math.MaxInt64 })
	// Live: the 64 MiB held and what the test binary holds besides.
	if lo, hi := Limit(held), Limit(held+32<<20); got < lo || got > hi {
		t.Errorf("limit with %d MiB live = %d MiB, want %d to %d MiB", held>>20, got>>20, lo>>20, hi>>20)
	}
	runtime.KeepAlive(keep)
	keep = nil

	// Under the threshold again, the limit is lifted.
	limitAfterGC(t, func(l int64) bool { return l == math.MaxInt64 })

	// After stop, nothing more is set.
	stop()
	runtime.GC()
	big := make([]byte, 32<<20)
	for range 3 {
		if l := limitAfterGC(t, func(int64) bool { return true }); l != math.MaxInt64 {
			t.Fatalf("limit %d after stop", l)
		}
	}
	runtime.KeepAlive(big)
}

func TestEnvironmentDecides(t *testing.T) {
	for _, env := range []string{"GOMEMLIMIT", "GOGC"} {
		t.Run(env, func(t *testing.T) {
			before := debug.SetMemoryLimit(-1)
			stop := start(func(k string) string {
				if k == env {
					return "100"
				}
				return ""
			}, 1) // any heap is over
			defer stop()
			for range 3 {
				if l := limitAfterGC(t, func(int64) bool { return true }); l != before {
					t.Fatalf("%s set: limit %d, want it left at %d", env, l, before)
				}
			}
		})
	}
}

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int64
	}{
		{0, 64 << 20},
		{500 << 20, 864 << 20},
		{900 << 20, 1504 << 20},
	} {
		if got := Limit(tc.live); got != tc.want {
			t.Errorf("Limit(%d MiB) = %d MiB, want %d MiB", tc.live>>20, got>>20, tc.want>>20)
		}
	}
}
