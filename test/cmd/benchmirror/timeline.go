package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"fleetgen.dev/fleetgen/test/testenv"
)

// timeline summarises the requests a target registry saw during one copy
// (-timeline): when uploads ran and how many at once, and what else was
// asked. It is the profile of a copy that waits on the network, which a CPU
// profile does not show.
func timeline(name string, spans []testenv.Span) string {
	if len(spans) == 0 {
		return name + ": no request recorded"
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].Start.Before(spans[j].Start) })
	first, last := spans[0].Start, spans[0].End
	counts := map[string]int{}
	busy := map[string]time.Duration{}
	var uploads []testenv.Span
	for _, s := range spans {
		counts[s.Kind]++
		busy[s.Kind] += s.End.Sub(s.Start)
		if s.End.After(last) {
			last = s.End
		}
		if s.Kind == "upload" {
			uploads = append(uploads, s)
		}
	}
	wall := last.Sub(first)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d requests over %.2f s", name, len(spans), wall.Seconds())
	if len(uploads) > 0 {
		uFirst, uLast := uploads[0].Start, uploads[0].End
		for _, u := range uploads {
			if u.End.After(uLast) {
				uLast = u.End
			}
		}
		// The time at least one upload ran, and the mean number running
		// then.
		type edge struct {
			t time.Time
			d int
		}
		var es []edge
		for _, u := range uploads {
			es = append(es, edge{u.Start, 1}, edge{u.End, -1})
		}
		sort.Slice(es, func(i, j int) bool { return es[i].t.Before(es[j].t) })
		var running int
		var active, weighted time.Duration
		for i := 0; i+1 < len(es); i++ {
			running += es[i].d
			if dt := es[i+1].t.Sub(es[i].t); running > 0 {
				active += dt
				weighted += time.Duration(running) * dt
			}
		}
		fmt.Fprintf(&b, "; first upload at %.2f s, last done %.2f s before the end; uploads running %.2f s, %.1f at a time on average",
			uFirst.Sub(first).Seconds(), last.Sub(uLast).Seconds(), active.Seconds(), float64(weighted)/float64(max(active, 1)))
	}
	var kinds []string
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n    %-9s %5d requests, %7.2f s in all", k, counts[k], busy[k].Seconds())
	}
	return b.String()
}
