// Command sign signs container images as cosign v3 does, offline: a
// Sigstore bundle (v0.3) holding a DSSE envelope over cosign's in-toto
// statement for the image's digest, signed with a key (no Fulcio
// certificate, no Rekor entry: cosign sign --key --tlog-upload=false),
// attached as an OCI referrer of the image (with the referrers tag index
// on registries without the referrers API). fleetgen's spec.verify with
// cosign.keys accepts it (sigstore-go verifies it). It is for
// docs/try-locally.md and the tests that run it: sigstore's own libraries
// (go-securesystemslib's DSSE, protobuf-specs' bundle) and
// go-containerregistry, which fleetgen links already, so it builds in
// seconds after fleetgen, where cosign takes minutes.
//
//	sign generate-key-pair               # cosign.key (PKCS#8 PEM, mode 0600) and cosign.pub here
//	sign -key cosign.key IMAGE            # sign IMAGE (a tag or a digest)
//
// Plain HTTP is used for registries on loopback (127.0.0.1, localhost)
// only, as go-containerregistry does.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	"google.golang.org/protobuf/encoding/protojson"
)

// bundleType is the media type cosign v3 gives a bundle referrer (its
// artifact type and its one layer).
const bundleType = "application/vnd.dev.sigstore.bundle.v0.3+json"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sign:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "generate-key-pair" {
		return generate(stdout)
	}
	fs := flag.NewFlagSet("sign", flag.ContinueOnError)
	keyFile := fs.String("key", "cosign.key", "the private key (PKCS#8 PEM) that sign generate-key-pair wrote")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: sign generate-key-pair | sign [-key cosign.key] IMAGE")
	}
	key, err := loadKey(*keyFile)
	if err != nil {
		return err
	}
	d, err := signImage(ctx, fs.Arg(0), key)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "signed %s: signature %s\n", fs.Arg(0), d)
	return nil
}

// generate writes cosign.key and cosign.pub: a new ECDSA P-256 key pair, as
// cosign generate-key-pair does (the private key unencrypted, mode 0600).
func generate(stdout io.Writer) error {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	priv, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		typ  string
		der  []byte
		mode os.FileMode
	}{{"cosign.key", "PRIVATE KEY", priv, 0o600}, {"cosign.pub", "PUBLIC KEY", pub, 0o644}} {
		w, err := os.OpenFile(f.name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if err != nil {
			return err
		}
		err = pem.Encode(w, &pem.Block{Type: f.typ, Bytes: f.der})
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, "wrote cosign.key and cosign.pub")
	return nil
}

func loadKey(file string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: want a PKCS#8 PEM private key (sign generate-key-pair)", file)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("%s: want an ECDSA P-256 key", file)
	}
	return ec, nil
}

// signImage signs ref's digest and attaches the bundle as a referrer; it
// returns the referrer's digest.
func signImage(ctx context.Context, ref string, key *ecdsa.PrivateKey) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, err
	}
	opts := []remote.Option{remote.WithContext(ctx)}
	desc, err := remote.Head(r, opts...)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("%s: %w", ref, err)
	}
	js, err := bundle(ctx, desc.Digest, key)
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1),
		mutate.Addendum{Layer: static.NewLayer(js, bundleType), MediaType: bundleType})
	if err != nil {
		return v1.Hash{}, err
	}
	img = mutate.ConfigMediaType(img, bundleType)
	img = mutate.Subject(img, v1.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size}).(v1.Image)
	sd, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	return sd, remote.Write(r.Context().Digest(sd.String()), img, opts...)
}

// bundle is the Sigstore bundle (v0.3, JSON) cosign v3 attaches for digest
// d: a DSSE envelope (go-securesystemslib's) over cosign's in-toto statement,
// and the key's hint as its verification material, as sigstore-go's
// sign.Bundle writes for a key without a certificate or a log entry.
func bundle(ctx context.Context, d v1.Hash, key *ecdsa.PrivateKey) ([]byte, error) {
	statement := fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{%q:%q}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`, d.Algorithm, d.Hex)
	es, err := dsse.NewEnvelopeSigner(signer{key})
	if err != nil {
		return nil, err
	}
	env, err := es.SignPayload(ctx, "application/vnd.in-toto+json", []byte(statement))
	if err != nil {
		return nil, err
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return nil, err
	}
	de := &protodsse.Envelope{Payload: payload, PayloadType: env.PayloadType}
	for _, s := range env.Signatures {
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil {
			return nil, err
		}
		de.Signatures = append(de.Signatures, &protodsse.Signature{Sig: sig})
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	hint := sha256.Sum256(der)
	return protojson.Marshal(&protobundle.Bundle{
		MediaType: bundleType,
		VerificationMaterial: &protobundle.VerificationMaterial{Content: &protobundle.VerificationMaterial_PublicKey{
			PublicKey: &protocommon.PublicKeyIdentifier{Hint: base64.StdEncoding.EncodeToString(hint[:])}}},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: de},
	})
}

// signer signs DSSE's pre-authentication encoding with an ECDSA P-256 key:
// SHA-256, ASN.1 signature (ECDSA_P256_SHA_256, what cosign's keys do).
type signer struct{ k *ecdsa.PrivateKey }

func (s signer) Sign(_ context.Context, data []byte) ([]byte, error) {
	h := sha256.Sum256(data)
	return ecdsa.SignASN1(rand.Reader, s.k, h[:])
}

// KeyID is empty: sigstore-go's bundles leave it out.
func (s signer) KeyID() (string, error) { return "", nil }
