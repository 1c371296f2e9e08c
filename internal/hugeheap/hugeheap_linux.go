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
	// costs address space, not memory.
	b := make([]byte, size)
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
