package testenv

import (
	"bytes"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a reverse proxy in front of a registry that counts the blob bytes
// sent to it and, when told to, injects faults.
type Proxy struct {
	// Host is the proxy's host:port on 127.0.0.1 (plain HTTP).
	Host string

	rp       *httputil.ReverseProxy
	faults   float64
	mu       sync.Mutex
	rng      *rand.Rand
	bytes    atomic.Int64
	requests atomic.Int64
	injected atomic.Int64
	down     atomic.Bool
	stall    atomic.Bool
	truncate atomic.Int64
	srv      *http.Server
	ln       net.Listener

	timeline bool
	spans    []Span
}

// Span is one request the proxy forwarded: what it was and when (with
// ProxyOptions.Timeline).
type Span struct {
	Kind       string // upload, mount, blob-head, manifest-GET (-HEAD, -PUT…), other
	Start, End time.Time
}

// ProxyOptions tunes a Proxy.
type ProxyOptions struct {
	// Faults is the fraction of requests (0..1) answered with a fault instead of
	// being forwarded: a connection reset, 429 or 500, in equal parts.
	Faults float64
	// Seed makes the faults reproducible.
	Seed int64
	// CloseIdle is the fraction of connections (0..1) closed a moment after
	// they go idle, without telling the client (no Connection: close), so
	// that a client reusing one meets a closed connection ("server closed
	// idle connection", EOF).
	CloseIdle float64
	// Timeline records every request's kind and time (Spans).
	Timeline bool
}

// NewProxy starts a proxy on 127.0.0.1 in front of the registry at target
// (host:port, plain HTTP). Close stops it.
func NewProxy(target string, o ProxyOptions) (*Proxy, error) {
	u := &url.URL{Scheme: "http", Host: target}
	p := &Proxy{
		rp:       httputil.NewSingleHostReverseProxy(u),
		faults:   o.Faults,
		rng:      rand.New(rand.NewSource(o.Seed)),
		timeline: o.Timeline,
	}
	p.rp.ErrorLog = log.New(io.Discard, "", 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.ln = ln
	p.Host = ln.Addr().String()
	p.srv = &http.Server{Handler: p}
	if o.CloseIdle > 0 {
		p.srv.ConnState = func(c net.Conn, st http.ConnState) {
			if st != http.StateIdle || p.float() >= o.CloseIdle {
				return
			}
			p.injected.Add(1)
			// A little later, so that the client has put the connection back
			// in its pool and may be sending on it.
			time.AfterFunc(time.Duration(p.intn(2000))*time.Microsecond, func() { c.Close() })
		}
	}
	go p.srv.Serve(ln)
	return p, nil
}

// StartProxy is NewProxy for tests: it fails t on error and closes the proxy
// when the test ends.
func StartProxy(t testing.TB, target string, o ProxyOptions) *Proxy {
	t.Helper()
	p, err := NewProxy(target, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// Close stops the proxy.
func (p *Proxy) Close() error { return p.srv.Close() }

// BlobBytes returns how many request body bytes were sent to blob endpoints
// (uploads) and forwarded.
func (p *Proxy) BlobBytes() int64 { return p.bytes.Load() }

// Requests returns how many requests reached the proxy.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// Injected returns how many faults were injected.
func (p *Proxy) Injected() int64 { return p.injected.Load() }

// Reset zeroes the counters.
func (p *Proxy) Reset() {
	p.bytes.Store(0)
	p.requests.Store(0)
	p.injected.Store(0)
	p.mu.Lock()
	p.spans = nil
	p.mu.Unlock()
}

// SetDown makes every request fail with 503 (a permanently failing registry).
func (p *Proxy) SetDown(down bool) { p.down.Store(down) }

// SetStall makes every request but the /v2/ ping hang without an answer
// until the client gives up (a registry that accepts and never answers).
func (p *Proxy) SetStall(stall bool) { p.stall.Store(stall) }

// Truncate makes the next n blob upload bodies (PATCH or PUT to
// /blobs/uploads/) reach the registry one byte short, as a connection cut by
// a middlebox would, while the client believes it sent them whole; the
// registry then refuses the upload with DIGEST_INVALID.
func (p *Proxy) Truncate(n int) { p.truncate.Store(int64(n)) }

func (p *Proxy) float() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.Float64()
}

func (p *Proxy) intn(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.Intn(n)
}

// Spans returns the requests recorded so far (ProxyOptions.Timeline).
func (p *Proxy) Spans() []Span {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Span(nil), p.spans...)
}

// kind classifies a registry request for a Span.
func kind(r *http.Request) string {
	path := r.URL.Path
	switch {
	case strings.Contains(path, "/blobs/uploads/") && r.Method == http.MethodPost && r.URL.Query().Get("mount") != "":
		return "mount"
	case strings.Contains(path, "/blobs/uploads/") && (r.Method == http.MethodPatch || r.Method == http.MethodPut || r.Method == http.MethodPost):
		return "upload"
	case strings.Contains(path, "/blobs/") && r.Method == http.MethodHead:
		return "blob-head"
	case strings.Contains(path, "/manifests/"):
		return "manifest-" + r.Method
	}
	return "other"
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	if p.timeline {
		sp := Span{Kind: kind(r), Start: time.Now()}
		defer func() {
			sp.End = time.Now()
			p.mu.Lock()
			p.spans = append(p.spans, sp)
			p.mu.Unlock()
		}()
	}
	if p.down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if p.stall.Load() && r.URL.Path != "/v2/" {
		p.injected.Add(1)
		<-r.Context().Done()
		return
	}
	upload := r.Body != nil && strings.Contains(r.URL.Path, "/blobs/uploads/") && (r.Method == http.MethodPatch || r.Method == http.MethodPut)
	if upload && p.truncate.Load() > 0 {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		if len(body) > 0 && p.truncate.Add(-1) >= 0 {
			p.injected.Add(1)
			body = body[:len(body)-1]
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	fault := -1
	if p.faults > 0 && r.URL.Path != "/v2/" {
		p.mu.Lock()
		if p.rng.Float64() < p.faults {
			fault = p.rng.Intn(3)
		}
		p.mu.Unlock()
	}
	switch fault {
	case 0:
		p.injected.Add(1)
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // RST, not FIN
				}
				conn.Close()
				return
			}
		}
		http.Error(w, "reset", http.StatusBadGateway)
		return
	case 1:
		p.injected.Add(1)
		w.Header().Set("Retry-After", "0")
		http.Error(w, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`, http.StatusTooManyRequests)
		return
	case 2:
		p.injected.Add(1)
		http.Error(w, "injected", http.StatusInternalServerError)
		return
	}
	if r.Body != nil && strings.Contains(r.URL.Path, "/blobs/") && (r.Method == http.MethodPatch || r.Method == http.MethodPut || r.Method == http.MethodPost) {
		r.Body = &countBody{ReadCloser: r.Body, n: &p.bytes}
	}
	p.rp.ServeHTTP(w, r)
}

type countBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}
