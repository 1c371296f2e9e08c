package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"fleetgen.dev/fleetgen/pkg/pipeline"
)

// mirrorProgress returns the pipeline.MirrorOptions.OnProgress that shows a mirror on
// w: one live bar (images done/total, bytes pushed, rate) when w is a
// terminal whose width is known, otherwise one line per finished image
// ("[3/126] copied SRC -> DST (12.0 MiB)") that a person can follow in CI
// logs; a summary line at the end either way. Nil w shows nothing.
func mirrorProgress(w io.Writer) func(pipeline.MirrorUpdate) {
	if w == nil {
		return nil
	}
	var d *mirrorDisplay
	return func(u pipeline.MirrorUpdate) {
		switch {
		case u.Start:
			d = newMirrorDisplay(w, terminalWidth(w), u.Total)
		case u.Finish:
			if d != nil {
				d.finish(u)
			}
		case d != nil:
			d.event(u)
		}
	}
}

// terminalWidth is w's width in columns when it is a terminal that knows
// it, 0 otherwise (no bar can be drawn).
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil || cols <= 0 {
		return 0
	}
	return cols
}

// mirrorDisplay is one mirror's progress on w.
type mirrorDisplay struct {
	w     io.Writer
	total int
	start time.Time

	mu     sync.Mutex
	bytes  int64
	done   int
	inPair map[string]int64 // bytes already counted for pairs in flight, by source
	bar    *mpb.Bar
	pool   *mpb.Progress
}

// newMirrorDisplay draws a bar width columns wide, or none when width is 0.
func newMirrorDisplay(w io.Writer, width, total int) *mirrorDisplay {
	d := &mirrorDisplay{w: w, total: total, start: time.Now(), inPair: map[string]int64{}}
	if width <= 0 {
		return d
	}
	d.pool = mpb.New(mpb.WithOutput(w), mpb.WithWidth(width), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithAutoRefresh())
	d.bar = d.pool.New(int64(total),
		mpb.BarStyle().Lbound("[").Filler("=").Tip(">").Padding(" ").Rbound("]"),
		mpb.PrependDecorators(
			decor.Name("mirror "),
			decor.CountersNoUnit("%d/%d images", decor.WCSyncSpace),
		),
		mpb.AppendDecorators(
			decor.Any(func(decor.Statistics) string { return d.rate() }, decor.WCSyncSpace),
		),
	)
	return d
}

// rate is "312.4 MiB, 41.2 MiB/s" so far.
func (d *mirrorDisplay) rate() string {
	d.mu.Lock()
	n := d.bytes
	d.mu.Unlock()
	secs := time.Since(d.start).Seconds()
	if secs <= 0 {
		secs = 1
	}
	return fmt.Sprintf("%s, %s/s", pipeline.MirrorBytes(n), pipeline.MirrorBytes(int64(float64(n)/secs)))
}

func (d *mirrorDisplay) event(u pipeline.MirrorUpdate) {
	e := u.Event
	d.mu.Lock()
	defer d.mu.Unlock()
	if !e.Done {
		d.inPair[e.Pair.Source] += e.Bytes
		d.bytes += e.Bytes
		return
	}
	d.bytes += e.Bytes - d.inPair[e.Pair.Source]
	delete(d.inPair, e.Pair.Source)
	d.done++
	if d.bar != nil {
		d.bar.Increment()
		return
	}
	switch {
	case e.Err != nil:
		fmt.Fprintf(d.w, "[%d/%d] failed %s -> %s\n", d.done, d.total, e.Pair.Source, e.Pair.Target)
	case e.Present:
		fmt.Fprintf(d.w, "[%d/%d] present %s\n", d.done, d.total, e.Pair.Target)
	default:
		fmt.Fprintf(d.w, "[%d/%d] copied %s -> %s (%s)\n", d.done, d.total, e.Pair.Source, e.Pair.Target, pipeline.MirrorBytes(e.Bytes))
	}
}

// finish leaves the bar where it stopped and prints the summary line, or
// how many images failed.
func (d *mirrorDisplay) finish(u pipeline.MirrorUpdate) {
	if d.bar != nil {
		if !d.bar.Completed() {
			d.bar.Abort(false) // failures: keep the bar where it stopped
		}
		d.pool.Wait()
	}
	if u.Err != nil {
		fmt.Fprintf(d.w, "mirror to %s failed after %s\n", u.Registry, u.Stats.Elapsed.Round(10*time.Millisecond))
		return
	}
	fmt.Fprintln(d.w, pipeline.MirrorSummary(u.Total, u.Registry, u.Stats))
}

// noReferrersUsage is --no-referrers' help, on mirror and build.
const noReferrersUsage = "mirror images without their signatures, attestations and SBOMs (for registries that refuse artifact manifests)"
