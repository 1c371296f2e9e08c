package mirror

import (
	"context"
	"log/slog"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Every request of Run, Check and Verify reaches the registry the same way:
// one keychain (Keychain), a transport bounded by Timeouts, one ping per
// registry, transient failures retried with backoff.

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
func (o *options) remote(ctx context.Context, targets []name.Registry) ([]remote.Option, *pingCache) {
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
	seen := map[name.Registry]bool{}
	for _, t := range targets {
		if !seen[t] {
			seen[t] = true
			keychain = Keychain(t, o.user, o.password, keychain)
		}
	}
	pings := &pingCache{next: o.transport}
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
