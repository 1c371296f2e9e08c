package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
)

// Media types of the signatures fleetgen reads.
const (
	// BundleArtifactType is cosign v3's referrer of an image: a manifest of
	// this artifact type whose layer is a Sigstore bundle.
	BundleArtifactType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// SimpleSigningMediaType is the layer type of cosign's legacy
	// sha256-<hex>.sig manifests.
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
)

// Bounds on what one image's signatures may make fleetgen read.
const (
	maxCandidates = 16      // signature manifests tried per image
	maxLayers     = 16      // signature layers read per manifest
	maxBlob       = 1 << 20 // bytes of one bundle or payload
)

// Verified says which signature verified an image under which policy.
type Verified struct {
	// Policy is the policy's name (spec.verify[N]) and PolicyDigest its
	// fingerprint (Policy.Digest).
	Policy, PolicyDigest string
	// Signature is the digest of the signature's manifest: the bundle
	// referrer, the sha256-<hex>.sig manifest or the Notary Project
	// signature.
	Signature v1.Hash
}

// Image finds the signatures of the image digest in repo that p accepts
// (Sigstore bundle referrers and Notary Project signature referrers, by the
// referrers API or its tag schema, and cosign's legacy sha256-<hex>.sig
// tag) and returns the first that verifies under p. opts
// reach the registry (auth, transport, context): the only requests made are
// to repo's registry. A refusal is an *Error naming the policy and the
// reason (NoSignature when none is found); registry failures are other
// errors.
func (p *Policy) Image(ctx context.Context, repo name.Repository, digest v1.Hash, opts ...remote.Option) (Verified, error) {
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	referrers, legacy, err := p.find(repo, digest, opts)
	if err != nil {
		return Verified{}, err
	}
	return p.among(ctx, repo, digest, referrers, legacy, opts)
}

// ImageAmong is Image for a caller that has already listed what refers to
// the image digest in repo (referrers, by the referrers API or its tag
// schema, in any order) and read cosign's sha256-<hex>.sig tag (legacy,
// nil when there is none): the mirror's supply-chain walk lists them
// anyway. Only the signatures p may accept are read.
func (p *Policy) ImageAmong(ctx context.Context, repo name.Repository, digest v1.Hash, referrers []v1.Descriptor, legacy *v1.Descriptor, opts ...remote.Option) (Verified, error) {
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	return p.among(ctx, repo, digest, referrers, legacy, opts)
}

// among tries the signatures of digest p may accept, of referrers and
// legacy, in order, and returns the first that verifies.
func (p *Policy) among(ctx context.Context, repo name.Repository, digest v1.Hash, referrers []v1.Descriptor, legacy *v1.Descriptor, opts []remote.Option) (Verified, error) {
	cands := p.candidates(referrers, legacy)
	if len(cands) == 0 {
		return Verified{}, &Error{Policy: p.Name, Reason: NoSignature, Detail: p.none(digest)}
	}
	var refusals []*Error
	for _, c := range cands {
		err := p.signature(ctx, repo, digest, c, opts)
		if err == nil {
			return Verified{Policy: p.Name, PolicyDigest: p.Digest, Signature: c.Digest}, nil
		}
		var ve *Error
		if !errors.As(err, &ve) {
			return Verified{}, err
		}
		refusals = append(refusals, ve)
	}
	return Verified{}, combine(p.Name, refusals)
}

// Signature verifies the signature manifest sig (a bundle referrer, a
// legacy .sig manifest or a Notary Project signature) of the image digest
// in repo under p: publish checks the one the lock names, at the mirror.
func (p *Policy) Signature(ctx context.Context, repo name.Repository, digest, sig v1.Hash, opts ...remote.Option) error {
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	desc, err := remote.Get(repo.Digest(sig.String()), opts...)
	if err != nil {
		if isNotFound(err) {
			return &Error{Policy: p.Name, Reason: NoSignature, Detail: fmt.Sprintf("the signature %s the lock names is not there", sig)}
		}
		return fmt.Errorf("get signature %s: %w", sig, err)
	}
	return p.signature(ctx, repo, digest, desc.Descriptor, opts)
}

// none says what was looked for and not found.
func (p *Policy) none(d v1.Hash) string {
	var what []string
	if p.cosign != nil {
		what = append(what, "a Sigstore bundle referrer", "a "+legacyTag(d)+" tag")
	}
	if p.notation != nil {
		what = append(what, "a Notary Project signature referrer")
	}
	return "none of " + strings.Join(what, ", ")
}

// combine makes one refusal of several: the reason of the first that is
// not NoSignature (an attestation is no signature), the details of all.
func combine(policy string, rs []*Error) *Error {
	out := &Error{Policy: policy, Reason: rs[0].Reason}
	for _, r := range rs {
		if r.Reason != NoSignature {
			out.Reason = r.Reason
			break
		}
	}
	var details []string
	for i, r := range rs {
		if i == 3 {
			details = append(details, fmt.Sprintf("and %d more", len(rs)-i))
			break
		}
		details = append(details, r.Detail)
	}
	if len(rs) > 1 {
		out.Detail = fmt.Sprintf("none of %d signatures verifies: %s", len(rs), strings.Join(details, "; "))
	} else {
		out.Detail = details[0]
	}
	return out
}

func legacyTag(d v1.Hash) string { return d.Algorithm + "-" + d.Hex + ".sig" }

// find lists what refers to digest in repo and, when p accepts cosign's
// signatures, HEADs its legacy tag (nil when absent).
func (p *Policy) find(repo name.Repository, digest v1.Hash, opts []remote.Option) ([]v1.Descriptor, *v1.Descriptor, error) {
	var referrers []v1.Descriptor
	idx, err := remote.Referrers(repo.Digest(digest.String()), opts...)
	if err != nil && !isNotFound(err) {
		return nil, nil, fmt.Errorf("list referrers of %s: %w", digest, err)
	}
	if err == nil {
		m, err := idx.IndexManifest()
		if err != nil {
			return nil, nil, fmt.Errorf("list referrers of %s: %w", digest, err)
		}
		referrers = m.Manifests
	}
	if p.cosign == nil {
		return referrers, nil, nil
	}
	desc, err := remote.Head(repo.Tag(legacyTag(digest)), opts...)
	switch {
	case err == nil:
		return referrers, desc, nil
	case !isNotFound(err):
		return nil, nil, fmt.Errorf("head %s: %w", legacyTag(digest), err)
	}
	return referrers, nil, nil
}

// candidates picks the signature manifests p may accept: bundle and Notary
// Project referrers first (at most maxCandidates), then the legacy tag's
// manifest.
func (p *Policy) candidates(referrers []v1.Descriptor, legacy *v1.Descriptor) []v1.Descriptor {
	var out []v1.Descriptor
	for _, d := range referrers {
		if len(out) < maxCandidates && (p.cosign != nil && isBundleType(d.ArtifactType) || p.notation != nil && d.ArtifactType == NotationArtifactType) {
			out = append(out, d)
		}
	}
	if p.cosign != nil && legacy != nil {
		out = append(out, *legacy)
	}
	return out
}

func isBundleType(t string) bool {
	return strings.HasPrefix(t, "application/vnd.dev.sigstore.bundle")
}

// signature reads the signature manifest desc and verifies what it holds:
// every signature layer of a bundle or legacy manifest (at most maxLayers),
// or the one envelope of a Notary Project signature.
func (p *Policy) signature(ctx context.Context, repo name.Repository, digest v1.Hash, desc v1.Descriptor, opts []remote.Option) error {
	got, err := remote.Get(repo.Digest(desc.Digest.String()), opts...)
	if err != nil {
		return fmt.Errorf("get signature %s: %w", desc.Digest, err)
	}
	if got.MediaType.IsIndex() {
		return &Error{Policy: p.Name, Reason: Malformed, Detail: fmt.Sprintf("signature %s is an index", desc.Digest)}
	}
	m, err := v1.ParseManifest(bytes.NewReader(got.Manifest))
	if err != nil {
		return &Error{Policy: p.Name, Reason: Malformed, Detail: fmt.Sprintf("signature %s: the manifest does not parse", desc.Digest)}
	}
	if m.ArtifactType == NotationArtifactType || string(m.Config.MediaType) == NotationArtifactType {
		return p.notationSignature(ctx, repo, digest, desc.Digest, m, opts)
	}
	if p.cosign == nil {
		return &Error{Policy: p.Name, Reason: NoSignature, Detail: fmt.Sprintf("%s is not a Notary Project signature", desc.Digest)}
	}
	bundle := isBundleType(m.ArtifactType) || isBundleType(string(m.Config.MediaType)) || isBundleType(string(m.Config.ArtifactType))
	var refusals []*Error
	for i, l := range m.Layers {
		if i == maxLayers {
			break
		}
		bundleLayer := bundle && isBundleType(string(l.MediaType))
		if !bundleLayer && (bundle || l.MediaType != types.MediaType(SimpleSigningMediaType)) {
			continue
		}
		data, err := readBlob(repo, l, opts)
		if err != nil {
			var ve *Error
			if errors.As(err, &ve) {
				refusals = append(refusals, ve)
				continue
			}
			return err
		}
		var ve *Error
		switch b, perr := parseLayer(bundleLayer, data, l.Annotations); {
		case perr != nil:
			ve = refuse(Malformed, "%v", perr)
		case bundleLayer:
			ve = p.cosign.verify(b, digest, nil)
		default:
			ve = p.cosign.verify(b, digest, data)
		}
		if ve == nil {
			return nil
		}
		ve.Detail = fmt.Sprintf("signature %s: %s", desc.Digest, ve.Detail)
		refusals = append(refusals, ve)
	}
	if len(refusals) == 0 {
		return &Error{Policy: p.Name, Reason: NoSignature, Detail: fmt.Sprintf("%s holds no signature layer", desc.Digest)}
	}
	return combine(p.Name, refusals)
}

// parseLayer reads a bundle layer, or a legacy layer (its payload and
// annotations) as the bundle it amounts to.
func parseLayer(bundle bool, data []byte, ann map[string]string) (*sgbundle.Bundle, error) {
	if bundle {
		return parseBundle(data)
	}
	return legacyBundle(data, ann)
}

// notationSignature verifies the Notary Project signature manifest m
// (digest sig) of the image digest in repo: its one layer is the envelope.
func (p *Policy) notationSignature(ctx context.Context, repo name.Repository, image, sig v1.Hash, m *v1.Manifest, opts []remote.Option) error {
	if p.notation == nil {
		return &Error{Policy: p.Name, Reason: NoSignature, Detail: fmt.Sprintf("%s is a Notary Project signature; the policy accepts cosign's only", sig)}
	}
	if len(m.Layers) != 1 {
		return &Error{Policy: p.Name, Reason: Malformed, Detail: fmt.Sprintf("signature %s: a Notary Project signature has one layer, not %d", sig, len(m.Layers))}
	}
	data, err := readBlob(repo, m.Layers[0], opts)
	if err != nil {
		var ve *Error
		if errors.As(err, &ve) {
			ve.Policy = p.Name
		}
		return err
	}
	// notation-go compares the signed descriptor with the image's: its
	// media type and size too, which a HEAD of the image gives.
	desc, err := remote.Head(repo.Digest(image.String()), opts...)
	if err != nil {
		return fmt.Errorf("head %s: %w", image, err)
	}
	target := ocispec.Descriptor{MediaType: string(desc.MediaType), Digest: digest.Digest(image.String()), Size: desc.Size}
	if ve := p.notation.verify(ctx, repo.Digest(image.String()).String(), target, data, string(m.Layers[0].MediaType)); ve != nil {
		ve.Policy = p.Name
		ve.Detail = fmt.Sprintf("signature %s: %s", sig, ve.Detail)
		return ve
	}
	return nil
}

// readBlob reads a signature layer (at most maxBlob bytes) and checks its
// digest.
func readBlob(repo name.Repository, d v1.Descriptor, opts []remote.Option) ([]byte, error) {
	if d.Size > maxBlob || d.Digest.Algorithm != "sha256" {
		return nil, &Error{Reason: Malformed, Detail: fmt.Sprintf("signature layer %s is larger than %d bytes or not sha256", d.Digest, maxBlob)}
	}
	l, err := remote.Layer(repo.Digest(d.Digest.String()), opts...)
	if err != nil {
		return nil, fmt.Errorf("get signature layer %s: %w", d.Digest, err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, fmt.Errorf("get signature layer %s: %w", d.Digest, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxBlob+1))
	if err != nil {
		return nil, fmt.Errorf("read signature layer %s: %w", d.Digest, err)
	}
	sum := sha256.Sum256(data)
	if len(data) > maxBlob || hex.EncodeToString(sum[:]) != d.Digest.Hex {
		return nil, &Error{Reason: Malformed, Detail: fmt.Sprintf("signature layer %s does not match its digest", d.Digest)}
	}
	return data, nil
}

func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && (te.StatusCode == http.StatusNotFound)
}
