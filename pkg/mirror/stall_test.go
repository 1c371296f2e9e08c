package mirror_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// stalling serves a registry whose GET responses of the kind picked send
// their headers and then stall the body: after a few bytes, or trickling one
// byte every 50 ms.
type stalling struct {
	next    http.Handler
	what    string // "/manifests/" or "/blobs/"
	trickle bool
}

func (h stalling) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, h.what) {
		h.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	h.next.ServeHTTP(rec, r)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	body := rec.Body.Bytes()
	f := w.(http.Flusher)
	for i := 0; i < len(body); i++ {
		if _, err := w.Write(body[i : i+1]); err != nil {
			return
		}
		f.Flush()
		if !h.trickle && i == 2 {
			<-r.Context().Done()
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestRunStalledSourceBody: a source that stalls a manifest body, trickles
// one, or stalls a blob fails the image with a *StallError naming it, in
// bounded time (before the fix: still running at 400 s; here the test's own
// 30 s deadline would end it with "context deadline exceeded").
func TestRunStalledSourceBody(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]stalling{
		"manifest stalled":  {what: "/manifests/"},
		"manifest trickled": {what: "/manifests/", trickle: true},
		"blob stalled":      {what: "/blobs/"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h.next = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
			s := httptest.NewServer(h)
			t.Cleanup(s.Close)
			src := strings.TrimPrefix(s.URL, "http://")
			dataset(t, src)
			pairs, err := mirror.Plan(schema.Registry{Host: inProcess(t)}, []string{src + "/team/app:1.0"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			_, _, err = mirror.Run(ctx, pairs, anon, mirror.WithBackoff(fastBackoff),
				mirror.WithTimeouts(mirror.Timeouts{Dial: time.Second, ResponseHeader: time.Second, BodyIdle: 300 * time.Millisecond}))
			elapsed := time.Since(start)
			var stall *mirror.StallError
			if !errors.As(err, &stall) || stall.Host != src {
				t.Fatalf("Run: %v, want a stall of %s", err, src)
			}
			if !strings.Contains(err.Error(), "registry "+src+" stalled") {
				t.Errorf("error does not name the source:\n%v", err)
			}
			// 3 tries of go-containerregistry, each bounded at 300 ms.
			if elapsed > 10*time.Second {
				t.Errorf("took %s", elapsed)
			}
		})
	}
}
