package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"fleetgen.dev/fleetgen/pkg/mirror"
)

// The warm re-run's floor: what its requests cost the two registries alone.
// One more warm run, untimed, records every request it sends (method, URL,
// Accept); replay then sends them again, bare, replayConcurrency at a time
// and none waiting on another's answer, as no mirror that checks what it
// checks can. A warm run near its replay spends its time in the registries,
// and fewer seconds need fewer requests, not less of fleetgen.

// replayConcurrency is how many replayed requests are in flight at once.
const replayConcurrency = 64

// warmReplay names the row of the replay, and warmRequests counts the
// requests it sent.
const warmReplay = "warm requests, replayed"

var warmRequests int

// recorded is one request of the recorded warm run.
type recorded struct {
	method, url, accept string
}

// recorder is an http.RoundTripper that records each request it passes on
// and a registry answers (not a ping over HTTPS that a plain-HTTP registry
// on loopback refuses before the client falls back).
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []recorded
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{req.Method, req.URL.String(), req.Header.Get("Accept")})
		r.mu.Unlock()
	}
	return resp, err
}

// bareTransport keeps a connection per request in flight, so that the
// replay opens each once.
func bareTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = replayConcurrency
	return t
}

// recordWarm runs one more warm re-run of pairs with a recorder and returns
// its requests. Each request with a body (a write: a warm run makes none)
// is an error.
func recordWarm(ctx context.Context, pairs []mirror.Pair, jobs int) ([]recorded, error) {
	rec := &recorder{next: bareTransport()}
	if _, _, err := mirror.Run(ctx, pairs, mirror.WithJobs(jobs), mirror.WithReferrers(!noReferrers), mirror.WithTransport(rec)); err != nil {
		return nil, fmt.Errorf("fleetgen warm, recorded: %w", err)
	}
	for _, r := range rec.reqs {
		if r.method != http.MethodGet && r.method != http.MethodHead {
			return nil, fmt.Errorf("fleetgen warm, recorded: a %s request (%s): a warm run writes nothing", r.method, r.url)
		}
	}
	return rec.reqs, nil
}

// replay sends reqs again, replayConcurrency at a time, each answer read
// to its end, and returns the time they took, the best of runs.
func replay(ctx context.Context, reqs []recorded, runs int) (time.Duration, error) {
	client := &http.Client{Transport: bareTransport()}
	defer client.CloseIdleConnections()
	var best time.Duration
	for i := 0; i < runs; i++ {
		work := make(chan recorded, len(reqs))
		for _, r := range reqs {
			work <- r
		}
		close(work)
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			firstErr error
		)
		start := time.Now()
		for range replayConcurrency {
			wg.Go(func() {
				for r := range work {
					if err := send(ctx, client, r); err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		d := time.Since(start)
		if firstErr != nil {
			return 0, fmt.Errorf("replay: %w", firstErr)
		}
		if i == 0 || d < best {
			best = d
		}
	}
	return best, nil
}

func send(ctx context.Context, client *http.Client, r recorded) error {
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, nil)
	if err != nil {
		return err
	}
	if r.accept != "" {
		req.Header.Set("Accept", r.accept)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
