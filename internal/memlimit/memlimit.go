// Package memlimit keeps a large heap close to what it holds live.
//
// Go's collector lets the heap grow to twice what the last collection found
// live (GOGC=100) and keeps freed pages until its scavenger returns them,
// slowly. For a fleet of 100,000 clusters that is 1.8 GiB of resident memory
// for about 900 MiB live. Start sets the runtime's soft memory limit, after
// every collection that finds more than Threshold live, to 1.6 times what is
// live plus Headroom: the collector then runs at 1.6 times the live heap
// instead of twice, and the scavenger returns freed pages to stay under it.
// A fixed limit cannot do this: it would be too high for a small fleet and,
// below what a larger fleet holds live, make the collector run back to back.
// The limit follows the live heap, so it never falls below it.
//
// Under Threshold nothing changes: a fleet of 10,000 clusters holds about
// 150 MiB. A GOMEMLIMIT or GOGC in the environment is the user's choice,
// and Start leaves the runtime alone. The hook is a finalizer that re-arms
// itself, the way Uber's GOGC tuner learnt of each collection.
package memlimit

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

const (
	// Threshold is the live heap above which Start sets a limit.
	Threshold = 512 << 20
	// Headroom is added to the limit for what is not heap: stacks, the
	// collector's own data, the binary's pages.
	Headroom = 64 << 20
)

// sentinel is collected once per cycle; its finalizer runs after. The
// pointer keeps it off the tiny allocator, whose blocks may never be freed.
type sentinel struct{ _ *int }

type tuner struct {
	threshold uint64
	stopped   atomic.Bool
	set       bool // a limit of ours is in force (only the finalizer goroutine touches it)
}

// Start watches every collection, unless getenv("GOMEMLIMIT") or
// getenv("GOGC") is set. stop ends the watch at the next collection and
// lifts the limit it set.
func Start(getenv func(string) string) (stop func()) {
	return start(getenv, Threshold)
}

func start(getenv func(string) string, threshold uint64) func() {
	if getenv("GOMEMLIMIT") != "" || getenv("GOGC") != "" {
		return func() {}
	}
	t := &tuner{threshold: threshold}
	runtime.SetFinalizer(&sentinel{}, t.collected)
	return func() { t.stopped.Store(true) }
}

// Limit is what Start sets for a live heap of live bytes.
func Limit(live uint64) int64 {
	return int64(live/5*8) + Headroom
}

func (t *tuner) collected(s *sentinel) {
	if t.stopped.Load() {
		if t.set {
			debug.SetMemoryLimit(math.MaxInt64)
		}
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	switch live := sample[0].Value.Uint64(); {
	case live > t.threshold:
		debug.SetMemoryLimit(Limit(live))
		t.set = true
	case t.set:
		debug.SetMemoryLimit(math.MaxInt64)
		t.set = false
	}
	runtime.SetFinalizer(s, t.collected)
}
