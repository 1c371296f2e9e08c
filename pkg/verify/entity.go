package verify

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// entity is one signature, whatever form it came in (a Sigstore bundle, or
// cosign's legacy simple-signing layer and its annotations): what was
// signed, the signature, who signed (a certificate, or nothing for a key)
// and the transparency log's word on it.
type entity struct {
	// cert is the signer's Fulcio certificate (keyless); nil for a key.
	cert *x509.Certificate
	// Exactly one of the three contents below is set. message is a legacy
	// payload (signed as its SHA-256 digest, digest holds it); digest alone
	// is a bundle's messageSignature; env is a DSSE envelope.
	message []byte
	digest  []byte
	sig     []byte
	env     *envelope
	tlog    []tlogEntry
}

// envelope is a DSSE envelope: its signature is over PAE(type, payload).
type envelope struct {
	payloadType string
	payload     []byte
	sig         []byte
}

// pae is DSSE's pre-authentication encoding of the envelope's payload.
func (e *envelope) pae() []byte {
	return []byte(fmt.Sprintf("DSSEv1 %d %s %d %s", len(e.payloadType), e.payloadType, len(e.payload), e.payload))
}

// tlogEntry is one Rekor (v1) entry of a signature.
type tlogEntry struct {
	logIndex       int64
	logID          []byte
	kind, version  string
	integratedTime int64
	set            []byte // the inclusion promise (signed entry timestamp)
	proof          *inclusionProof
	body           []byte // the canonicalized entry body
}

type inclusionProof struct {
	logIndex, treeSize int64
	rootHash           []byte
	hashes             [][]byte
	checkpoint         string
}

// Bundle media types fleetgen reads (protobuf-specs' Bundle, v0.1 to v0.3)
// and their minor version.
var bundleMediaTypes = map[string]int{
	"application/vnd.dev.sigstore.bundle+json;version=0.1": 1,
	"application/vnd.dev.sigstore.bundle+json;version=0.2": 2,
	"application/vnd.dev.sigstore.bundle+json;version=0.3": 3,
	"application/vnd.dev.sigstore.bundle.v0.3+json":        3,
}

// int64s reads an int64 that protobuf's JSON writes as a string (or a number).
type int64s int64

func (i *int64s) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("want an integer")
	}
	*i = int64s(n)
	return nil
}

type bundleJSON struct {
	MediaType            string `json:"mediaType"`
	VerificationMaterial struct {
		PublicKey *struct {
			Hint string `json:"hint"`
		} `json:"publicKey"`
		X509CertificateChain *struct {
			Certificates []rawBytes `json:"certificates"`
		} `json:"x509CertificateChain"`
		Certificate *rawBytes   `json:"certificate"`
		TlogEntries []tlogJSONE `json:"tlogEntries"`
	} `json:"verificationMaterial"`
	MessageSignature *struct {
		MessageDigest struct {
			Algorithm string `json:"algorithm"`
			Digest    string `json:"digest"`
		} `json:"messageDigest"`
		Signature string `json:"signature"`
	} `json:"messageSignature"`
	DSSEEnvelope *struct {
		Payload     string `json:"payload"`
		PayloadType string `json:"payloadType"`
		Signatures  []struct {
			Sig string `json:"sig"`
		} `json:"signatures"`
	} `json:"dsseEnvelope"`
}

type rawBytes struct {
	RawBytes string `json:"rawBytes"`
}

type tlogJSONE struct {
	LogIndex int64s `json:"logIndex"`
	LogID    struct {
		KeyID string `json:"keyId"`
	} `json:"logId"`
	KindVersion struct {
		Kind    string `json:"kind"`
		Version string `json:"version"`
	} `json:"kindVersion"`
	IntegratedTime   int64s `json:"integratedTime"`
	InclusionPromise *struct {
		SignedEntryTimestamp string `json:"signedEntryTimestamp"`
	} `json:"inclusionPromise"`
	InclusionProof *struct {
		LogIndex   int64s   `json:"logIndex"`
		RootHash   string   `json:"rootHash"`
		TreeSize   int64s   `json:"treeSize"`
		Hashes     []string `json:"hashes"`
		Checkpoint struct {
			Envelope string `json:"envelope"`
		} `json:"checkpoint"`
	} `json:"inclusionProof"`
	CanonicalizedBody string `json:"canonicalizedBody"`
}

// maxTlogEntries bounds the entries of one signature (sigstore-go's limit).
const maxTlogEntries = 32

// parseBundle reads a Sigstore bundle (JSON). What it cannot read is an
// error that quotes nothing of it.
func parseBundle(data []byte) (*entity, error) {
	var b bundleJSON
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&b); err != nil {
		return nil, errors.New("the bundle is not JSON")
	}
	version, ok := bundleMediaTypes[b.MediaType]
	if !ok {
		return nil, errors.New("not a Sigstore bundle v0.1 to v0.3")
	}
	e := &entity{}
	vm := b.VerificationMaterial
	switch {
	case vm.Certificate != nil:
		c, err := parseCertB64(vm.Certificate.RawBytes)
		if err != nil {
			return nil, err
		}
		e.cert = c
	case vm.X509CertificateChain != nil && len(vm.X509CertificateChain.Certificates) > 0:
		// v0.3 has the signer's certificate alone (sigstore-go refuses a
		// chain there).
		if version >= 3 {
			return nil, errors.New("a v0.3 bundle with a certificate chain: want the certificate alone")
		}
		// The first is the signer's; the rest come from the trusted root
		// (sigstore-go reads a bundle's intermediates only when asked to,
		// and for v0.3 alone).
		c, err := parseCertB64(vm.X509CertificateChain.Certificates[0].RawBytes)
		if err != nil {
			return nil, err
		}
		e.cert = c
	case vm.PublicKey != nil:
	default:
		return nil, errors.New("the bundle has no certificate and no public key")
	}
	switch {
	case b.MessageSignature != nil && b.DSSEEnvelope == nil:
		ms := b.MessageSignature
		if ms.MessageDigest.Algorithm != "SHA2_256" {
			return nil, errors.New("the bundle's message digest is not SHA2_256")
		}
		var err error
		if e.digest, err = decodeBase64(ms.MessageDigest.Digest); err != nil || len(e.digest) != sha256.Size {
			return nil, errors.New("the bundle's message digest is not a SHA-256 digest")
		}
		if e.sig, err = decodeBase64(ms.Signature); err != nil || len(e.sig) == 0 {
			return nil, errors.New("the bundle's signature is not base64")
		}
	case b.DSSEEnvelope != nil && b.MessageSignature == nil:
		d := b.DSSEEnvelope
		env := &envelope{payloadType: d.PayloadType}
		var err error
		if env.payload, err = decodeBase64(d.Payload); err != nil {
			return nil, errors.New("the bundle's DSSE payload is not base64")
		}
		// DSSE allows several signatures; a Sigstore bundle's envelope
		// has one (sigstore-go refuses more, for keys as for certificates).
		if len(d.Signatures) != 1 {
			return nil, errors.New("the bundle's DSSE envelope has no signature or more than one: want one")
		}
		if env.sig, err = decodeBase64(d.Signatures[0].Sig); err != nil || len(env.sig) == 0 {
			return nil, errors.New("the bundle's DSSE signature is not base64")
		}
		e.env = env
	default:
		return nil, errors.New("the bundle holds neither a message signature nor a DSSE envelope (or both)")
	}
	if len(vm.TlogEntries) > maxTlogEntries {
		return nil, fmt.Errorf("more than %d transparency log entries", maxTlogEntries)
	}
	var promised, proven bool
	for i, t := range vm.TlogEntries {
		te, err := parseTlogEntry(t)
		if err != nil {
			return nil, fmt.Errorf("tlogEntries[%d]: %w", i, err)
		}
		// protobuf-specs requires the kind and version (matchBody holds
		// them to the body's).
		if te.kind == "" || te.version == "" {
			return nil, fmt.Errorf("tlogEntries[%d]: no kindVersion", i)
		}
		promised = promised || len(te.set) > 0
		proven = proven || te.proof != nil
		e.tlog = append(e.tlog, te)
	}
	// What each version promises its log entries carry, as sigstore-go
	// holds bundles to it: v0.1 an inclusion promise, v0.2 and later an
	// inclusion proof.
	switch {
	case len(e.tlog) == 0:
	case version == 1 && !promised:
		return nil, errors.New("a v0.1 bundle whose log entries have no inclusion promise")
	case version >= 2 && !proven:
		return nil, errors.New("a v0.2 or later bundle whose log entries have no inclusion proof")
	}
	return e, nil
}

func parseTlogEntry(t tlogJSONE) (tlogEntry, error) {
	te := tlogEntry{logIndex: int64(t.LogIndex), kind: t.KindVersion.Kind, version: t.KindVersion.Version, integratedTime: int64(t.IntegratedTime)}
	var err error
	if te.logID, err = decodeBase64(t.LogID.KeyID); err != nil || len(te.logID) == 0 {
		return te, errors.New("logId is not base64")
	}
	if te.body, err = decodeBase64(t.CanonicalizedBody); err != nil || len(te.body) == 0 {
		return te, errors.New("canonicalizedBody is not base64")
	}
	if t.InclusionPromise != nil {
		if te.set, err = decodeBase64(t.InclusionPromise.SignedEntryTimestamp); err != nil {
			return te, errors.New("signedEntryTimestamp is not base64")
		}
	}
	if p := t.InclusionProof; p != nil {
		ip := &inclusionProof{logIndex: int64(p.LogIndex), treeSize: int64(p.TreeSize), checkpoint: p.Checkpoint.Envelope}
		if ip.rootHash, err = decodeBase64(p.RootHash); err != nil {
			return te, errors.New("inclusionProof.rootHash is not base64")
		}
		for _, h := range p.Hashes {
			b, err := decodeBase64(h)
			if err != nil {
				return te, errors.New("inclusionProof.hashes is not base64")
			}
			ip.hashes = append(ip.hashes, b)
		}
		te.proof = ip
	}
	return te, nil
}

// Annotations of cosign's legacy signature layers (sha256-<hex>.sig).
const (
	annotationSignature   = "dev.cosignproject.cosign/signature"
	annotationCertificate = "dev.sigstore.cosign/certificate"
	annotationBundle      = "dev.sigstore.cosign/bundle"
)

// rekorBundleJSON is cosign's legacy Rekor bundle annotation.
type rekorBundleJSON struct {
	SignedEntryTimestamp string `json:"SignedEntryTimestamp"`
	Payload              struct {
		Body           string `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogIndex       int64  `json:"logIndex"`
		LogID          string `json:"logID"`
	} `json:"Payload"`
}

// parseLegacy reads one layer of a cosign sha256-<hex>.sig manifest: the
// simple-signing payload and its annotations. A certificate and a Rekor
// bundle, when present, make it the v0.1 bundle they amount to: the
// certificate, a message signature over the payload's SHA-256 and a Rekor
// entry with its inclusion promise.
func parseLegacy(payload []byte, annotations map[string]string) (*entity, error) {
	sig, err := decodeBase64(annotations[annotationSignature])
	if err != nil || len(sig) == 0 {
		return nil, errors.New("the signature layer has no " + annotationSignature + " annotation")
	}
	sum := sha256.Sum256(payload)
	e := &entity{message: payload, digest: sum[:], sig: sig}
	if pemCert := annotations[annotationCertificate]; pemCert != "" {
		block, _ := pem.Decode([]byte(pemCert))
		if block == nil || block.Type != "CERTIFICATE" {
			return nil, errors.New("the " + annotationCertificate + " annotation is not a PEM certificate")
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, errors.New("the " + annotationCertificate + " annotation is not an X.509 certificate")
		}
		e.cert = c
	}
	if rb := annotations[annotationBundle]; rb != "" {
		var b rekorBundleJSON
		if err := json.Unmarshal([]byte(rb), &b); err != nil {
			return nil, errors.New("the " + annotationBundle + " annotation is not JSON")
		}
		te := tlogEntry{logIndex: b.Payload.LogIndex, integratedTime: b.Payload.IntegratedTime}
		if te.set, err = decodeBase64(b.SignedEntryTimestamp); err != nil || len(te.set) == 0 {
			return nil, errors.New("the " + annotationBundle + " annotation has no signed entry timestamp")
		}
		if te.body, err = decodeBase64(b.Payload.Body); err != nil || len(te.body) == 0 {
			return nil, errors.New("the " + annotationBundle + " annotation has no body")
		}
		if te.logID, err = hex.DecodeString(b.Payload.LogID); err != nil || len(te.logID) == 0 {
			return nil, errors.New("the " + annotationBundle + " annotation's logID is not hex")
		}
		e.tlog = append(e.tlog, te)
	}
	return e, nil
}

func parseCertB64(s string) (*x509.Certificate, error) {
	der, err := decodeBase64(s)
	if err != nil {
		return nil, errors.New("the bundle's certificate is not base64")
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, errors.New("the bundle's certificate is not an X.509 certificate")
	}
	return c, nil
}

// decodeBase64 accepts standard and URL-safe base64, padded or not, as
// protobuf's JSON does.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}
