package testenv

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/digitorus/timestamp"
)

// A test PKI for Notary Project signatures: a CA that issues code-signing
// certificates, notation's configuration to sign with one, and an RFC 3161
// timestamp authority on loopback.

// CA is a certificate authority of one self-signed root.
type CA struct {
	Cert *x509.Certificate
	key  crypto.Signer
	// PEM is the root certificate, what a trust store holds.
	PEM []byte
}

// NewCA makes a CA (ECDSA P-256) named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{Country: []string{"US"}, Province: []string{"WA"}, Organization: []string{name}, CommonName: name + " root"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: c, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// issue signs a leaf certificate for subject with the given extended key
// usage, valid until notAfter, and returns it with its key.
func (ca *CA) issue(t testing.TB, subject pkix.Name, usage x509.ExtKeyUsage, notAfter time.Time) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               subject,
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{usage},
		BasicConstraintsValid: true,
	}
	if usage == x509.ExtKeyUsageTimeStamping {
		// RFC 3161: the timestamping usage alone, critical (Go marks it
		// critical only through ExtraExtensions).
		oid := asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 8}
		v, err := asn1.Marshal([]asn1.ObjectIdentifier{oid})
		if err != nil {
			t.Fatal(err)
		}
		tmpl.ExtKeyUsage = nil
		tmpl.ExtraExtensions = []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Critical: true, Value: v}}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

// NotationSigner is notation's configuration (XDG_CONFIG_HOME) with one
// default signing key: a code-signing certificate the CA issued.
type NotationSigner struct {
	// Config is the folder to give notation as XDG_CONFIG_HOME.
	Config string
}

// NotationKey writes notation's signingkeys.json, a key and a certificate
// chain (the leaf, then the CA's root) under a new folder: a signing key of
// subject "C=US, ST=WA, O=<org>, CN=<cn>" valid until notAfter.
func (ca *CA) NotationKey(t testing.TB, org, cn string, notAfter time.Time) *NotationSigner {
	t.Helper()
	dir := t.TempDir()
	der, key := ca.issue(t, pkix.Name{Country: []string{"US"}, Province: []string{"WA"}, Organization: []string{org}, CommonName: cn}, x509.ExtKeyUsageCodeSigning, notAfter)
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(dir, "notation", "localkeys")
	if err := os.MkdirAll(keys, 0o700); err != nil {
		t.Fatal(err)
	}
	keyPath, certPath := filepath.Join(keys, "release.key"), filepath.Join(keys, "release.crt")
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca.PEM...)
	cfg, err := json.Marshal(map[string]any{"default": "release", "keys": []any{map[string]string{"name": "release", "keyPath": keyPath, "certPath": certPath}}})
	if err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string][]byte{
		keyPath:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}),
		certPath: chain,
		filepath.Join(dir, "notation", "signingkeys.json"): cfg,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return &NotationSigner{Config: dir}
}

// TSA is an RFC 3161 timestamp authority on loopback (plain HTTP), whose
// root is Root.
type TSA struct {
	URL  string
	Root *CA
}

// NewTSA starts a timestamp authority; it stops when the test ends.
func NewTSA(t testing.TB) *TSA {
	t.Helper()
	root := NewCA(t, "Timestamps")
	der, key := root.issue(t, pkix.Name{Organization: []string{"Timestamps"}, CommonName: "tsa"}, x509.ExtKeyUsageTimeStamping, time.Now().Add(24*time.Hour))
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, err := timestamp.ParseRequest(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ts := timestamp.Timestamp{
			HashAlgorithm:     req.HashAlgorithm,
			HashedMessage:     req.HashedMessage,
			Time:              time.Now(),
			Nonce:             req.Nonce,
			Policy:            asn1.ObjectIdentifier{1, 2, 3, 4, 1},
			AddTSACertificate: req.Certificates,
			Certificates:      []*x509.Certificate{root.Cert},
		}
		resp, err := ts.CreateResponseWithOpts(cert, key, crypto.SHA256)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/timestamp-reply")
		w.Write(resp)
	}))
	t.Cleanup(s.Close)
	return &TSA{URL: s.URL, Root: root}
}
