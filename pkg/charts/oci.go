package charts

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The media types of a Helm chart in an OCI registry, as `helm push` writes
// them (helm.sh/helm/v4 pkg/registry) and helm-controller and
// source-controller read them.
const (
	ConfigMediaType  = "application/vnd.cncf.helm.config.v1+json"
	ContentMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// legacyContentMediaType is what Helm before 3.8 pushed; Helm still
	// reads it.
	legacyContentMediaType = "application/tar+gzip"
)

// maxConfigBytes bounds a chart artifact's config: Chart.yaml as JSON.
const maxConfigBytes = 1 << 20

// Artifact is a chart as an OCI artifact.
type Artifact struct {
	// Manifest is the manifest as stored; Digest is its digest, the one the
	// lock pins.
	Manifest []byte
	Digest   string
	// Config is the config blob: the chart's metadata as JSON.
	Config []byte
	// Archive is the chart's .tgz, the content layer.
	Archive []byte
}

// ErrDigest is wrapped by every error of bytes that do not match the digest
// they were fetched by or locked at. It is never retried.
var ErrDigest = errors.New("digest mismatch")

// manifest is an OCI image manifest as `helm push` writes it: no mediaType
// field, the config and the layers (ocispec.Manifest, field order kept).
type manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType,omitempty"`
	Config        descriptor        `json:"config"`
	Layers        []descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// digestOf returns "sha256:<hex>" of b.
func digestOf(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

// parseArtifact checks a chart manifest and returns the descriptors of its
// config and content layer.
func parseArtifact(raw []byte, lim Limits) (config, content descriptor, err error) {
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return config, content, fmt.Errorf("manifest: %w", err)
	}
	if m.MediaType != "" && m.MediaType != string(types.OCIManifestSchema1) {
		return config, content, fmt.Errorf("manifest of media type %q: want an OCI image manifest", m.MediaType)
	}
	if m.Config.MediaType != ConfigMediaType {
		return config, content, fmt.Errorf("config of media type %q: not a Helm chart (want %s)", m.Config.MediaType, ConfigMediaType)
	}
	if m.Config.Size > maxConfigBytes {
		return config, content, fmt.Errorf("config of %d bytes: %w of %d bytes", m.Config.Size, ErrLimit, maxConfigBytes)
	}
	found := 0
	for _, l := range m.Layers {
		if l.MediaType == ContentMediaType || l.MediaType == legacyContentMediaType {
			content = l
			found++
		}
	}
	if found != 1 {
		return config, content, fmt.Errorf("%d chart content layers: want one of media type %s", found, ContentMediaType)
	}
	if content.Size > lim.ArchiveBytes {
		return config, content, fmt.Errorf("chart archive of %d bytes: %w of %d bytes", content.Size, ErrLimit, lim.ArchiveBytes)
	}
	return m.Config, content, nil
}

// PullOCI fetches the chart that ref (repository@sha256:…) pins from its
// registry, checking the media types, lim.ArchiveBytes, and that every byte
// matches its digest (ErrDigest). opts are go-containerregistry's (context,
// authentication, transport); nothing is written.
func PullOCI(ref name.Digest, lim Limits, opts ...remote.Option) (*Artifact, error) {
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("pull chart %s: %w", ref, err)
	}
	if got := digestOf(desc.Manifest); got != ref.DigestStr() {
		return nil, fmt.Errorf("pull chart %s: manifest %s: %w", ref, got, ErrDigest)
	}
	cfg, content, err := parseArtifact(desc.Manifest, lim)
	if err != nil {
		return nil, fmt.Errorf("pull chart %s: %w", ref, err)
	}
	a := &Artifact{Manifest: desc.Manifest, Digest: ref.DigestStr()}
	if a.Config, err = pullBlob(ref.Context(), cfg, opts); err != nil {
		return nil, fmt.Errorf("pull chart %s: config: %w", ref, err)
	}
	if a.Archive, err = pullBlob(ref.Context(), content, opts); err != nil {
		return nil, fmt.Errorf("pull chart %s: archive: %w", ref, err)
	}
	return a, nil
}

func pullBlob(repo name.Repository, d descriptor, opts []remote.Option) ([]byte, error) {
	l, err := remote.Layer(repo.Digest(d.Digest), opts...)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, d.Size+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != d.Size {
		return nil, fmt.Errorf("%d bytes, the manifest says %d: %w", len(b), d.Size, ErrDigest)
	}
	if got := digestOf(b); got != d.Digest {
		return nil, fmt.Errorf("%s: %w", got, ErrDigest)
	}
	return b, nil
}

// Republish returns the OCI artifact `helm push` makes of chart c (Load'ed
// from archive), to push to the mirror: the config is the chart's metadata
// as JSON, the layer the archive as it is, and the manifest annotations
// Helm's (title, version, description, URL, source, authors, the chart's own
// annotations), with the creation time taken from the archive's Chart.yaml
// instead of the clock, so that the same archive always gives the same
// digest.
func Republish(c *Chart, archive []byte) (*Artifact, error) {
	if digestOf(archive) != c.Digest {
		return nil, fmt.Errorf("republish chart %s: the archive is not the chart's: %w", c.Label, ErrDigest)
	}
	cfg, err := json.Marshal(c.meta)
	if err != nil {
		return nil, fmt.Errorf("republish chart %s: %w", c.Label, err)
	}
	m := manifest{
		SchemaVersion: 2,
		Config:        descriptor{MediaType: ConfigMediaType, Digest: digestOf(cfg), Size: int64(len(cfg))},
		Layers:        []descriptor{{MediaType: ContentMediaType, Digest: c.Digest, Size: int64(len(archive))}},
		Annotations:   ociAnnotations(c),
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("republish chart %s: %w", c.Label, err)
	}
	return &Artifact{Manifest: raw, Digest: digestOf(raw), Config: cfg, Archive: archive}, nil
}

// ociAnnotations is Helm's generateOCIAnnotations.
func ociAnnotations(c *Chart) map[string]string {
	meta := c.meta
	out := map[string]string{}
	add := func(k, v string) {
		if v != "" {
			out[k] = v
		}
	}
	add("org.opencontainers.image.description", meta.Description)
	add("org.opencontainers.image.title", meta.Name)
	add("org.opencontainers.image.version", meta.Version)
	add("org.opencontainers.image.url", meta.Home)
	if !c.created.IsZero() {
		add("org.opencontainers.image.created", c.created.Format(time.RFC3339))
	}
	if len(meta.Sources) > 0 {
		add("org.opencontainers.image.source", meta.Sources[0])
	}
	if len(meta.Maintainers) > 0 {
		var sb strings.Builder
		for i, m := range meta.Maintainers {
			sb.WriteString(m.Name)
			if m.Email != "" {
				sb.WriteString(" (" + m.Email + ")")
			}
			if i < len(meta.Maintainers)-1 {
				sb.WriteString(", ")
			}
		}
		add("org.opencontainers.image.authors", sb.String())
	}
	for k, v := range meta.Annotations {
		if k == "org.opencontainers.image.version" || k == "org.opencontainers.image.title" {
			continue
		}
		out[k] = v
	}
	return out
}

// rawManifest is a manifest go-containerregistry pushes as it is.
type rawManifest []byte

func (r rawManifest) RawManifest() ([]byte, error) { return r, nil }
func (rawManifest) MediaType() (types.MediaType, error) {
	return types.OCIManifestSchema1, nil
}

// PushOCI pushes a to ref (the mirror's repository and tag, name-version as
// `helm push` tags): the config and archive blobs, then the manifest.
func PushOCI(a *Artifact, ref name.Reference, opts ...remote.Option) error {
	cfg, content, err := parseArtifact(a.Manifest, Limits{ArchiveBytes: int64(len(a.Archive))})
	if err != nil {
		return fmt.Errorf("push chart %s: %w", ref, err)
	}
	for _, b := range []struct {
		d    descriptor
		data []byte
	}{{cfg, a.Config}, {content, a.Archive}} {
		if digestOf(b.data) != b.d.Digest {
			return fmt.Errorf("push chart %s: blob %s: %w", ref, b.d.Digest, ErrDigest)
		}
		if err := remote.WriteLayer(ref.Context(), static.NewLayer(b.data, types.MediaType(b.d.MediaType)), opts...); err != nil {
			return fmt.Errorf("push chart %s: blob %s: %w", ref, b.d.Digest, err)
		}
	}
	if err := remote.Put(ref, rawManifest(a.Manifest), opts...); err != nil {
		return fmt.Errorf("push chart %s: manifest: %w", ref, err)
	}
	return nil
}

// check verifies that a's parts match its manifest and digest.
func (a *Artifact) check(lim Limits) error {
	if digestOf(a.Manifest) != a.Digest {
		return fmt.Errorf("manifest: %w", ErrDigest)
	}
	cfg, content, err := parseArtifact(a.Manifest, lim)
	if err != nil {
		return err
	}
	if digestOf(a.Config) != cfg.Digest || digestOf(a.Archive) != content.Digest {
		return fmt.Errorf("blobs: %w", ErrDigest)
	}
	return nil
}
