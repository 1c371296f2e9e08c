package verify

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// oidSCTList is the certificate extension holding embedded SCTs (RFC 6962
// §3.3).
var oidSCTList = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 2}

// verifySCT checks that one SCT embedded in cert verifies with a CT log of
// the root, as the precertificate the log signed (RFC 6962 §3.2): the
// certificate's TBS without the SCT extension, and the issuer's key hash.
// chain is cert's verified chain (leaf first).
func (tr *TrustedRoot) verifySCT(cert *x509.Certificate, chain []*x509.Certificate) error {
	if len(chain) < 2 {
		return errors.New("the certificate has no issuer to check its SCT against")
	}
	var ext []byte
	for _, e := range cert.Extensions {
		if e.Id.Equal(oidSCTList) {
			ext = e.Value
		}
	}
	if ext == nil {
		return errors.New("the certificate has no SCT: it was not logged in a certificate transparency log")
	}
	var list []byte
	if rest, err := asn1.Unmarshal(ext, &list); err != nil || len(rest) > 0 {
		return errors.New("the certificate's SCT list is malformed")
	}
	tbs, err := tbsWithoutSCT(cert.RawTBSCertificate)
	if err != nil {
		return err
	}
	issuerKeyHash := sha256.Sum256(chain[1].RawSubjectPublicKeyInfo)
	s := cryptobyte.String(list)
	var scts cryptobyte.String
	if !s.ReadUint16LengthPrefixed(&scts) || !s.Empty() {
		return errors.New("the certificate's SCT list is malformed")
	}
	for !scts.Empty() {
		var sct cryptobyte.String
		if !scts.ReadUint16LengthPrefixed(&sct) {
			return errors.New("the certificate's SCT list is malformed")
		}
		var (
			version         uint8
			logID           []byte
			ts              uint64
			exts, sig       cryptobyte.String
			hashAlg, sigAlg uint8
		)
		if !sct.ReadUint8(&version) || !sct.ReadBytes(&logID, 32) || !sct.ReadUint64(&ts) ||
			!sct.ReadUint16LengthPrefixed(&exts) || !sct.ReadUint8(&hashAlg) || !sct.ReadUint8(&sigAlg) ||
			!sct.ReadUint16LengthPrefixed(&sig) || !sct.Empty() || version != 0 {
			continue
		}
		log, ok := tr.ctlogs[hex.EncodeToString(logID)]
		if !ok || !log.validAt(time.UnixMilli(int64(ts))) {
			continue
		}
		var b cryptobyte.Builder
		b.AddUint8(0) // v1
		b.AddUint8(0) // certificate_timestamp
		b.AddUint64(ts)
		b.AddUint16(1) // precert_entry
		b.AddBytes(issuerKeyHash[:])
		b.AddUint24LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(tbs) })
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(exts) })
		signed, err := b.Bytes()
		if err != nil {
			continue
		}
		sum := sha256.Sum256(signed)
		switch k := log.key.(type) {
		case *ecdsa.PublicKey:
			if ecdsa.VerifyASN1(k, sum[:], sig) {
				return nil
			}
		case *rsa.PublicKey:
			if rsa.VerifyPKCS1v15(k, 5 /* crypto.SHA256 */, sum[:], sig) == nil {
				return nil
			}
		}
	}
	return errors.New("no SCT of the certificate verifies with a CT log of the trusted root")
}

// tbsWithoutSCT re-encodes a TBSCertificate without its SCT list extension:
// what the CT log signed (the precertificate, RFC 6962 §3.2).
func tbsWithoutSCT(raw []byte) ([]byte, error) {
	bad := errors.New("the certificate's TBS does not parse")
	in := cryptobyte.String(raw)
	var tbs cryptobyte.String
	if !in.ReadASN1(&tbs, cbasn1.SEQUENCE) || !in.Empty() {
		return nil, bad
	}
	var b cryptobyte.Builder
	var failed bool
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		for !tbs.Empty() {
			var el cryptobyte.String
			var tag cbasn1.Tag
			if !tbs.ReadAnyASN1Element(&el, &tag) {
				failed = true
				return
			}
			if tag != cbasn1.Tag(3).Constructed().ContextSpecific() {
				b.AddBytes(el)
				continue
			}
			// [3] EXPLICIT Extensions: SEQUENCE OF Extension.
			var wrap, exts cryptobyte.String
			if !el.ReadASN1(&wrap, tag) || !wrap.ReadASN1(&exts, cbasn1.SEQUENCE) {
				failed = true
				return
			}
			b.AddASN1(tag, func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					for !exts.Empty() {
						var ext, body cryptobyte.String
						if !exts.ReadASN1Element(&ext, cbasn1.SEQUENCE) {
							failed = true
							return
						}
						body = ext
						var inner cryptobyte.String
						var oid asn1.ObjectIdentifier
						if !body.ReadASN1(&inner, cbasn1.SEQUENCE) || !inner.ReadASN1ObjectIdentifier(&oid) {
							failed = true
							return
						}
						if oid.Equal(oidSCTList) {
							continue
						}
						b.AddBytes(ext)
					}
				})
			})
		}
	})
	out, err := b.Bytes()
	if err != nil || failed {
		return nil, bad
	}
	return out, nil
}
