package verify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/url"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	sgverify "github.com/sigstore/sigstore-go/pkg/verify"
	"golang.org/x/crypto/cryptobyte"
)

// TestVerifySCT builds what a CT log and Fulcio do: the log signs the
// precertificate (the leaf's TBS without the SCT extension and the issuer's
// key hash), Fulcio embeds the SCT. verifySCT accepts it, and refuses it
// from an unknown log, with a flipped signature, or on a leaf whose other
// fields changed; sigstore-go's VerifySignedCertificateTimestamp, reading
// the same trusted root, gives each the same verdict.
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
	// One trusted_root.json with the CT log, one with another: fleetgen
	// and sigstore-go each read them (ParseTrustedRoot,
	// root.NewTrustedRootFromJSON) and must agree on every SCT.
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	withLog, otherLog := ctRoot(t, caCert, &ctKey.PublicKey), ctRoot(t, caCert, &otherKey.PublicKey)
	flipped := append([]byte(nil), sig...)
	flipped[len(flipped)-1] ^= 1
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		root []byte
		ok   bool
	}{
		{"a valid SCT", leaf(sig, 7), withLog, true},
		{"flipped signature", leaf(flipped, 7), withLog, false},
		{"another serial", leaf(sig, 8), withLog, false},
		{"an unknown log", leaf(sig, 7), otherLog, false},
		{"no SCT", preCert, withLog, false},
	} {
		tr, err := ParseTrustedRoot(tc.root)
		if err != nil {
			t.Fatal(err)
		}
		chain := []*x509.Certificate{tc.cert, caCert}
		err = tr.verifySCT(tc.cert, chain)
		if (err == nil) != tc.ok {
			t.Errorf("%s: verifySCT = %v, want verified %v", tc.name, err, tc.ok)
		}
		sgRoot, rerr := root.NewTrustedRootFromJSON(tc.root)
		if rerr != nil {
			t.Fatal(rerr)
		}
		sg := sgverify.VerifySignedCertificateTimestamp([][]*x509.Certificate{chain}, 1, sgRoot)
		if (err == nil) != (sg == nil) {
			t.Errorf("%s: DISAGREE: fleetgen %v, sigstore-go %v", tc.name, err, sg)
		}
	}
}

// ctRoot is a trusted_root.json with the CA, a CT log of key ct (valid from
// an hour ago) and, as every root must have one, a Rekor log of the same key.
func ctRoot(t *testing.T, ca *x509.Certificate, ct *ecdsa.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(ct)
	if err != nil {
		t.Fatal(err)
	}
	id := sha256.Sum256(der)
	b64 := base64.StdEncoding.EncodeToString
	log := map[string]any{
		"baseUrl": "https://ct.example", "hashAlgorithm": "SHA2_256",
		"publicKey": map[string]any{"rawBytes": b64(der), "keyDetails": "PKIX_ECDSA_P256_SHA_256",
			"validFor": map[string]string{"start": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}},
		"logId": map[string]string{"keyId": b64(id[:])},
	}
	out, err := json.Marshal(map[string]any{
		"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
		"tlogs":     []any{log}, "ctlogs": []any{log},
		"certificateAuthorities": []any{map[string]any{"uri": "https://fulcio.example",
			"certChain": map[string]any{"certificates": []any{map[string]string{"rawBytes": b64(ca.Raw)}}},
			"validFor":  map[string]string{"start": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
