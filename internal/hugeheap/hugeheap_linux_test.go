package hugeheap

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
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

// TestAdviseTouchesNothing runs advise in a new process whose heap ends in a
// freed run of pages, as a render's does when the packages' init freed
// something last: the block must not be zeroed (touched) by the runtime,
// which would cost 0.6 to 1 s and its whole size in RSS.
func TestAdviseTouchesNothing(t *testing.T) {
	if os.Getenv("HUGEHEAP_CHILD") == "1" {
		garbage := make([]byte, 1<<20) // the last span of the heap, then freed
		garbage[0] = 1
		garbage = nil
		runtime.GC()
		before := rssBytes(t)
		advise(Size)
		fmt.Printf("grew %d\n", rssBytes(t)-before)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestAdviseTouchesNothing$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HUGEHEAP_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	_, rest, ok := strings.Cut(string(out), "grew ")
	if !ok {
		t.Fatalf("child printed no growth:\n%s", out)
	}
	line, _, _ := strings.Cut(rest, "\n")
	grew, err := strconv.ParseInt(line, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if grew > Size/8 {
		t.Errorf("advise grew RSS by %d MiB: the runtime zeroed the block (want under %d MiB)", grew>>20, Size>>23)
	}
}

// rssBytes is VmRSS of this process.
func rssBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}
