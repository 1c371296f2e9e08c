package publish

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// MaxPublishedFile bounds what Published reads of one published file: a
// sealed kubeconfig Secret is a few KiB, one of a 1 MiB kubeconfig
// (schema.MaxRefSize) under 2 MiB. A larger file counts as absent.
const MaxPublishedFile = 4 << 20

// maxArtifactLayer bounds the compressed content layer of a published Flux
// artifact that Published reads, and maxArtifactTar what it decompresses of it:
// past either, the files not found yet count as absent (sealed afresh).
const (
	maxArtifactLayer = 1 << 30
	maxArtifactTar   = 4 << 30
)

// Published is what spec.source holds now, as far as a render needs it to keep
// the ciphertext of its sealed Secrets (secrets.Seal's previous): CI starts
// from a fresh clone, with no output folder, so the last publish is the only
// previous render there is. Its content is untrusted like the output folder's:
// only regular files are read (a symlink, submodule or folder at a path counts
// as absent), each at most MaxPublishedFile bytes, and secrets.Seal trusts a
// file only under its own rules.
type Published struct {
	files map[string][]byte // slash path relative to the rendered tree
	// Git: the in-memory repository the branch was fetched into, which
	// WithPublished lends to Git so that it fetches only what changed since.
	st             *memory.Storage
	remote         *git.Remote
	target, branch string
}

// File returns the published bytes of p, a path of the rendered tree (below
// spec.source.path), when FetchPublished was asked for it and it is a regular
// file within the bounds.
func (p *Published) File(rel string) ([]byte, bool) {
	if p == nil {
		return nil, false
	}
	b, ok := p.files[rel]
	return b, ok
}

// Len is how many of the asked paths were found.
func (p *Published) Len() int {
	if p == nil {
		return 0
	}
	return len(p.files)
}

// WithPublished lends Git the repository FetchPublished filled (same URL and
// branch), so that the publish fetches only what changed since.
func WithPublished(p *Published) Option {
	return func(o *options) error { o.published = p; return nil }
}

// FetchPublished reads, from where Git or OCI would publish f (spec.source,
// or WithPushURL), the files at paths (slash paths of the rendered tree,
// placed at spec.source.path as a publish places them): for git the head of
// branch spec.source.ref, fetched as Git fetches it; for oci the Flux
// artifact tagged spec.source.ref. A branch, tag or repository that does not
// exist yet is an empty Published. It pushes nothing.
func FetchPublished(ctx context.Context, f *schema.Fleet, paths []string, opts ...Option) (*Published, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	base, err := cleanRel(f.Spec.Source.Path)
	if err != nil {
		return nil, problem.Invalid(fmt.Errorf("spec.source.path %q: %w", f.Spec.Source.Path, err))
	}
	want := make(map[string]string, len(paths)) // published path → rendered path
	for _, p := range paths {
		rel, err := cleanRel(p)
		if err != nil || rel == "" {
			continue
		}
		want[path.Join(base, rel)] = p
	}
	switch f.Spec.Source.Kind {
	case schema.SourceGit:
		return fetchGitPublished(ctx, f, want, o)
	case schema.SourceOCI:
		return fetchOCIPublished(ctx, f, want, o)
	default:
		return nil, problem.Invalid(fmt.Errorf("publish: spec.source.kind %q: want git or oci", f.Spec.Source.Kind))
	}
}

func fetchGitPublished(ctx context.Context, f *schema.Fleet, want map[string]string, o *options) (*Published, error) {
	target, shown, branch, err := gitTarget(f, o)
	if err != nil {
		return nil, err
	}
	auth, err := gitAuth(target, o)
	if err != nil {
		return nil, fmt.Errorf("read what %s holds: %w", shown, err)
	}
	st, remote, err := newGitRemote(target)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	head, err := fetchBranch(ctx, remote, st, branch, auth)
	if err != nil {
		return nil, fmt.Errorf("read what %s holds: fetch %s: %w", shown, branch, err)
	}
	p := &Published{files: map[string][]byte{}, st: st, remote: remote, target: target, branch: branch}
	if head.IsZero() {
		return p, nil
	}
	c, err := object.GetCommit(st, head)
	if err != nil {
		return nil, fmt.Errorf("read what %s holds: %s: %w", shown, head, err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("read what %s holds: tree of %s: %w", shown, head, err)
	}
	for pub, rel := range want {
		// FindEntry walks tree entries only: a symlink on the way is a blob,
		// not a folder, and ends the walk.
		e, err := t.FindEntry(pub)
		if err != nil || (e.Mode != filemode.Regular && e.Mode != filemode.Deprecated) {
			continue
		}
		b, err := readBlob(st, e, MaxPublishedFile)
		if err != nil {
			continue
		}
		p.files[rel] = b
	}
	o.logger.Debug("read the published tree", "url", shown, "branch", branch, "head", head.String(),
		"asked", len(want), "found", len(p.files), "elapsed", time.Since(start))
	return p, nil
}

// readBlob reads the blob of e when it is at most limit bytes.
func readBlob(st *memory.Storage, e *object.TreeEntry, limit int64) ([]byte, error) {
	blob, err := object.GetBlob(st, e.Hash)
	if err != nil {
		return nil, err
	}
	if blob.Size > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, limit))
}

func fetchOCIPublished(ctx context.Context, f *schema.Fleet, want map[string]string, o *options) (*Published, error) {
	ref, err := ociTag(f, o)
	if err != nil {
		return nil, err
	}
	p := &Published{files: map[string][]byte{}}
	start := time.Now()
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(o.keychain(f.Spec.Registry)))
	var terr *transport.Error
	switch {
	case errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound:
		return p, nil // nothing published yet
	case err != nil:
		return nil, fmt.Errorf("read what %s holds: %w", ref, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("read what %s holds: %w", ref, err)
	}
	if m.Config.MediaType != ConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != ContentMediaType ||
		m.Layers[0].Size > maxArtifactLayer {
		o.logger.Warn("the tag does not hold a Flux artifact fleetgen reads; sealing Secrets afresh", "ref", ref.String())
		return p, nil
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("read what %s holds: %w", ref, err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		return nil, fmt.Errorf("read what %s holds: %w", ref, err)
	}
	defer rc.Close()
	if err := readArtifact(io.LimitReader(rc, maxArtifactLayer), want, p.files); err != nil {
		o.logger.Warn("reading the published artifact stopped; the Secrets not read yet are sealed afresh", "ref", ref.String(), "err", err)
	}
	o.logger.Debug("read the published artifact", "ref", ref.String(), "asked", len(want), "found", len(p.files), "elapsed", time.Since(start))
	return p, nil
}

// readArtifact reads from the tar.gz r the regular files of want (published
// path → rendered path) into out, each at most MaxPublishedFile bytes, and
// stops when all are found or after maxArtifactTar bytes of tar.
func readArtifact(r io.Reader, want map[string]string, out map[string][]byte) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	defer zr.Close()
	tr := tar.NewReader(io.LimitReader(zr, maxArtifactTar))
	bad := map[string]bool{}
	for len(out)+len(bad) < len(want) {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, ok := want[strings.TrimPrefix(path.Clean(h.Name), "./")]
		if !ok || h.Typeflag != tar.TypeReg || h.Size > MaxPublishedFile {
			continue
		}
		if _, dup := out[rel]; dup || bad[rel] {
			delete(out, rel) // two entries at one path: trust neither
			bad[rel] = true
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, MaxPublishedFile))
		if err != nil {
			return err
		}
		out[rel] = b
	}
	return nil
}
