package charts

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Cache keeps chart artifacts by digest, content-addressed as an OCI layout
// keeps blobs (blobs/sha256/<hex>): manifests, configs and archives. Every
// read is checked against its digest, so a cache another process or a pull
// request wrote can hold nothing but the bytes a digest names; a blob that
// does not match is refused (ErrDigest). The default folder is the user's
// cache (DefaultCacheDir): charts are not committed beside the lock, and a
// runner that keeps its cache keeps them.
type Cache struct {
	dir string
}

// ErrNotCached is a chart the cache does not hold and may not fetch.
var ErrNotCached = errors.New("not in the chart cache: run `fleetgen mirror`")

// DefaultCacheDir returns $XDG_CACHE_HOME/fleetgen/charts (or the
// platform's user cache folder).
func DefaultCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("chart cache: %w", err)
	}
	return filepath.Join(d, "fleetgen", "charts"), nil
}

// NewCache returns the cache in dir; it is made on the first Put.
func NewCache(dir string) *Cache { return &Cache{dir: dir} }

var sha256Digest = regexp.MustCompile(`^sha256:([a-f0-9]{64})$`)

func (c *Cache) path(digest string) (string, error) {
	m := sha256Digest.FindStringSubmatch(digest)
	if m == nil {
		return "", fmt.Errorf("chart cache: %q is not a sha256 digest", digest)
	}
	return filepath.Join(c.dir, "blobs", "sha256", m[1]), nil
}

// Get returns the blob of digest, at most max bytes, checked; ErrNotCached
// when the cache lacks it.
func (c *Cache) Get(digest string, max int64) ([]byte, error) {
	p, err := c.path(digest)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", digest, ErrNotCached)
	}
	if err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("chart cache: %s is not a regular file", digest)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("chart cache: %s: more than %d bytes: %w", digest, max, ErrLimit)
	}
	if digestOf(b) != digest {
		return nil, fmt.Errorf("chart cache: %s: %w", digest, ErrDigest)
	}
	return b, nil
}

// Put stores b under its digest (atomically: a reader never sees part of
// it) and returns the digest.
func (c *Cache) Put(b []byte) (string, error) {
	d := digestOf(b)
	p, _ := c.path(d)
	if _, err := os.Stat(p); err == nil {
		return d, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("chart cache: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return "", fmt.Errorf("chart cache: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("chart cache: %w", err)
	}
	return d, nil
}

// Artifact returns the chart artifact whose manifest has digest, from the
// cache, checked.
func (c *Cache) Artifact(digest string, lim Limits) (*Artifact, error) {
	raw, err := c.Get(digest, 4<<20)
	if err != nil {
		return nil, err
	}
	cfg, content, err := parseArtifact(raw, lim)
	if err != nil {
		return nil, fmt.Errorf("chart cache: %s: %w", digest, err)
	}
	a := &Artifact{Manifest: raw, Digest: digest}
	if a.Config, err = c.Get(cfg.Digest, maxConfigBytes); err != nil {
		return nil, err
	}
	if a.Archive, err = c.Get(content.Digest, lim.ArchiveBytes); err != nil {
		return nil, err
	}
	return a, nil
}

// PutArtifact stores a's manifest, config and archive, after checking them.
func (c *Cache) PutArtifact(a *Artifact, lim Limits) error {
	if err := a.check(lim); err != nil {
		return fmt.Errorf("chart cache: %s: %w", a.Digest, err)
	}
	for _, b := range [][]byte{a.Archive, a.Config, a.Manifest} {
		if _, err := c.Put(b); err != nil {
			return err
		}
	}
	return nil
}

// Fetch returns the chart artifact ref pins: from the cache, or, when
// remote is true, pulled from its registry by digest (PullOCI, read-only),
// checked and kept in the cache. With remote false a chart the cache lacks is
// ErrNotCached, so that render works offline once mirror has run, and a pull
// request job on a fresh runner fetches from the mirror only when told to.
func (c *Cache) Fetch(ref name.Digest, lim Limits, remoteOK bool, opts ...remote.Option) (*Artifact, error) {
	a, err := c.Artifact(ref.DigestStr(), lim)
	switch {
	case err == nil:
		return a, nil
	case !errors.Is(err, ErrNotCached) || !remoteOK:
		return nil, fmt.Errorf("chart %s: %w", ref, err)
	}
	a, err = PullOCI(ref, lim, opts...)
	if err != nil {
		return nil, err
	}
	if err := c.PutArtifact(a, lim); err != nil {
		return nil, err
	}
	return a, nil
}
