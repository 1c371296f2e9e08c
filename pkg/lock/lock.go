// Package lock reads and writes fleet.lock.yaml: the digest each image resolved
// to and where it was mirrored, and every generated agent client ID. Like go.sum,
// fleetgen writes it and the user commits it.
package lock

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/internal/safefs"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// FileName is the lock's name beside fleet.yaml.
const FileName = "fleet.lock.yaml"

// APIVersion and Kind identify a lock document.
const (
	APIVersion = "fleetgen.dev/v1alpha1"
	Kind       = "Lock"
)

// Lock is fleet.lock.yaml.
type Lock struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Images is sorted by Source.
	Images []Image `json:"images,omitempty"`
	// Charts are the charts of HTTP chart repositories republished in the
	// mirror as OCI charts, sorted by Repository, Chart and Version. An OCI
	// chart is an Images entry, as an image is.
	Charts []Chart `json:"charts,omitempty"`
	// Clients is sorted by Cluster.
	Clients []Client `json:"clients,omitempty"`
	// Shards are the controller shards assigned to clusters and deliveries
	// (package shard; shards.go); nil when none is.
	Shards *Shards `json:"shards,omitempty"`
}

// Image is one mirrored image (or OCI chart).
type Image struct {
	// Source is the normalised source reference (see Normalize), e.g.
	// docker.io/library/busybox:1.36 or ghcr.io/kubereboot/kured:1.12.0.
	Source string `json:"source"`
	// Target is the mirror reference with the source's tag, e.g.
	// contoso.azurecr.io/kubereboot/kured:1.12.0.
	Target string `json:"target"`
	// Digest is the manifest (or index) digest, identical at source and target.
	Digest string `json:"digest"`
	// Referrers are the artifacts (signatures, attestations, SBOMs) that
	// refer to the image or one of its platform images, or to one of them,
	// copied with it into the target repository; sorted by Digest, omitted
	// when there are none.
	Referrers []Referrer `json:"referrers,omitempty"`
	// Verified is the signature that verified the image at its source when
	// a spec.verify policy covers it; nil when none does.
	Verified *Verified `json:"verified,omitempty"`
}

// Verified records which policy covered an image and which signature
// satisfied it, so that publish checks that signature at the mirror and
// diff shows a change of either.
type Verified struct {
	// Policy is the policy's field path, spec.verify[N].
	Policy string `json:"policy"`
	// PolicyDigest fingerprints what the policy accepted (globs, keys,
	// identities, trusted root): sha256:<hex>.
	PolicyDigest string `json:"policyDigest"`
	// Signature is the digest of the signature's manifest (a Sigstore bundle
	// referrer or cosign's sha256-<hex>.sig manifest), copied with the image.
	Signature string `json:"signature"`
}

// Referrer is one artifact of an image's supply chain, by digest.
type Referrer struct {
	// Digest is the artifact manifest's digest, identical at source and target.
	Digest string `json:"digest"`
	// ArtifactType says what it is: the manifest's artifactType, else its
	// config media type (cosign's signatures: their layer media type).
	ArtifactType string `json:"artifactType"`
	// Tag is the tag it is found by as well (cosign's sha256-<hex>.sig,
	// .att or .sbom), empty when only the referrers API or tag index list it.
	Tag string `json:"tag,omitempty"`
}

// SortReferrers orders rs by digest, then tag: the lock's order.
func SortReferrers(rs []Referrer) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Digest != rs[j].Digest {
			return rs[i].Digest < rs[j].Digest
		}
		return rs[i].Tag < rs[j].Tag
	})
}

// Pinned returns the target repository pinned by digest: repo@sha256:….
func (i Image) Pinned() string {
	return i.Repository() + "@" + i.Digest
}

// Repository returns Target without tag or digest (Target may be repo:tag,
// repo@sha256:… for a source given by digest only, or repo:tag@sha256:…).
func (i Image) Repository() string {
	repo, _ := SplitRef(i.Target)
	return repo
}

// Chart is one chart of an HTTP chart repository (a Flux HelmRepository
// that is not of type oci), pulled once by mirror and republished in the
// mirror as an OCI chart, the layout `helm push` writes.
type Chart struct {
	// Repository is the repository's URL (http or https), without a
	// trailing slash; Chart and Version name the chart in its index.yaml.
	Repository string `json:"repository"`
	Chart      string `json:"chart"`
	Version    string `json:"version"`
	// Archive is the digest of the chart's .tgz as the repository served
	// it (sha256:<hex>).
	Archive string `json:"archive"`
	// Target is the mirror reference, tagged with the version.
	Target string `json:"target"`
	// Digest is the republished chart's manifest digest: what a render
	// reads from the chart cache and what a cluster pulls.
	Digest string `json:"digest"`
}

// Pinned returns the target repository pinned by digest.
func (c Chart) Pinned() string {
	repo, _ := SplitRef(c.Target)
	return repo + "@" + c.Digest
}

func chartLess(a, b Chart) bool {
	if a.Repository != b.Repository {
		return a.Repository < b.Repository
	}
	if a.Chart != b.Chart {
		return a.Chart < b.Chart
	}
	return a.Version < b.Version
}

// Chart returns the entry of chart at version from the HTTP chart
// repository repo (a trailing slash ignored).
func (l *Lock) Chart(repo, chart, version string) (Chart, bool) {
	want := Chart{Repository: strings.TrimSuffix(repo, "/"), Chart: chart, Version: version}
	i := sort.Search(len(l.Charts), func(i int) bool { return !chartLess(l.Charts[i], want) })
	if i < len(l.Charts) && l.Charts[i].Repository == want.Repository && l.Charts[i].Chart == chart && l.Charts[i].Version == version {
		return l.Charts[i], true
	}
	return Chart{}, false
}

// SetCharts replaces the chart entries (mirror writes them all at once).
func (l *Lock) SetCharts(charts []Chart) {
	l.Charts = append([]Chart(nil), charts...)
	l.sort()
}

// Client is the client ID generated for one agent-mode cluster.
type Client struct {
	Cluster  string `json:"cluster"`
	ClientID string `json:"clientID"`
}

// New returns an empty lock.
func New() *Lock {
	return &Lock{APIVersion: APIVersion, Kind: Kind}
}

// Load reads the lock at path. A missing file is an empty lock, not an error.
// See Read for what is refused.
func Load(path string) (*Lock, error) {
	l, _, err := Read(path)
	return l, err
}

// Read is Load that also returns the file's bytes (nil when there is none).
// The lock comes with pull requests: a symlink out of its folder, a FIFO, a
// device, a file over MaxSize and anything Parse refuses are input errors
// (problem.Errors naming path), and nothing past MaxSize is ever read.
func Read(path string) (*Lock, []byte, error) {
	data, err := safefs.ReadFile(filepath.Dir(path), filepath.Base(path), MaxSize)
	if err != nil {
		var e *problem.FieldError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return New(), nil, nil
		case errors.Is(err, safefs.ErrOutside):
			e = problem.Other("", "a symlink that leads out of the folder of fleet.yaml: %s", rewrite)
		case errors.Is(err, safefs.ErrNotRegular):
			e = problem.Other("", "not a regular file (a folder, FIFO or device): %s", rewrite)
		case errors.Is(err, safefs.ErrTooLarge):
			e = problem.TooLarge("", "larger than %d bytes: %s", MaxSize, rewrite)
		default:
			return nil, nil, fmt.Errorf("read %s: %w", path, err)
		}
		return nil, nil, problem.Errors{e.At(path, 0, 0)}
	}
	l, err := Parse(data)
	if err != nil {
		var es problem.Errors
		if errors.As(err, &es) {
			for _, e := range es {
				e.File = path
			}
		}
		return nil, nil, err
	}
	return l, data, nil
}

func (l *Lock) sort() {
	sort.Slice(l.Images, func(i, j int) bool { return l.Images[i].Source < l.Images[j].Source })
	for i := range l.Images {
		SortReferrers(l.Images[i].Referrers)
	}
	sort.Slice(l.Charts, func(i, j int) bool { return chartLess(l.Charts[i], l.Charts[j]) })
	sort.Slice(l.Clients, func(i, j int) bool { return l.Clients[i].Cluster < l.Clients[j].Cluster })
	l.sortShards()
}

// header starts every lock file.
const header = "# Generated by fleetgen. DO NOT EDIT. Commit this file, like go.sum.\n"

// Marshal returns the lock's canonical bytes: sorted, LF, one trailing newline.
// It returns nil only when the YAML library fails, which the lock's plain
// string fields never make it do; Write refuses nil rather than write an
// empty lock.
func (l *Lock) Marshal() []byte {
	l.APIVersion, l.Kind = APIVersion, Kind
	l.sort()
	b, err := yaml.Marshal(l)
	if err != nil {
		return nil
	}
	return append([]byte(header), b...)
}

// Write writes l to path atomically (temporary file and rename) and leaves the
// file untouched when its bytes would not change.
func Write(path string, l *Lock) error {
	data := l.Marshal()
	if data == nil {
		return fmt.Errorf("write %s: the lock does not encode as YAML", path)
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".fleet.lock.*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Image returns the entry for a normalised source reference.
func (l *Lock) Image(source string) (Image, bool) {
	i := sort.Search(len(l.Images), func(i int) bool { return l.Images[i].Source >= source })
	if i < len(l.Images) && l.Images[i].Source == source {
		return l.Images[i], true
	}
	return Image{}, false
}

// SetImages replaces the image entries (mirror writes them all at once).
func (l *Lock) SetImages(images []Image) {
	l.Images = append([]Image(nil), images...)
	l.sort()
}

// ClientID returns the client ID kept for cluster.
func (l *Lock) ClientID(cluster string) (string, bool) {
	i := sort.Search(len(l.Clients), func(i int) bool { return l.Clients[i].Cluster >= cluster })
	if i < len(l.Clients) && l.Clients[i].Cluster == cluster {
		return l.Clients[i].ClientID, true
	}
	return "", false
}

// AssignClientIDs gives every cluster in clusters that has no client ID yet a new
// random one read from r (crypto/rand.Reader when nil) and reports whether it
// added any. Existing entries, including those of clusters no longer listed, are
// kept: a client ID identifies a registered agent.
func (l *Lock) AssignClientIDs(clusters []string, r io.Reader) (bool, error) {
	if r == nil {
		r = rand.Reader
	}
	added := false
	for _, c := range clusters {
		if _, ok := l.ClientID(c); ok {
			continue
		}
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return added, fmt.Errorf("generate client ID for %s: %w", c, err)
		}
		l.Clients = append(l.Clients, Client{Cluster: c, ClientID: hex.EncodeToString(b[:])})
		l.sort()
		added = true
	}
	return added, nil
}

// Clone returns a deep copy of l, for a render that may add client IDs to its
// own copy only.
func (l *Lock) Clone() *Lock {
	c := *l
	c.Images = append([]Image(nil), l.Images...)
	for i := range c.Images {
		c.Images[i].Referrers = append([]Referrer(nil), c.Images[i].Referrers...)
		if v := c.Images[i].Verified; v != nil {
			vv := *v
			c.Images[i].Verified = &vv
		}
	}
	c.Charts = append([]Chart(nil), l.Charts...)
	c.Clients = append([]Client(nil), l.Clients...)
	c.Shards = l.Shards.clone()
	return &c
}

// AssignPlaceholders gives every cluster in clusters that has no client ID yet
// the client ID placeholder, and reports whether it added any. `render
// --check` shows a missing client ID this way rather than inventing one.
func (l *Lock) AssignPlaceholders(clusters []string, placeholder string) bool {
	added := false
	for _, c := range clusters {
		if _, ok := l.ClientID(c); ok {
			continue
		}
		l.Clients = append(l.Clients, Client{Cluster: c, ClientID: placeholder})
		l.sort()
		added = true
	}
	return added
}
