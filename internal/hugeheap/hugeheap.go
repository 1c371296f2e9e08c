// Package hugeheap asks Linux to back the first part of the Go heap with
// transparent huge pages.
//
// A render of a large fleet is short-lived and allocates most of its heap
// once: for a 10,000-cluster fleet.yaml, about 150 MiB within a second. On
// the virtual machines CI runs on, the first touch of each 4 KiB page is a
// page fault that costs 5 to 10 µs: a third of a cold fleet.yaml load was
// page faults. Go's runtime no longer asks for huge pages itself, and most
// distributions leave transparent huge pages to `madvise`, so the heap gets
// 4 KiB pages. Enable maps the heap's first arenas at once (a large
// allocation, freed before it is touched) and marks them MADV_HUGEPAGE: the
// kernel then fills them 2 MiB at a time.
//
// It is a hint: where the kernel has no huge pages to give, or THP is off,
// nothing changes. GODEBUG=disablethp=1, the runtime's own switch, turns it
// off.
package hugeheap

import (
	"os"
	"strings"
)

// Size is how much of the heap Enable prepares: about the peak heap of a
// 10,000-cluster render. Beyond it the heap grows as usual.
const Size = 192 << 20

// Enable prepares the heap for huge pages (see the package comment); it is
// meant for the start of main, before the heap grows. It reports whether the
// kernel took the hint.
func Enable() bool {
	if strings.Contains(os.Getenv("GODEBUG"), "disablethp=1") {
		return false
	}
	return enable(Size)
}
