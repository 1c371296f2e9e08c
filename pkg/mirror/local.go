package mirror

import (
	"io"
	"net/http"
	"strconv"
	"sync"
)

// The air gap's OCI image layouts are reached as registries, in process:
// the copier (Run) reads a layout as a source registry and writes one as a
// target, so that one copier, with its verification, referrer walk, mounts
// and bounds, serves both. Requests for layoutHost never leave the process
// (no socket is opened); every other request goes to the network as before.

// layoutHost is the registry name the copier gives an OCI image layout.
const layoutHost = "oci-layout.invalid"

// withDisplay names each pair in progress events and errors as display
// says: the source as the lock has it, the layout as the user named it.
func withDisplay(display func(Pair) Pair) Option {
	return func(o *options) error { o.display = display; return nil }
}

// withLocal serves requests for layoutHost with h.
func withLocal(h http.Handler) Option {
	return func(o *options) error { o.local = h; return nil }
}

// localTransport routes requests for layoutHost to h and the others to next.
type localTransport struct {
	h    http.Handler
	next http.RoundTripper
}

func (t localTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != layoutHost {
		return t.next.RoundTrip(req)
	}
	pr, pw := io.Pipe()
	w := &pipeResponse{header: http.Header{}, body: pw, ready: make(chan struct{})}
	in := req
	if in.Body == nil { // what a server sees for a request without one
		r := *req
		r.Body = http.NoBody
		in = &r
	}
	go func() {
		defer func() {
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing
			pw.Close()
			if req.Body != nil {
				req.Body.Close()
			}
		}()
		t.h.ServeHTTP(w, in)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	resp := &http.Response{
		Status: strconv.Itoa(w.code) + " " + http.StatusText(w.code), StatusCode: w.code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: pr, Request: req, ContentLength: -1,
	}
	if n, err := strconv.ParseInt(w.header.Get("Content-Length"), 10, 64); err == nil {
		resp.ContentLength = n
	}
	if req.Method == http.MethodHead {
		pr.Close()
		resp.Body = http.NoBody
	}
	return resp, nil
}

// pipeResponse is an http.ResponseWriter whose body is a pipe to the
// client; ready closes when the status is known.
type pipeResponse struct {
	header http.Header
	body   *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	code   int
}

func (w *pipeResponse) Header() http.Header { return w.header }

func (w *pipeResponse) WriteHeader(code int) {
	w.once.Do(func() {
		w.code = code
		close(w.ready)
	})
}

func (w *pipeResponse) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}
