package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/pipeline"
)

// TestMirrorProgressLines: without a terminal, one line per finished image
// and one summary line.
func TestMirrorProgressLines(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	on := mirrorProgress(&out)
	a := mirror.Pair{Source: "src/a:1", Target: "dst/a:1"}
	b := mirror.Pair{Source: "src/b:1", Target: "dst/b:1"}
	c := mirror.Pair{Source: "src/c:1", Target: "dst/c:1"}
	on(pipeline.MirrorUpdate{Start: true, Total: 3, Registry: "dst"})
	on(pipeline.MirrorUpdate{Event: mirror.Event{Pair: a}})
	on(pipeline.MirrorUpdate{Event: mirror.Event{Pair: a, Bytes: 1 << 20}})
	on(pipeline.MirrorUpdate{Event: mirror.Event{Pair: a, Done: true, Bytes: 3 << 20}})
	on(pipeline.MirrorUpdate{Event: mirror.Event{Pair: b, Done: true, Present: true}})
	on(pipeline.MirrorUpdate{Event: mirror.Event{Pair: c, Done: true, Err: errors.New("boom")}})
	on(pipeline.MirrorUpdate{Finish: true, Total: 3, Registry: "dst", Stats: mirror.Stats{Copied: 1, Present: 1, Referrers: 2, BytesPushed: 3 << 20}})
	want := "[1/3] copied src/a:1 -> dst/a:1 (3.0 MiB)\n[2/3] present dst/b:1\n[3/3] failed src/c:1 -> dst/c:1\n" +
		"mirrored 3 images to dst: 1 copied, 1 already present, 2 referrers, 3.0 MiB pushed in 0s\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if mirrorProgress(nil) != nil {
		t.Error("a nil writer shows progress")
	}
}

// TestMirrorProgressBar: with a width, one live bar and no per-image lines.
func TestMirrorProgressBar(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	d := newMirrorDisplay(&out, 100, 2)
	a := mirror.Pair{Source: "src/a:1", Target: "dst/a:1"}
	b := mirror.Pair{Source: "src/b:1", Target: "dst/b:1"}
	d.event(pipeline.MirrorUpdate{Event: mirror.Event{Pair: a, Bytes: 2 << 20}})
	d.event(pipeline.MirrorUpdate{Event: mirror.Event{Pair: a, Done: true, Bytes: 2 << 20}})
	d.event(pipeline.MirrorUpdate{Event: mirror.Event{Pair: b, Done: true, Bytes: 1 << 20}})
	d.finish(pipeline.MirrorUpdate{Finish: true, Total: 2, Registry: "dst"})
	got := out.String()
	for _, s := range []string{"mirror", "2/2 images", "3.0 MiB, ", "/s", "mirrored 2 images to dst"} {
		if !strings.Contains(got, s) {
			t.Errorf("live display lacks %q:\n%q", s, got)
		}
	}
	if strings.Contains(got, "copied src") {
		t.Errorf("live display printed per-image lines:\n%q", got)
	}
}
