package mirror

import (
	"fmt"
	"io"
	"net/http"
	"strings"
)

// What a registry returns is bounded, in count and bytes (SPEC §4): a source
// registry is not trusted to end its answers, and fleetgen's memory is
// proportional to these bounds, never to what a registry sends. Past one the
// run fails (exit 1) with a *BoundError naming it; nothing is retried.
const (
	// MaxTagPages bounds the pages of one repository's tag list (a
	// registry whose Link header never ends).
	MaxTagPages = 1000
	// MaxListBytes bounds one page of a tag list and one referrers list.
	MaxListBytes = 4 << 20
	// MaxManifestBytes bounds one manifest or index (the OCI distribution
	// spec's 4 MiB that registries accept at least; go-containerregistry's
	// own limit is 100 MiB).
	MaxManifestBytes = 4 << 20
	// MaxIndexEntries bounds the manifests of one index (a platform each,
	// and their attestations).
	MaxIndexEntries = 1024
	// MaxIndexDepth bounds indexes within indexes below an image.
	MaxIndexDepth = 4
)

// BoundError is an answer of a registry past one of fleetgen's bounds.
type BoundError struct {
	// Registry is the host that answered; What says what was too large
	// ("the tag list of REPO", "manifest DIGEST"), Bound which bound and
	// its value.
	Registry, What, Bound string
}

func (e *BoundError) Error() string {
	return fmt.Sprintf("registry %s: %s is past fleetgen's bound (%s)", e.Registry, e.What, e.Bound)
}

// boundTransport bounds the bodies of the answers that fleetgen reads whole:
// tag lists, referrers lists and manifests. Blobs stream to the target and
// are checked against their digest as they go.
type boundTransport struct {
	next http.RoundTripper
}

func (t boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	var what, bound string
	var limit int64
	p := req.URL.Path
	switch {
	case strings.HasSuffix(p, "/tags/list"):
		what, bound, limit = "a page of the tag list of "+repoOf(p, "/tags/list"), fmt.Sprintf("MaxListBytes, %d MiB", MaxListBytes>>20), MaxListBytes
	case strings.Contains(p, "/referrers/"):
		what, bound, limit = "the referrers list of "+p[strings.LastIndex(p, "/")+1:], fmt.Sprintf("MaxListBytes, %d MiB", MaxListBytes>>20), MaxListBytes
	case strings.Contains(p, "/manifests/"):
		what, bound, limit = "manifest "+p[strings.LastIndex(p, "/")+1:], fmt.Sprintf("MaxManifestBytes, %d MiB", MaxManifestBytes>>20), MaxManifestBytes
	default:
		return resp, nil
	}
	if resp.ContentLength > limit {
		resp.Body.Close()
		return nil, &BoundError{Registry: req.URL.Host, What: what + " (" + fmt.Sprint(resp.ContentLength) + " bytes)", Bound: bound}
	}
	resp.Body = &boundBody{rc: resp.Body, left: limit, err: &BoundError{Registry: req.URL.Host, What: what, Bound: bound}}
	return resp, nil
}

// repoOf is the repository of a /v2/<repo>/<suffix> path.
func repoOf(p, suffix string) string {
	return strings.TrimSuffix(strings.TrimPrefix(p, "/v2/"), suffix)
}

// boundBody fails a read past left bytes.
type boundBody struct {
	rc   io.ReadCloser
	left int64
	err  *BoundError
}

func (b *boundBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the bound from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, b.err
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundBody) Close() error { return b.rc.Close() }
