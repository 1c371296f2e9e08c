package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Every request to a registry is bounded (Timeouts) and a transient failure
// retried (transient, DefaultBackoff); a source whose bytes do not match
// their digest never is.

// Timeouts bound each request to a registry, so that one that accepts
// connections and never answers fails (and is retried, then reported) in
// bounded time instead of hanging the run. Zero leaves a bound unset.
type Timeouts struct {
	// Dial bounds opening a TCP connection.
	Dial time.Duration
	// TLSHandshake bounds the TLS handshake.
	TLSHandshake time.Duration
	// ResponseHeader bounds the wait for a response's headers after the
	// request (body included) was sent; a large upload is not cut short.
	ResponseHeader time.Duration
	// BodyIdle bounds the time a response body may take to move
	// BodyProgress bytes (or reach its end): a stalled or trickling body
	// fails with *StallError.
	BodyIdle time.Duration
}

// DefaultTimeouts are go-containerregistry's dial and TLS bounds plus a
// response-header bound and a body bound, which it lacks: a registry slower
// than a minute to start answering, or whose body moves less than 16 KiB in
// 30 s, is treated as down (after the retries of DefaultBackoff).
var DefaultTimeouts = Timeouts{Dial: 30 * time.Second, TLSHandshake: 10 * time.Second, ResponseHeader: time.Minute, BodyIdle: 30 * time.Second}

// WithTimeouts bounds each request of the default transport (default
// DefaultTimeouts).
func WithTimeouts(t Timeouts) Option {
	return func(o *options) error {
		if t.Dial < 0 || t.TLSHandshake < 0 || t.ResponseHeader < 0 || t.BodyIdle < 0 {
			return fmt.Errorf("timeouts %+v: want 0 or more", t)
		}
		o.timeouts = t
		return nil
	}
}

// newTransport is remote.DefaultTransport with the timeouts t.
func newTransport(t Timeouts) http.RoundTripper {
	base, ok := remote.DefaultTransport.(*http.Transport)
	if !ok {
		base = http.DefaultTransport.(*http.Transport)
	}
	tr := base.Clone()
	tr.DialContext = (&net.Dialer{Timeout: t.Dial, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = t.TLSHandshake
	tr.ResponseHeaderTimeout = t.ResponseHeader
	if t.BodyIdle > 0 {
		return &idleTransport{next: tr, idle: t.BodyIdle}
	}
	return tr
}

// WithBackoff sets the retry backoff for transient failures (timeouts,
// connection resets, idle connections the server closed, 429, 5xx, an upload
// that arrived truncated). The default waits 100ms, doubling, 6 tries.
func WithBackoff(b remote.Backoff) Option {
	return func(o *options) error { o.backoff = b; return nil }
}

// DefaultBackoff is the retry schedule Run uses unless told otherwise: about
// 3 s in all before a transient failure is reported.
var DefaultBackoff = remote.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 6}

// retryCodes are the statuses retried: timeouts, rate limits, server errors.
var retryCodes = []int{
	http.StatusRequestTimeout, http.StatusTooManyRequests,
	http.StatusInternalServerError, http.StatusBadGateway,
	http.StatusServiceUnavailable, http.StatusGatewayTimeout,
}

// transient reports whether err is worth retrying. A digest mismatch of the
// source's content never is; DIGEST_INVALID from the target after an upload
// is (see digestInvalid).
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrDigestMismatch) {
		return false
	}
	// go-containerregistry's checksum errors (internal/verify): the source
	// served bytes that do not match their digest, even when they surface
	// through a network error while streaming an upload.
	if strings.Contains(err.Error(), "error verifying ") {
		return false
	}
	// net/http's error when a reused keep-alive connection turns out to have
	// been closed by the server; a body it could not replay is not resent.
	if strings.Contains(err.Error(), "server closed idle connection") {
		return true
	}
	if digestInvalid(err) {
		return true
	}
	var te *transport.Error
	if errors.As(err, &te) {
		for _, c := range retryCodes {
			if te.StatusCode == c {
				return true
			}
		}
		return te.Temporary()
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) || errors.Is(err, net.ErrClosed) {
		return true // connection refused, reset or closed under us
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection reset")
}

// digestInvalid reports whether the target refused a blob upload because the
// bytes it received do not hash to the digest: the body was cut or damaged on
// the way (the source's bytes are verified as they are read, so a source that
// lies fails with "error verifying" first). go-containerregistry retries the
// whole upload (new session, bytes read again), up to the backoff's steps.
func digestInvalid(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	for _, d := range te.Errors {
		if d.Code == transport.DigestInvalidErrorCode {
			return true
		}
	}
	return false
}
