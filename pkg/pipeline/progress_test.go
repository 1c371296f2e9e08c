package pipeline_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/test/testenv"
)

// An unreachable registry is one line per image, naming the registry and the
// reason once (go-containerregistry tries https:// and then http://).
func TestMirrorUnreachableTarget(t *testing.T) {
	src := testenv.Registry(t)
	pushKured(t, src)
	file := aksFleet(t, src, "127.0.0.1:1")
	var (
		mu     sync.Mutex
		failed []string
	)
	on := func(u pipeline.MirrorUpdate) {
		mu.Lock()
		defer mu.Unlock()
		if u.Event.Done && u.Event.Err != nil {
			failed = append(failed, u.Event.Pair.Source)
		}
	}
	_, err := pipeline.Mirror(context.Background(), pipeline.Config{File: file}, pipeline.MirrorOptions{OnProgress: on})
	if err == nil {
		t.Fatal("mirror to an unreachable registry succeeded")
	}
	msg := err.Error()
	lines := strings.Split(msg, "\n")
	if len(lines) != 2 || lines[0] != "1 of 1 images not mirrored:" {
		t.Fatalf("want a count and one line per image, got:\n%s", msg)
	}
	want := "  mirror " + src + "/kubereboot/kured:1.12.0 -> 127.0.0.1:1/kubereboot/kured:1.12.0: check target: registry 127.0.0.1:1: connect: connection refused"
	if lines[1] != want {
		t.Errorf("got  %s\nwant %s", lines[1], want)
	}
	if len(failed) != 1 {
		t.Errorf("failed image events: %v", failed)
	}
}
