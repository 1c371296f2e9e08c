package hugeheap

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// arenaBytes is the runtime's heap arena on 64-bit Linux (heapArenaBytes):
// the unit in which it maps the heap, contiguously upwards.
const arenaBytes = 64 << 20

func enable(size int) bool {
	_, _, ok := advise(size)
	return ok
}

// advise does Enable's work and returns the range it marked.
func advise(size int) (start, end uintptr, ok bool) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		return 0, 0, false // 32-bit: other arenas, and little heap to gain on
	}
	// The allocation makes the runtime map arenas for it, next to the
	// first; memory fresh from the kernel is not zeroed or touched, so this
	// costs address space, not memory. But a block that starts in a run of
	// pages the heap has used before (the end of the heap, where the
	// packages' init freed something) is zeroed whole by the runtime, which
	// touches all of it: 0.6 to 1 s of page faults and as much RSS, in about
	// one render in seven. A filler as large as the heap so far comes
	// first: it is larger than any run of used pages but the last, so it
	// takes that one (zeroing at most itself), and the block starts beyond
	// it, in fresh memory.
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	filler := make([]byte, max(ms.HeapSys, 1<<20))
	b := make([]byte, size)
	runtime.KeepAlive(filler)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b))) // b's last use: the GC below frees it
	// From the arena before the block (the first, where the heap started)
	// to the one after it; madvise skips what is not mapped.
	start = p&^(arenaBytes-1) - arenaBytes
	end = (p+uintptr(size)+arenaBytes-1)&^(arenaBytes-1) + arenaBytes
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_HUGEPAGE)
	// Give the block back to the heap at once, untouched.
	runtime.GC()
	// ENOMEM: a hole in the range, skipped; the mapped parts took the hint.
	return start, end, errno == 0 || errno == unix.ENOMEM
}
