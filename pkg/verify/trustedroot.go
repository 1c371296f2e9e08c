package verify

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// TrustedRoot is the offline trust material keyless signatures are checked
// against: Sigstore's trusted_root.json (the protobuf-specs TrustedRoot in
// its JSON form), as `cosign verify --trusted-root` reads it. Nothing is
// fetched: no TUF, no Rekor or Fulcio request.
type TrustedRoot struct {
	// tlogs and ctlogs are keyed by log ID in hex (the SHA-256 of the log's
	// DER public key, as Rekor and CT name their logs).
	tlogs, ctlogs map[string]*logKey
	cas           []*certAuthority
	// digest is the SHA-256 of the file's bytes, for the policy's digest.
	digest string
}

// logKey is one transparency or CT log's key and when it was valid.
type logKey struct {
	baseURL    string
	key        crypto.PublicKey
	start, end time.Time // end zero: still valid
}

// validAt reports whether the log's key was in use at t.
func (l *logKey) validAt(t time.Time) bool {
	return !t.Before(l.start) && (l.end.IsZero() || !t.After(l.end))
}

// certAuthority is one Fulcio CA: its root, intermediates and the period in
// which it issued certificates.
type certAuthority struct {
	uri           string
	root          *x509.Certificate
	intermediates []*x509.Certificate
	start, end    time.Time
}

// publicGood is Sigstore's public-good trusted_root.json (see SOURCES.md).
//
//go:embed trusted_root.json
var publicGood []byte

var (
	publicGoodOnce sync.Once
	publicGoodRoot *TrustedRoot
	publicGoodErr  error
)

// PublicGood returns the trusted root built into fleetgen: Sigstore's
// public-good instance (Fulcio, Rekor, CT log), as of the snapshot
// SOURCES.md names.
func PublicGood() (*TrustedRoot, error) {
	publicGoodOnce.Do(func() { publicGoodRoot, publicGoodErr = ParseTrustedRoot(publicGood) })
	return publicGoodRoot, publicGoodErr
}

// trustedRootJSON is the JSON form of dev.sigstore.trustroot.v1.TrustedRoot.
type trustedRootJSON struct {
	MediaType              string          `json:"mediaType"`
	Tlogs                  []tlogJSON      `json:"tlogs"`
	CertificateAuthorities []authorityJSON `json:"certificateAuthorities"`
	Ctlogs                 []tlogJSON      `json:"ctlogs"`
	TimestampAuthorities   []authorityJSON `json:"timestampAuthorities"`
}

type tlogJSON struct {
	BaseURL       string `json:"baseUrl"`
	HashAlgorithm string `json:"hashAlgorithm"`
	PublicKey     struct {
		RawBytes   string     `json:"rawBytes"`
		KeyDetails string     `json:"keyDetails"`
		ValidFor   *validJSON `json:"validFor"`
	} `json:"publicKey"`
	LogID struct {
		KeyID string `json:"keyId"`
	} `json:"logId"`
}

type authorityJSON struct {
	URI       string `json:"uri"`
	CertChain struct {
		Certificates []struct {
			RawBytes string `json:"rawBytes"`
		} `json:"certificates"`
	} `json:"certChain"`
	ValidFor *validJSON `json:"validFor"`
}

type validJSON struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// maxTrustedRoot bounds a trusted root file (the public-good one is 7 KB).
const maxTrustedRoot = 1 << 20

// ParseTrustedRoot reads a trusted_root.json. Every log key and certificate
// must parse; a log's ID must be the SHA-256 of its key. Errors say what is
// wrong and where in the file's structure, never quoting the content.
func ParseTrustedRoot(data []byte) (*TrustedRoot, error) {
	if len(data) > maxTrustedRoot {
		return nil, fmt.Errorf("larger than %d bytes", maxTrustedRoot)
	}
	var raw trustedRootJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, errors.New("not a trusted_root.json: the JSON does not parse")
	}
	switch raw.MediaType {
	case "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
		"application/vnd.dev.sigstore.trustedroot.v0.2+json":
	default:
		return nil, errors.New("not a trusted_root.json: want mediaType application/vnd.dev.sigstore.trustedroot+json;version=0.1 (or .v0.2+json)")
	}
	sum := sha256.Sum256(data)
	tr := &TrustedRoot{tlogs: map[string]*logKey{}, ctlogs: map[string]*logKey{}, digest: "sha256:" + hex.EncodeToString(sum[:])}
	for _, set := range []struct {
		what string
		logs []tlogJSON
		dst  map[string]*logKey
	}{{"tlogs", raw.Tlogs, tr.tlogs}, {"ctlogs", raw.Ctlogs, tr.ctlogs}} {
		what, dst := set.what, set.dst
		for i, l := range set.logs {
			k, id, err := parseLog(l)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", what, i, err)
			}
			dst[id] = k
		}
	}
	for i, a := range raw.CertificateAuthorities {
		ca, err := parseAuthority(a)
		if err != nil {
			return nil, fmt.Errorf("certificateAuthorities[%d]: %w", i, err)
		}
		tr.cas = append(tr.cas, ca)
	}
	if len(tr.cas) == 0 || len(tr.tlogs) == 0 {
		return nil, errors.New("no certificate authority or no transparency log: want the Fulcio and Rekor entries keyless signatures are checked against")
	}
	return tr, nil
}

func parseLog(l tlogJSON) (*logKey, string, error) {
	der, err := decodeBase64(l.PublicKey.RawBytes)
	if err != nil || len(der) == 0 {
		return nil, "", errors.New("publicKey.rawBytes: want base64 DER")
	}
	key, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, "", errors.New("publicKey.rawBytes: not a PKIX public key")
	}
	id, err := decodeBase64(l.LogID.KeyID)
	if err != nil || len(id) == 0 {
		return nil, "", errors.New("logId.keyId: want base64")
	}
	k := &logKey{baseURL: l.BaseURL, key: key}
	if k.start, k.end, err = parseValidity(l.PublicKey.ValidFor); err != nil {
		return nil, "", fmt.Errorf("publicKey.validFor: %w", err)
	}
	if k.start.IsZero() {
		return nil, "", errors.New("publicKey.validFor.start: want the time the key came into use")
	}
	return k, hex.EncodeToString(id), nil
}

func parseAuthority(a authorityJSON) (*certAuthority, error) {
	var certs []*x509.Certificate
	for i, c := range a.CertChain.Certificates {
		der, err := decodeBase64(c.RawBytes)
		if err != nil {
			return nil, fmt.Errorf("certChain.certificates[%d].rawBytes: want base64 DER", i)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("certChain.certificates[%d]: not an X.509 certificate", i)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, errors.New("certChain: no certificate")
	}
	// The chain lists intermediates first and the root last.
	ca := &certAuthority{uri: a.URI, root: certs[len(certs)-1], intermediates: certs[:len(certs)-1]}
	var err error
	if ca.start, ca.end, err = parseValidity(a.ValidFor); err != nil {
		return nil, fmt.Errorf("validFor: %w", err)
	}
	return ca, nil
}

func parseValidity(v *validJSON) (start, end time.Time, err error) {
	if v == nil {
		return
	}
	if v.Start != "" {
		if start, err = time.Parse(time.RFC3339Nano, v.Start); err != nil {
			return start, end, errors.New("start: want an RFC 3339 time")
		}
	}
	if v.End != "" {
		if end, err = time.Parse(time.RFC3339Nano, v.End); err != nil {
			return start, end, errors.New("end: want an RFC 3339 time")
		}
	}
	return start, end, nil
}
