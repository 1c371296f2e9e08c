package mirror

import (
	"errors"
	"net/http"
	"strings"
	"sync"
)

// pingCache answers go-containerregistry's registry pings (GET /v2/, made once
// per repository it opens) from the first answer each registry gave in this
// run, so that a warm run over many repositories costs one ping per registry.
// A ping only discovers the registry's authentication challenge, which does not
// change between repositories; tokens are still fetched per repository.
//
// It also notes, per registry, whether the referrers API answered
// (referrersAPI), so that the referrer walk asks a registry without it
// nothing per image but what its tag list says is there.
type pingCache struct {
	next http.RoundTripper

	mu   sync.Mutex
	seen map[string]*pingAnswer
	// api maps a registry host to whether GET /v2/…/referrers/… answered
	// with an OCI index (true) or 404/400 (false: no referrers API).
	api map[string]bool
}

// referrersAPI reports whether host has the referrers API, and whether
// that is known yet.
func (p *pingCache) referrersAPI(host string) (has, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	has, known = p.api[host]
	return has, known
}

// noteReferrers records what a referrers API request told of its registry.
func (p *pingCache) noteReferrers(req *http.Request, resp *http.Response) {
	var has bool
	switch {
	case resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Type") == "application/vnd.oci.image.index.v1+json":
		has = true
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotAcceptable || resp.StatusCode == http.StatusOK:
	default:
		return // 401, 5xx…: nothing learnt
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.api == nil {
		p.api = map[string]bool{}
	}
	p.api[req.URL.Host] = has
}

// pingAnswer is one registry's ping answer; ready is closed once it is known.
type pingAnswer struct {
	ready  chan struct{}
	keep   bool // false: transient, ask again
	status int
	header http.Header
	err    error
}

func (p *pingCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/referrers/sha256:") {
		resp, err := p.next.RoundTrip(req)
		if err == nil {
			p.noteReferrers(req, resp)
		}
		return resp, err
	}
	if req.Method != http.MethodGet || req.URL.Path != "/v2/" {
		return p.next.RoundTrip(req)
	}
	key := req.URL.Scheme + "://" + req.URL.Host
	for {
		p.mu.Lock()
		if p.seen == nil {
			p.seen = map[string]*pingAnswer{}
		}
		a, ok := p.seen[key]
		if !ok {
			a = &pingAnswer{ready: make(chan struct{})}
			p.seen[key] = a
		}
		p.mu.Unlock()
		if !ok {
			return p.ask(req, key, a)
		}
		select {
		case <-a.ready:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		if a.keep {
			return a.response(req)
		}
		// The first ping failed for a passing reason: ask again ourselves.
		p.mu.Lock()
		if p.seen[key] == a {
			delete(p.seen, key)
		}
		p.mu.Unlock()
	}
}

// ask pings the registry for everyone waiting on a.
func (p *pingCache) ask(req *http.Request, key string, a *pingAnswer) (*http.Response, error) {
	defer close(a.ready)
	resp, err := p.next.RoundTrip(req)
	switch {
	case err != nil && wrongScheme(err):
		// A plain-HTTP registry asked over HTTPS stays plain HTTP.
		a.keep, a.err = true, err
		return nil, err
	case err != nil:
		return nil, err
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return resp, nil
	}
	resp.Body.Close()
	a.keep, a.status, a.header = true, resp.StatusCode, resp.Header.Clone()
	return a.response(req)
}

func (a *pingAnswer) response(req *http.Request) (*http.Response, error) {
	if a.err != nil {
		return nil, a.err
	}
	return &http.Response{
		Status:     http.StatusText(a.status),
		StatusCode: a.status,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  a.header.Clone(),
		Body:    http.NoBody,
		Request: req,
	}, nil
}

func wrongScheme(err error) bool {
	s := err.Error()
	return errors.Is(err, http.ErrSchemeMismatch) ||
		strings.Contains(s, "server gave HTTP response to HTTPS client") ||
		strings.Contains(s, "first record does not look like a TLS handshake")
}
