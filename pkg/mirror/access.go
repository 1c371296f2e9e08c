package mirror

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sync/errgroup"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// Every request of Run, Check and Verify reaches the registry the same way:
// one Keychain, a transport bounded by Timeouts, one ping per registry,
// transient failures retried with backoff.

func newOptions(opts []Option) (*options, error) {
	o := &options{jobs: 8, keychain: authn.DefaultKeychain, timeouts: DefaultTimeouts, backoff: DefaultBackoff, referrers: true}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.transport == nil {
		o.transport = newTransport(o.timeouts)
	}
	if o.local != nil {
		o.transport = localTransport{h: o.local, next: o.transport}
	}
	return o, nil
}

// nameOpts parse the target references: plain HTTP with WithInsecure.
func (o *options) nameOpts() []name.Option {
	if o.insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

// remote returns the options of every request, credentials scoped to the
// target registries (Keychain), and the ping cache they share.
func (o *options) remote(ctx context.Context, targets ...schema.Registry) ([]remote.Option, *pingCache) {
	// Retried, but never silently: a truncated upload is worth a warning.
	retry := func(err error) bool {
		if !transient(err) {
			return false
		}
		if digestInvalid(err) {
			o.logger.Warn("the registry received a blob that does not match its digest; uploading it again", "err", err)
		}
		return true
	}
	keychain := o.keychain
	for _, t := range targets {
		keychain = Keychain(t, o.user, o.password, keychain)
	}
	pings := &pingCache{next: boundTransport{next: o.transport}}
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(keychain),
		remote.WithTransport(pings),
		remote.WithJobs(o.jobs),
		remote.WithRetryBackoff(o.backoff),
		remote.WithRetryStatusCodes(retryCodes...),
		remote.WithRetryPredicate(retry),
		remote.WithUserAgent("fleetgen"),
	}, pings
}

// Remote returns the options of a request to reg that fleetgen makes
// outside Run, Check and Verify (a chart fetched or pushed by digest): the
// same keychain, credentials scoped to reg (Keychain), bounded transport and
// retries. opts are Run's; those that do not concern one request are
// ignored.
func Remote(ctx context.Context, reg schema.Registry, opts ...Option) ([]remote.Option, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	ro, _ := o.remote(ctx, reg)
	return ro, nil
}

// HTTPClient returns the client of requests to an HTTP chart repository:
// Run's bounded transport (Timeouts), no credentials.
func HTTPClient(opts ...Option) (*http.Client, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: o.transport}, nil
}

// fanOut calls fn for each i < n, at most jobs at a time, none stopping the
// others, and returns every failure sorted: first refuse(what the calls found
// wrong with their items, sorted), then the other errors they met.
func fanOut(n, jobs int, refuse func(wrong []string) error, fn func(i int) (wrong string, err error)) error {
	wrong, errs := make([]string, n), make([]error, n)
	var g errgroup.Group
	g.SetLimit(jobs)
	for i := range n {
		g.Go(func() error { wrong[i], errs[i] = fn(i); return nil })
	}
	_ = g.Wait()
	wrong = slices.DeleteFunc(wrong, func(s string) bool { return s == "" })
	errs = slices.DeleteFunc(errs, func(e error) bool { return e == nil })
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	if len(wrong) > 0 {
		errs = append([]error{refuse(slices.Sorted(slices.Values(wrong)))}, errs...)
	}
	return errors.Join(errs...)
}
