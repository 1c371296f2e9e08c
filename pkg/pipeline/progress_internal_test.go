package pipeline

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/mirror"
)

func TestMirrorDisplayLines(t *testing.T) {
	var out bytes.Buffer
	d := newMirrorDisplay(&out, false, 3)
	a := mirror.Pair{Source: "src/a:1", Target: "dst/a:1"}
	b := mirror.Pair{Source: "src/b:1", Target: "dst/b:1"}
	c := mirror.Pair{Source: "src/c:1", Target: "dst/c:1"}
	d.event(mirror.Event{Pair: a})
	d.event(mirror.Event{Pair: a, Bytes: 1 << 20})
	d.event(mirror.Event{Pair: a, Done: true, Bytes: 3 << 20})
	d.event(mirror.Event{Pair: b, Done: true, Present: true})
	d.event(mirror.Event{Pair: c, Done: true, Err: errors.New("boom")})
	d.close()
	want := "[1/3] copied src/a:1 -> dst/a:1 (3.0 MiB)\n[2/3] present dst/b:1\n[3/3] failed src/c:1 -> dst/c:1\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if n := d.bytes.Load(); n != 3<<20 {
		t.Errorf("bytes = %d, want %d (byte events and the done event count once)", n, 3<<20)
	}
}

func TestMirrorDisplayLive(t *testing.T) {
	var out bytes.Buffer
	d := newMirrorDisplay(&out, true, 2)
	a := mirror.Pair{Source: "src/a:1", Target: "dst/a:1"}
	b := mirror.Pair{Source: "src/b:1", Target: "dst/b:1"}
	d.event(mirror.Event{Pair: a, Bytes: 2 << 20})
	d.event(mirror.Event{Pair: a, Done: true, Bytes: 2 << 20})
	d.event(mirror.Event{Pair: b, Done: true, Bytes: 1 << 20})
	d.close()
	got := out.String()
	for _, s := range []string{"mirror", "2/2 images", "3.0 MiB, ", "/s"} {
		if !strings.Contains(got, s) {
			t.Errorf("live display lacks %q:\n%q", s, got)
		}
	}
	if strings.Contains(got, "copied") {
		t.Errorf("live display printed per-image lines:\n%q", got)
	}
}
