package pipeline

import (
	"fmt"
	"reflect"
	"strings"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// lockedError is the --locked refusal of a render that would add a client ID
// to old for some of auto (the agent clusters with clientID auto).
func lockedError(old *lock.Lock, auto []string) error {
	var missing []string
	for _, c := range auto {
		if _, ok := old.ClientID(c); !ok {
			missing = append(missing, c)
		}
	}
	return problem.Invalid(fmt.Errorf("%s lacks the client ID of %s, and with --locked (or -o -) the lock is never changed: run `fleetgen render -o DIR` locally and commit %s",
		lock.FileName, strings.Join(missing, ", "), lock.FileName))
}

// lockedImages is the --locked check of a mirror: nil when next holds the
// same image entries as old, else an error naming the images whose entry
// would be added, changed or dropped.
func lockedImages(old, next *lock.Lock) error {
	was := make(map[string]lock.Image, len(old.Images))
	for _, img := range old.Images {
		was[img.Source] = img
	}
	var moved []string
	for _, img := range next.Images {
		if w, ok := was[img.Source]; !ok || !reflect.DeepEqual(w, img) {
			moved = append(moved, img.Source)
		}
		delete(was, img.Source)
	}
	for src := range was {
		moved = append(moved, src)
	}
	if len(moved) == 0 {
		return nil
	}
	// The references come from layers (untrusted): count them, and let
	// `fleetgen mirror --dry-run` list them.
	return problem.Invalid(fmt.Errorf("--locked: mirror would change %d image entries of %s (`fleetgen mirror --dry-run` lists them): run `fleetgen mirror` locally and commit %s",
		len(moved), lock.FileName, lock.FileName))
}
