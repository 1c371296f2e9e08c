package hugeheap

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestAdvise checks, in /proc/self/smaps, that the heap mappings in the range
// advise marked carry the kernel's huge-page flag (hg in VmFlags), and that
// the range holds the heap.
func TestAdvise(t *testing.T) {
	start, end, ok := advise(Size)
	if !ok {
		t.Skip("madvise(MADV_HUGEPAGE) refused: a kernel without transparent huge pages")
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var inRange, flagged int
	var lo, hi uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if r, _, ok := strings.Cut(line, " "); ok && strings.Contains(r, "-") && !strings.HasSuffix(line, ":") {
			a, b, _ := strings.Cut(r, "-")
			x, err1 := strconv.ParseUint(a, 16, 64)
			y, err2 := strconv.ParseUint(b, 16, 64)
			if err1 == nil && err2 == nil {
				lo, hi = x, y
				continue
			}
		}
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok && lo < uint64(end) && hi > uint64(start) {
			inRange += int(hi - lo)
			if strings.Contains(" "+flags+" ", " hg ") {
				flagged += int(hi - lo)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if inRange < Size {
		t.Fatalf("%d bytes mapped in [%#x, %#x): want at least the %d of the block", inRange, start, end, Size)
	}
	if flagged < Size {
		t.Errorf("%d of %d mapped bytes in [%#x, %#x) marked for huge pages: want at least %d", flagged, inRange, start, end, Size)
	}
}
