package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// BodyProgress is how many bytes a response body must deliver within
// Timeouts.BodyIdle, or reach its end, for the read to go on: a registry that
// stalls a body, or trickles it (1 byte every 20 s), fails the request.
const BodyProgress = 16 << 10

// StallError is a response body that moved fewer than BodyProgress bytes in
// Idle before its end. It is a timeout: retried like one, then reported.
type StallError struct {
	// Host is the registry that stalled.
	Host string
	Idle time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("registry %s stalled: a response body moved less than %d KiB in %s", e.Host, BodyProgress>>10, e.Idle)
}

// Timeout makes a stall transient, as other timeouts are.
func (e *StallError) Timeout() bool { return true }

// idleTransport bounds every response body read: each request gets its own
// context, cancelled when the body has not moved BodyProgress bytes for idle,
// which ends a Read blocked on the connection.
type idleTransport struct {
	next http.RoundTripper
	idle time.Duration
}

func (t *idleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	b := &idleBody{rc: resp.Body, cancel: cancel, stall: &StallError{Host: req.URL.Host, Idle: t.idle}}
	b.timer = time.AfterFunc(t.idle, b.fire)
	resp.Body = b
	return resp, nil
}

type idleBody struct {
	rc     io.ReadCloser
	cancel context.CancelFunc
	stall  *StallError
	timer  *time.Timer

	mu    sync.Mutex
	moved int // bytes since the timer was last reset
	fired bool
}

func (b *idleBody) fire() {
	b.mu.Lock()
	b.fired = true
	b.mu.Unlock()
	b.cancel()
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	fired := b.fired
	b.moved += n
	if !fired && b.moved >= BodyProgress {
		b.moved = 0
		b.timer.Reset(b.stall.Idle)
	}
	b.mu.Unlock()
	switch {
	case err == nil:
	case fired && !errors.Is(err, io.EOF):
		err = b.stall
	default:
		b.timer.Stop()
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel()
	return err
}
