package tree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// TestMaxReadFile: Read reads back every layer file publish may copy into the
// tree (as large as fleet.yaml may be).
func TestMaxReadFile(t *testing.T) {
	t.Parallel()
	if MaxReadFile < schema.MaxFileSize {
		t.Errorf("MaxReadFile = %d, below schema.MaxFileSize = %d", MaxReadFile, schema.MaxFileSize)
	}
}

// TestReadBounds is issue 26 family 4: an output folder that a pull request
// filled is read through a per-file and a total budget. Past either, Read
// stops with a *BoundError (an input error) naming the bound and the file,
// and memory follows the bound: a 200 MiB stale file is never read whole.
func TestReadBounds(t *testing.T) {
	// Not parallel: the test measures what Read allocates.
	tests := map[string]struct {
		fill  func(t *testing.T, dir string)
		opt   Options
		bound string
		path  string
	}{
		"a 200 MiB stale file": {
			fill: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "manager", "stale.yaml")
				must(t, os.WriteFile(p, []byte(layout.Header), 0o644))
				must(t, os.Truncate(p, 200<<20)) // sparse: costs no disk
			},
			bound: "per file", path: "manager/stale.yaml",
		},
		"twelve files over the total": {
			fill: func(t *testing.T, dir string) {
				for i := range 12 {
					p := filepath.Join(dir, fmt.Sprintf("big-%02d.yaml", i))
					must(t, os.WriteFile(p, []byte(layout.Header), 0o644))
					must(t, os.Truncate(p, 1<<20))
				}
			},
			opt:   Options{MaxTotal: 8 << 20},
			bound: "in total",
		},
		"two thousand empty files over a small total": {
			fill: func(t *testing.T, dir string) {
				for i := range 2000 {
					must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("e%04d", i)), nil, 0o644))
				}
			},
			opt:   Options{MaxTotal: 256 << 10},
			bound: "in total",
		},
		"a name with a newline": {
			fill: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "x\n::error::forged")
				must(t, os.WriteFile(p, nil, 0o644))
				must(t, os.Truncate(p, MaxReadFile+1))
			},
			bound: "per file", path: `"x\n::error::forged"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := Write(dir, []layout.File{file("manager/a.yaml", "a\n")}); err != nil {
				t.Fatal(err)
			}
			tc.fill(t, dir)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Read(dir, tc.opt)
			runtime.ReadMemStats(&after)
			var be *BoundError
			if !errors.As(err, &be) || !problem.IsInvalid(err) {
				t.Fatalf("Read = %v, want a *BoundError that is an input error", err)
			}
			if be.Bound != tc.bound || (tc.path != "" && !strings.Contains(err.Error(), tc.path)) {
				t.Errorf("error %q: want the %s bound, naming %s", err, tc.bound, tc.path)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q holds a raw newline from a file name", err)
			}
			limit := tc.opt.MaxTotal
			if limit == 0 {
				limit = MaxReadTotal
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > uint64(limit)+(16<<20) {
				t.Errorf("Read allocated %d MiB, more than the bound (%d MiB) allows", got>>20, limit>>20)
			}
		})
	}

	// Within the bounds, the same folder reads as before.
	dir := t.TempDir()
	if _, err := Write(dir, []layout.File{file("manager/a.yaml", "a\n")}); err != nil {
		t.Fatal(err)
	}
	have, err := Read(dir, Options{})
	if err != nil || string(have["manager/a.yaml"]) != h+"a\n" {
		t.Fatalf("Read = %q, %v", have, err)
	}
}

// TestReadBoundSameEveryTime: folders are read several at a time, yet a
// folder with a file past the bound in each of many subfolders stops at the
// same file in every run: the first in name order.
func TestReadBoundSameEveryTime(t *testing.T) {
	dir := t.TempDir()
	if _, err := Write(dir, []layout.File{file("manager/a.yaml", "a\n")}); err != nil {
		t.Fatal(err)
	}
	for i := range 64 {
		sub := filepath.Join(dir, "clusters", fmt.Sprintf("c%02d", i))
		must(t, os.MkdirAll(sub, 0o755))
		for j := range 8 {
			must(t, os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d.yaml", j)), []byte(layout.Header), 0o644))
		}
		p := filepath.Join(sub, "stale.yaml")
		must(t, os.WriteFile(p, []byte(layout.Header), 0o644))
		must(t, os.Truncate(p, 2<<20))
	}
	for range 20 {
		_, err := Read(dir, Options{MaxFile: 1 << 20})
		var be *BoundError
		if !errors.As(err, &be) || be.Path != "clusters/c00/stale.yaml" {
			t.Fatalf("Read = %v, want the per-file bound at clusters/c00/stale.yaml", err)
		}
	}
}
