package verify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"math/big"
	"net/url"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
)

// TestVerifySCT builds what a CT log and Fulcio do: the log signs the
// precertificate (the leaf's TBS without the SCT extension and the issuer's
// key hash), Fulcio embeds the SCT. verifySCT accepts it, and refuses it
// from an unknown log, with a flipped signature, or on a leaf whose other
// fields changed.
func TestVerifySCT(t *testing.T) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fulcio"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	caDER, _ := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	caCert, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	u, _ := url.Parse("https://github.com/contoso/app/.github/workflows/release.yaml@refs/heads/main")
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), URIs: []*url.URL{u}, NotBefore: time.Now(), NotAfter: time.Now().Add(10 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
	pre, _ := x509.CreateCertificate(rand.Reader, tmpl, caCert, &leafKey.PublicKey, caKey)
	preCert, _ := x509.ParseCertificate(pre)

	ctKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	logDER, _ := x509.MarshalPKIXPublicKey(&ctKey.PublicKey)
	logID := sha256.Sum256(logDER)
	ts := uint64(time.Now().UnixMilli())
	issuerHash := sha256.Sum256(caCert.RawSubjectPublicKeyInfo)
	var signed cryptobyte.Builder
	signed.AddUint8(0)
	signed.AddUint8(0)
	signed.AddUint64(ts)
	signed.AddUint16(1)
	signed.AddBytes(issuerHash[:])
	signed.AddUint24LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(preCert.RawTBSCertificate) })
	signed.AddUint16(0)
	sum := sha256.Sum256(signed.BytesOrPanic())
	sig, _ := ecdsa.SignASN1(rand.Reader, ctKey, sum[:])

	leaf := func(sig []byte, serial int64) *x509.Certificate {
		var sct cryptobyte.Builder
		sct.AddUint8(0)
		sct.AddBytes(logID[:])
		sct.AddUint64(ts)
		sct.AddUint16(0)
		sct.AddUint8(4) // sha256
		sct.AddUint8(3) // ecdsa
		sct.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(sig) })
		var list cryptobyte.Builder
		list.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
			b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(sct.BytesOrPanic()) })
		})
		val, _ := asn1.Marshal(list.BytesOrPanic())
		l := *tmpl
		l.SerialNumber = big.NewInt(serial)
		l.ExtraExtensions = []pkix.Extension{{Id: oidSCTList, Value: val}}
		der, err := x509.CreateCertificate(rand.Reader, &l, caCert, &leafKey.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c
	}
	tr := &TrustedRoot{ctlogs: map[string]*logKey{hex.EncodeToString(logID[:]): {key: &ctKey.PublicKey, start: time.Now().Add(-time.Hour)}}}
	good := leaf(sig, 7)
	if err := tr.verifySCT(good, []*x509.Certificate{good, caCert}); err != nil {
		t.Fatalf("a valid SCT: %v", err)
	}
	flipped := append([]byte(nil), sig...)
	flipped[len(flipped)-1] ^= 1
	for name, c := range map[string]*x509.Certificate{"flipped signature": leaf(flipped, 7), "another serial": leaf(sig, 8)} {
		if err := tr.verifySCT(c, []*x509.Certificate{c, caCert}); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
	if err := (&TrustedRoot{ctlogs: map[string]*logKey{}}).verifySCT(good, []*x509.Certificate{good, caCert}); err == nil {
		t.Error("an unknown log: verified")
	}
	if err := tr.verifySCT(preCert, []*x509.Certificate{preCert, caCert}); err == nil {
		t.Error("no SCT: verified")
	}
}
