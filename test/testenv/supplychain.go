package testenv

import (
	"fmt"
	"math/rand"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Artifact types of SupplyChain's artifacts.
const (
	CosignSignatureType = "application/vnd.dev.cosign.simplesigning.v1+json"
	SBOMType            = "application/spdx+json"
	AttestationType     = "application/vnd.in-toto+json"
	SignatureType       = "application/vnd.dev.cosign.artifact.sig.v1+json"
)

// Chain is what SupplyChain pushed: the index, its amd64 image and each
// artifact's digest.
type Chain struct {
	Index, AMD64 v1.Hash
	// Signature is cosign's legacy signature of the index, tagged
	// sha256-<index hex>.sig; SBOM refers to the index, Attestation to the
	// amd64 image, SBOMSignature to the SBOM.
	Signature, SBOM, Attestation, SBOMSignature v1.Hash
	// SignatureTag is the signature's tag.
	SignatureTag string
}

// Artifacts returns every artifact digest with its artifact type.
func (c Chain) Artifacts() map[v1.Hash]string {
	return map[v1.Hash]string{
		c.Signature: CosignSignatureType, c.SBOM: SBOMType,
		c.Attestation: AttestationType, c.SBOMSignature: SignatureType,
	}
}

// SupplyChain pushes to ref (repo:tag) a two-platform index with its supply
// chain: a cosign signature under the legacy tag sha256-<hex>.sig, an SBOM
// referrer on the index, an in-toto attestation referrer on the amd64 image
// and a signature referrer on the SBOM (a chain). Referrers are written with
// go-containerregistry's remote.Write, which keeps the referrers tag index
// of a registry without the referrers API.
func SupplyChain(ref string, rng *rand.Rand, opts ...remote.Option) (Chain, error) {
	var c Chain
	tag, err := name.NewTag(ref)
	if err != nil {
		return c, err
	}
	repo := tag.Context()
	idx, err := Index(rng, nil, 1, 1024)
	if err != nil {
		return c, err
	}
	if err := remote.WriteIndex(tag, idx, opts...); err != nil {
		return c, fmt.Errorf("push index: %w", err)
	}
	if c.Index, err = idx.Digest(); err != nil {
		return c, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return c, err
	}
	idxDesc := v1.Descriptor{MediaType: im.MediaType, Digest: c.Index}
	if idxDesc.Size, err = idx.Size(); err != nil {
		return c, err
	}
	amd64 := im.Manifests[0]
	c.AMD64 = amd64.Digest

	c.SignatureTag = "sha256-" + c.Index.Hex + ".sig"
	sig := ArtifactImage(CosignSignatureType, "", fmt.Sprintf(`{"critical":{"image":{"docker-manifest-digest":%q}}}`, c.Index), nil)
	if c.Signature, err = write(repo.Tag(c.SignatureTag), sig, opts); err != nil {
		return c, fmt.Errorf("push signature: %w", err)
	}
	sbom := ArtifactImage("text/spdx", SBOMType, `{"spdxVersion":"SPDX-2.3"}`, &idxDesc)
	if c.SBOM, err = write(repo, sbom, opts); err != nil {
		return c, fmt.Errorf("push SBOM: %w", err)
	}
	att := ArtifactImage("application/vnd.in-toto+json", AttestationType, `{"_type":"https://in-toto.io/Statement/v1"}`, &amd64)
	if c.Attestation, err = write(repo, att, opts); err != nil {
		return c, fmt.Errorf("push attestation: %w", err)
	}
	sbomDesc, err := descriptor(sbom)
	if err != nil {
		return c, err
	}
	sbomSig := ArtifactImage("application/vnd.dev.cosign.simplesigning.v1+json", SignatureType, `{"sig":"`+strings.Repeat("a", 16)+`"}`, &sbomDesc)
	if c.SBOMSignature, err = write(repo, sbomSig, opts); err != nil {
		return c, fmt.Errorf("push SBOM signature: %w", err)
	}
	return c, nil
}

// ArtifactImage is an OCI manifest with one layer of layerType holding
// payload; configType (when set) is its config media type, the artifact type
// registries report; subject (when set) makes it a referrer.
func ArtifactImage(layerType, configType, payload string, subject *v1.Descriptor) v1.Image {
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1),
		mutate.Addendum{Layer: static.NewLayer([]byte(payload), types.MediaType(layerType)), MediaType: types.MediaType(layerType)})
	if err != nil {
		panic(err) // static layers cannot fail
	}
	if configType != "" {
		img = mutate.ConfigMediaType(img, types.MediaType(configType))
	}
	if subject != nil {
		s := *subject
		s.Platform, s.Annotations = nil, nil
		img = mutate.Subject(img, s).(v1.Image)
	}
	return img
}

func descriptor(img v1.Image) (v1.Descriptor, error) {
	d, err := img.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	sz, err := img.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	mt, err := img.MediaType()
	return v1.Descriptor{MediaType: mt, Digest: d, Size: sz}, err
}

// write pushes img to ref (a tag) or, when ref is a repository, by digest.
func write(ref any, img v1.Image, opts []remote.Option) (v1.Hash, error) {
	d, err := img.Digest()
	if err != nil {
		return d, err
	}
	var r name.Reference
	switch x := ref.(type) {
	case name.Tag:
		r = x
	case name.Repository:
		r = x.Digest(d.String())
	}
	return d, remote.Write(r, img, opts...)
}
