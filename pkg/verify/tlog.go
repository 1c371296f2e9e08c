package verify

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// verifyTlog checks e's Rekor entries against the root's logs and returns
// the times they prove (one per log), as sigstore-go's VerifyTlogEntry does
// with a threshold of one: an entry of an unknown log, or whose inclusion
// promise does not verify, is skipped; one whose proof or content does not
// match is an error. Only Rekor v1 entries (hashedrekord and dsse 0.0.1)
// with an inclusion promise prove a time.
func (tr *TrustedRoot) verifyTlog(e *entity) ([]time.Time, error) {
	if len(e.tlog) == 0 {
		return nil, errors.New("no transparency log entry: a keyless signature needs its Rekor entry (signed with --tlog-upload=false?)")
	}
	seen := map[string]bool{}
	var times []time.Time
	for _, te := range e.tlog {
		id := hex.EncodeToString(te.logID)
		key := id + "/" + strconv.FormatInt(te.logIndex, 10)
		if seen[key] {
			return nil, errors.New("duplicate transparency log entries")
		}
		seen[key] = true
		log, ok := tr.tlogs[id]
		if !ok || len(te.set) == 0 {
			continue
		}
		it := time.Unix(te.integratedTime, 0)
		if !log.validAt(it) || te.integratedTime <= 0 {
			continue
		}
		if err := verifySET(log, te); err != nil {
			continue
		}
		if te.proof != nil {
			if err := verifyInclusion(log, te); err != nil {
				return nil, err
			}
		}
		if err := matchBody(te, e); err != nil {
			return nil, err
		}
		if it.Before(e.cert.NotBefore) || it.After(e.cert.NotAfter) {
			return nil, fmt.Errorf("the certificate was not valid when Rekor logged the signature (%s, certificate valid %s to %s): an expired certificate",
				it.UTC().Format(time.RFC3339), e.cert.NotBefore.UTC().Format(time.RFC3339), e.cert.NotAfter.UTC().Format(time.RFC3339))
		}
		times = append(times, it)
	}
	if len(times) == 0 {
		return nil, errors.New("no transparency log entry verifies with the trusted root's Rekor keys")
	}
	return times, nil
}

// verifySET checks the inclusion promise: the log's signature over the
// canonical JSON of the entry (RFC 8785; these four fields are strings and
// integers, which Go's encoder writes canonically in this key order).
func verifySET(log *logKey, te tlogEntry) error {
	payload := struct {
		Body           string `json:"body"`
		IntegratedTime int64  `json:"integratedTime"`
		LogID          string `json:"logID"`
		LogIndex       int64  `json:"logIndex"`
	}{base64.StdEncoding.EncodeToString(te.body), te.integratedTime, hex.EncodeToString(te.logID), te.logIndex}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(payload); err != nil {
		return err
	}
	msg := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	k, ok := log.key.(*ecdsa.PublicKey)
	if !ok {
		return errors.New("the log's key is not ECDSA")
	}
	sum := sha256.Sum256(msg)
	if !ecdsa.VerifyASN1(k, sum[:], te.set) {
		return errors.New("the signed entry timestamp does not verify")
	}
	return nil
}

// verifyInclusion checks a Rekor v1 inclusion proof: the entry's leaf hash
// is in the tree the checkpoint names, and the log signed the checkpoint.
func verifyInclusion(log *logKey, te tlogEntry) error {
	p := te.proof
	if p.logIndex < 0 || p.treeSize <= 0 || p.logIndex >= p.treeSize {
		return errors.New("the inclusion proof's index and tree size disagree")
	}
	leaf := rfc6962.DefaultHasher.HashLeaf(te.body)
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(p.logIndex), uint64(p.treeSize), leaf, p.hashes, p.rootHash); err != nil {
		return errors.New("the inclusion proof does not verify")
	}
	// As Rekor's client does: the signed root hash must be the proof's (it
	// commits to the tree's size as well).
	_, root, err := verifyCheckpoint(log.key, p.checkpoint)
	if err != nil {
		return err
	}
	if !bytes.Equal(root, p.rootHash) {
		return errors.New("the checkpoint names another tree than the inclusion proof")
	}
	return nil
}

// verifyCheckpoint checks a signed note (origin, tree size, root hash,
// optional lines, a blank line, signature lines "— NAME base64(hint||sig)")
// with the log's key and returns the tree size and root hash. A signature
// counts when its 4-byte hint is the key's (SHA-256 of its DER, Rekor v1's
// scheme) and it verifies over the note's text.
func verifyCheckpoint(key crypto.PublicKey, note string) (uint64, []byte, error) {
	bad := errors.New("the checkpoint is malformed")
	i := strings.LastIndex(note, "\n\n")
	if i < 0 {
		return 0, nil, bad
	}
	text, sigs := note[:i+1], note[i+2:]
	lines := strings.Split(text, "\n")
	if len(lines) < 4 {
		return 0, nil, bad
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil {
		return 0, nil, bad
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil {
		return 0, nil, bad
	}
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return 0, nil, bad
	}
	h := sha256.Sum256(der)
	hint := binary.BigEndian.Uint32(h[:4])
	for _, line := range strings.Split(strings.TrimSuffix(sigs, "\n"), "\n") {
		f := strings.Fields(strings.TrimPrefix(line, "\u2014 "))
		if !strings.HasPrefix(line, "\u2014 ") || len(f) != 2 {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(f[1])
		if err != nil || len(b) < 5 || binary.BigEndian.Uint32(b[:4]) != hint {
			continue
		}
		if verifyMessage(key, []byte(text), b[4:]) == nil {
			return size, root, nil
		}
	}
	return 0, nil, errors.New("the checkpoint's signature does not verify with the log's key")
}

// rekorBody is a Rekor v1 entry body: hashedrekord or dsse, version 0.0.1.
type rekorBody struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		// hashedrekord
		Data *struct {
			Hash struct {
				Algorithm string `json:"algorithm"`
				Value     string `json:"value"`
			} `json:"hash"`
		} `json:"data"`
		Signature *struct {
			Content   string `json:"content"`
			PublicKey struct {
				Content string `json:"content"`
			} `json:"publicKey"`
		} `json:"signature"`
		// dsse
		PayloadHash *struct {
			Algorithm string `json:"algorithm"`
			Value     string `json:"value"`
		} `json:"payloadHash"`
		Signatures []struct {
			Signature string `json:"signature"`
			Verifier  string `json:"verifier"`
		} `json:"signatures"`
	} `json:"spec"`
}

// matchBody checks that the log entry is e's: the same signature, the same
// certificate, the same digest (hashedrekord) or payload hash (dsse).
func matchBody(te tlogEntry, e *entity) error {
	var b rekorBody
	if err := json.Unmarshal(te.body, &b); err != nil {
		return errors.New("the transparency log entry's body does not parse")
	}
	if (te.kind != "" && te.kind != b.Kind) || (te.version != "" && te.version != b.APIVersion) {
		return errors.New("the transparency log entry's kind or version disagrees with its body")
	}
	mismatch := errors.New("the transparency log entry is not this signature's (another signature, certificate or digest)")
	switch {
	case b.Kind == "hashedrekord" && b.APIVersion == "0.0.1":
		s, d := b.Spec.Signature, b.Spec.Data
		if s == nil || d == nil || e.env != nil {
			return mismatch
		}
		sig, err := base64.StdEncoding.DecodeString(s.Content)
		if err != nil || !bytes.Equal(sig, e.sig) || !sameCert(s.PublicKey.Content, e) {
			return mismatch
		}
		if d.Hash.Algorithm != "sha256" || d.Hash.Value != hex.EncodeToString(e.digest) {
			return mismatch
		}
		return nil
	case b.Kind == "dsse" && b.APIVersion == "0.0.1":
		if e.env == nil || b.Spec.PayloadHash == nil || len(b.Spec.Signatures) == 0 {
			return mismatch
		}
		sum := sha256.Sum256(e.env.payload)
		if b.Spec.PayloadHash.Algorithm != "sha256" || b.Spec.PayloadHash.Value != hex.EncodeToString(sum[:]) {
			return mismatch
		}
		sig, err := base64.StdEncoding.DecodeString(b.Spec.Signatures[0].Signature)
		if err != nil || !bytes.Equal(sig, e.env.sig) || !sameCert(b.Spec.Signatures[0].Verifier, e) {
			return mismatch
		}
		return nil
	}
	return errors.New("the transparency log entry is neither hashedrekord nor dsse 0.0.1")
}

// sameCert reports whether b64pem (base64 of a PEM certificate, as Rekor
// bodies hold it) is e's certificate.
func sameCert(b64pem string, e *entity) bool {
	raw, err := base64.StdEncoding.DecodeString(b64pem)
	if err != nil {
		return false
	}
	block, _ := pem.Decode(raw)
	return block != nil && e.cert != nil && bytes.Equal(block.Bytes, e.cert.Raw)
}

// verifyChain checks that cert chains to a Fulcio CA of the root, for code
// signing, at each of times (and that the CA was in service then); it
// returns the chain (leaf first) of the last check.
func (tr *TrustedRoot) verifyChain(cert *x509.Certificate, times []time.Time) ([]*x509.Certificate, error) {
	cert = withCriticalSANHandled(cert)
	var chain []*x509.Certificate
	for _, t := range times {
		var ok bool
		for _, ca := range tr.cas {
			if t.Before(ca.start) || (!ca.end.IsZero() && t.After(ca.end)) {
				continue
			}
			roots, inter := x509.NewCertPool(), x509.NewCertPool()
			roots.AddCert(ca.root)
			for _, c := range ca.intermediates {
				inter.AddCert(c)
			}
			chains, err := cert.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: t, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}})
			if err == nil && len(chains) > 0 {
				chain, ok = chains[0], true
				break
			}
		}
		if !ok {
			return nil, fmt.Errorf("the certificate does not chain to a Fulcio CA of the trusted root at %s (another CA, or expired)", t.UTC().Format(time.RFC3339))
		}
	}
	return chain, nil
}

// oidSAN is the subject alternative name extension.
var oidSAN = asn1.ObjectIdentifier{2, 5, 29, 17}

// withCriticalSANHandled returns cert, or a copy of it for chain
// verification when its SAN extension is critical and holds no name Go
// reads: Fulcio's certificates for a username identity carry nothing but
// an otherName SAN, critical as RFC 5280 wants it when the subject is
// empty, which Go's verifier would refuse as unhandled (sigstore-go drops
// it from the list the same way; certIdentity reads the name).
func withCriticalSANHandled(cert *x509.Certificate) *x509.Certificate {
	var rest []asn1.ObjectIdentifier
	for _, id := range cert.UnhandledCriticalExtensions {
		if !id.Equal(oidSAN) {
			rest = append(rest, id)
		}
	}
	if len(rest) == len(cert.UnhandledCriticalExtensions) {
		return cert
	}
	c := *cert
	c.UnhandledCriticalExtensions = rest
	return &c
}
