package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// blobState is one blob's upload: the first image to need it uploads it; the
// others wait and mount it from the repository it landed in.
type blobState struct {
	done  chan struct{}
	repo  name.Repository // where it landed, when err is nil
	err   error
	repos map[string]bool // target repositories known to have it
}

// blob makes sure dst has blob b: uploaded from the source the first time this
// run needs it, mounted from the repository it went to ever after.
func (r *runner) blob(ctx context.Context, srcRepo, dstRepo name.Repository, b v1.Descriptor, pushed *atomic.Int64) error {
	key := dstRepo.RegistryStr() + "/" + b.Digest.String()
	r.mu.Lock()
	st, ok := r.blobs[key]
	if !ok {
		st = &blobState{done: make(chan struct{}), repos: map[string]bool{}}
		r.blobs[key] = st
	}
	r.mu.Unlock()

	layer := &sourceBlob{ctx: ctx, desc: b, repo: srcRepo, puller: r.puller, pushed: pushed}
	if !ok {
		err := r.upload(ctx, dstRepo, layer)
		r.mu.Lock()
		st.err = err
		if err == nil {
			st.repo = dstRepo
			st.repos[dstRepo.String()] = true
		}
		r.mu.Unlock()
		close(st.done)
		if err != nil {
			return fmt.Errorf("blob %s (from %s): %w", b.Digest, srcRepo.RegistryStr(), err)
		}
		return nil
	}
	select {
	case <-st.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	have, from, ownerErr := st.repos[dstRepo.String()], st.repo, st.err
	r.mu.Unlock()
	if have {
		return nil
	}
	var err error
	if ownerErr == nil {
		// A mount moves no bytes: it does not wait for an upload slot, so that
		// mounts never queue behind the uploads that hold the slots. (A registry
		// that refuses the mount gets the bytes instead, outside the slots; the
		// images in flight still bound how many such uploads there are.)
		l := &remote.MountableLayer{Layer: layer, Reference: from.Digest(b.Digest.String())}
		err = r.pusher.Upload(ctx, dstRepo, l)
	} else {
		err = r.upload(ctx, dstRepo, layer)
	}
	if err != nil {
		return fmt.Errorf("blob %s (from %s): %w", b.Digest, srcRepo.RegistryStr(), err)
	}
	r.mu.Lock()
	st.repos[dstRepo.String()] = true
	if ownerErr != nil && st.err != nil {
		st.err, st.repo = nil, dstRepo
	}
	r.mu.Unlock()
	return nil
}

// upload pushes (or mounts) l into dst, at most jobs at a time. go-containerregistry
// checks whether dst has it first and retries transient failures.
func (r *runner) upload(ctx context.Context, dst name.Repository, l v1.Layer) error {
	select {
	case r.blobSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-r.blobSem }()
	return r.pusher.Upload(ctx, dst, l)
}

// sourceBlob is a blob of the source repository as a v1.Layer whose digest,
// size and media type come from the manifest, so that nothing is asked of the
// source until the bytes are needed. Compressed verifies the digest as it reads
// and counts the bytes read into pushed.
type sourceBlob struct {
	ctx    context.Context
	desc   v1.Descriptor
	repo   name.Repository
	puller *remote.Puller
	pushed *atomic.Int64
}

func (b *sourceBlob) Digest() (v1.Hash, error) { return b.desc.Digest, nil }
func (b *sourceBlob) DiffID() (v1.Hash, error) {
	return v1.Hash{}, errors.New("diff ID of a copied blob is not known")
}
func (b *sourceBlob) Size() (int64, error)                { return b.desc.Size, nil }
func (b *sourceBlob) MediaType() (types.MediaType, error) { return b.desc.MediaType, nil }
func (b *sourceBlob) Uncompressed() (io.ReadCloser, error) {
	return nil, errors.New("a copied blob is never uncompressed")
}

func (b *sourceBlob) Compressed() (io.ReadCloser, error) {
	l, err := b.puller.Layer(b.ctx, b.repo.Digest(b.desc.Digest.String()))
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	return &countingReader{rc: rc, n: b.pushed}, nil
}

type countingReader struct {
	rc io.ReadCloser
	n  *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.rc.Close() }
