package publish

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types and annotations of a Flux artifact, as `flux push artifact`
// writes them (github.com/fluxcd/pkg/oci).
const (
	ConfigMediaType    types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	ContentMediaType   types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	SourceAnnotation                   = "org.opencontainers.image.source"
	RevisionAnnotation                 = "org.opencontainers.image.revision"
)

// OCI pushes the same content as Git as a Flux artifact tagged
// spec.source.ref. The artifact holds that content and nothing else, so it
// owns everything in it; what was scanned is what is pushed.
//
// The artifact is what `flux push artifact` makes (an OCI manifest with the
// Flux config and content media types, one tar.gz layer) but reproducible: the
// tar has sorted entries, mtime 0, uid/gid 0, no user or group names, modes
// 0755 (folders, executables) and 0644, and the gzip header carries no name or
// time; there is no creation annotation. So the same tree and input give the
// same manifest digest. Annotations: source (WithSource, default
// spec.source.url) and revision `<ref>@<InputDigest>`. It pushes to
// spec.source.url (or WithPushURL), oci://host/repo, over plain HTTP with
// spec.source.insecure. When the tag already points at this digest, nothing is
// pushed (Result.Changed false).
func OCI(ctx context.Context, f *schema.Fleet, l *lock.Lock, rendered []layout.File, opts ...Option) (Result, error) {
	o, err := newOptions(opts)
	if err != nil {
		return Result{}, err
	}
	ref, err := ociTag(f, o)
	if err != nil {
		return Result{}, err
	}
	tag := ref.TagStr()
	digest, err := InputDigest(f, l)
	if err != nil {
		return Result{}, err
	}
	c, err := collect(f, rendered, o)
	if err != nil {
		return Result{}, err
	}
	source := o.source
	if source == "" {
		source = redact(f.Spec.Source.URL)
	}
	start := time.Now()
	img, err := artifact(c, map[string]string{
		SourceAnnotation:   source,
		RevisionAnnotation: tag + "@" + digest,
	})
	if err != nil {
		return Result{}, fmt.Errorf("publish: build artifact: %w", err)
	}
	imgDigest, err := img.Digest()
	if err != nil {
		return Result{}, err
	}
	o.logger.Debug("built artifact", "digest", imgDigest.String(), "files", len(c.files), "elapsed", time.Since(start))

	ropts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(o.keychain(f.Spec.Registry))}
	desc, err := remote.Head(ref, ropts...)
	var terr *transport.Error
	switch {
	case err == nil && desc.Digest == imgDigest:
		o.logger.Info("tag already holds this artifact; nothing to push", "ref", ref.String(), "digest", imgDigest.String())
		if o.dryRun != nil {
			if _, err := fmt.Fprintf(o.dryRun, "publish: %s already holds this artifact (%s): nothing to push\n", ref, imgDigest); err != nil {
				return Result{}, err
			}
		}
		return Result{Changed: false, Revision: imgDigest.String(), Files: len(c.files), Attempts: 1}, nil
	case err == nil, errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound:
	default:
		o.logger.Debug("head before push", "ref", ref.String(), "err", err)
	}
	if o.dryRun != nil {
		paths := make([]string, 0, len(c.files))
		for p := range c.files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		var b strings.Builder
		fmt.Fprintf(&b, "publish (dry run): would push %s as %s, %d files:\n", ref, imgDigest, len(paths))
		for _, p := range paths {
			fmt.Fprintf(&b, "  %s\n", shownPath(p))
		}
		if _, err := io.WriteString(o.dryRun, b.String()); err != nil {
			return Result{}, err
		}
		o.logger.Info("dry run: not pushing", "ref", ref.String(), "digest", imgDigest.String())
		return Result{Changed: true, Revision: imgDigest.String(), Files: len(c.files), Attempts: 1}, nil
	}
	start = time.Now()
	if err := remote.Write(ref, img, ropts...); err != nil {
		return Result{}, fmt.Errorf("publish: push %s: %w", ref, err)
	}
	o.logger.Info("pushed artifact", "ref", ref.String(), "digest", imgDigest.String(), "files", len(c.files), "elapsed", time.Since(start))
	return Result{Changed: true, Revision: imgDigest.String(), Files: len(c.files), Attempts: 1}, nil
}

// ociTag is where OCI pushes: WithPushURL, else spec.source.url, tagged
// spec.source.ref (default latest).
func ociTag(f *schema.Fleet, o *options) (name.Tag, error) {
	target := o.pushURL
	if target == "" {
		target = f.Spec.Source.URL
	}
	tag := f.Spec.Source.Ref
	if tag == "" {
		tag = "latest"
	}
	repoStr, ok := strings.CutPrefix(target, "oci://")
	if !ok {
		return name.Tag{}, problem.Invalid(fmt.Errorf("publish: OCI URL %s: want oci://host/repository", redact(target)))
	}
	var nopts []name.Option
	if f.Spec.Source.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	ref, err := name.NewTag(repoStr+":"+tag, nopts...)
	if err != nil {
		return name.Tag{}, problem.Invalid(fmt.Errorf("publish: OCI URL %s tag %s: %w", redact(target), tag, err))
	}
	return ref, nil
}

// artifact builds the Flux artifact image for c.
func artifact(c *content, annotations map[string]string) (v1.Image, error) {
	tgz, err := tarGz(c)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tgz)), nil
	}, tarball.WithMediaType(ContentMediaType))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ConfigMediaType)
	img = mutate.Annotations(img, annotations).(v1.Image)
	return mutate.Append(img, mutate.Addendum{Layer: layer})
}

// tarGz writes c as a reproducible tar.gz: folders before their files, all
// sorted, fixed times, owners and modes.
func tarGz(c *content) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	// gzip.Writer's zero Header: no name, no comment, mtime 0.
	tw := tar.NewWriter(zw)
	epoch := time.Unix(0, 0).UTC()
	dirs := map[string]bool{}
	var addDir func(d string) error
	addDir = func(d string) error {
		if d == "." || d == "" || dirs[d] {
			return nil
		}
		if err := addDir(path.Dir(d)); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch})
	}
	for _, p := range c.paths() {
		if err := addDir(path.Dir(p)); err != nil {
			return nil, err
		}
		fl := c.files[p]
		mode := int64(0o644)
		if fl.exec {
			mode = 0o755
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: mode, Size: int64(len(fl.data)), ModTime: epoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(fl.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
