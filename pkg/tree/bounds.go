package tree

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// Read's bounds (SPEC §7): `diff` and `render --check` read the output folder,
// which a pull request can fill, through a byte budget, so that their memory
// follows the bound and not what the folder holds. The largest file fleetgen
// writes is the manager's kustomization.yaml (0.5 MiB at 10,000 clusters) or a
// sealed 1 MiB kubeconfig (under 2 MiB); layer folders in a checkout of the
// published tree hold files publish copied, each at most 16 MiB (as
// fleet.yaml: schema.MaxFileSize, TestMaxReadFile).
// The whole render of the 10,000-cluster benchmark fleet is 34 MiB. The
// total admits reading back the render of the largest fleets schema.Caps
// and fleet.yaml's size admit, with room to spare: the benchmark fleet of
// 100,000 clusters with five layers each (500,000 layer Kustomizations)
// renders 619 MiB in 960,021 entries, 853 MiB of the budget, and at
// 190,000 clusters (a 30 MiB fleet.yaml) 681 MiB in 1,317,355 entries,
// 1,003 MiB (docs/security.md, Bounds).
const (
	// MaxReadFile bounds one file of the output folder that Read reads.
	MaxReadFile = 16 << 20
	// MaxReadTotal bounds all of them together, plus entryCost per entry.
	MaxReadTotal = 1536 << 20
)

// entryCost is what each folder entry costs of the total budget, whatever
// its size: a folder of a million empty files is not free to hold.
const entryCost = 256

// BoundError stops Read at a bound: a file of the output folder larger than
// the per-file bound, or the folder larger than the total one. It is an input
// error (exit 2): fleetgen writes nothing that large.
type BoundError struct {
	Dir   string
	Path  string // the file at which the bound was passed, relative to Dir
	Bound string // "per file" or "in total"
	Limit int64
}

func (e *BoundError) Error() string {
	return fmt.Sprintf("read %s: stopped at %s: diff and render --check read at most %d MiB %s of the output folder, and it holds more "+
		"(fleetgen writes nothing that large: remove what it did not write, or point -o at a checkout of the published tree; docs/security.md, Bounds)",
		e.Dir, quotePath(e.Path), e.Limit>>20, e.Bound)
}

// quotePath is p for a message, quoted when it holds a control, bidi or
// zero-width character or a quote: a name from the output folder (untrusted)
// must not pass for another line or another name.
func quotePath(p string) string {
	if strings.ContainsFunc(p, func(r rune) bool {
		return r < ' ' || r == 0x7f || r == '"' || (r >= 0x80 && r < 0xa0) ||
			(r >= 0x200b && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0xfeff
	}) {
		return strconv.QuoteToASCII(p)
	}
	return p
}

// budget is what Read may still read; a nil budget bounds nothing but each
// file at maxFile. Folders read at once share it: each file is read within
// what was left when it was opened, so together they pass it by at most a
// file each before one of them stops.
type budget struct {
	dir              string
	file, totalBytes int64
	left             atomic.Int64
}

func (b *budget) total() int64 { return b.totalBytes }

func newBudget(dir string, opt Options) *budget {
	b := &budget{dir: dir, file: opt.MaxFile, totalBytes: opt.MaxTotal}
	if b.file <= 0 {
		b.file = MaxReadFile
	}
	if b.totalBytes <= 0 {
		b.totalBytes = MaxReadTotal
	}
	b.reset()
	return b
}

// reset gives b back all it had, for a read of the tree again.
func (b *budget) reset() {
	if b != nil {
		b.left.Store(b.totalBytes)
	}
}

// limit is how much the next file may hold.
func (b *budget) limit() int64 {
	if b == nil {
		return maxFile
	}
	return min(b.file, maxFile, b.left.Load()+1)
}

// refuse turns readAt's refusal of the file p, larger than limit, into a
// *BoundError; other errors (not a regular file...) leave p unread (nil).
func (b *budget) refuse(p string, err error) error {
	var tl *tooLargeError
	if b == nil || !errors.As(err, &tl) {
		return nil
	}
	if tl.size > b.file {
		return problem.Invalid(&BoundError{Dir: b.dir, Path: p, Bound: "per file", Limit: b.file})
	}
	return problem.Invalid(&BoundError{Dir: b.dir, Path: p, Bound: "in total", Limit: b.total()})
}

// spend takes n bytes for p from the budget.
func (b *budget) spend(p string, n int64) error {
	if b == nil {
		return nil
	}
	if b.left.Add(-n) < 0 {
		return problem.Invalid(&BoundError{Dir: b.dir, Path: p, Bound: "in total", Limit: b.total()})
	}
	return nil
}
