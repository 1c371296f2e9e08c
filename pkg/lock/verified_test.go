package lock

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVerifiedRoundTrip: a verified entry is written, read back the same
// and marshals to the same bytes; a lock without one names no such field,
// and Clone copies it.
func TestVerifiedRoundTrip(t *testing.T) {
	t.Parallel()
	plain := New()
	plain.SetImages([]Image{{Source: "docker.io/library/busybox:1.36", Target: "r.example/library/busybox:1.36", Digest: digest}})
	if b := plain.Marshal(); bytes.Contains(b, []byte("verified")) {
		t.Errorf("a lock without verification names it:\n%s", b)
	}
	l := New()
	l.SetImages([]Image{{Source: "ghcr.io/contoso/app:1.0", Target: "r.example/contoso/app:1.0", Digest: digest,
		Verified: &Verified{Policy: "spec.verify[1]", PolicyDigest: digestA, Signature: digestB}}})
	b := l.Marshal()
	want := "  verified:\n    policy: spec.verify[1]\n    policyDigest: " + digestA + "\n    signature: " + digestB + "\n"
	if !bytes.Contains(b, []byte(want)) {
		t.Errorf("marshalled:\n%s\nwant it to hold:\n%s", b, want)
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(l, back); d != "" {
		t.Errorf("round trip (-written +read):\n%s", d)
	}
	if !bytes.Equal(back.Marshal(), b) {
		t.Error("marshal after parse changed the bytes")
	}
	c := l.Clone()
	c.Images[0].Verified.Signature = digest
	if l.Images[0].Verified.Signature != digestB {
		t.Error("Clone shares the verified entry")
	}
}

func TestVerifiedParseErrors(t *testing.T) {
	t.Parallel()
	img := "- {source: a, target: b, digest: " + digest + ", verified: "
	tests := map[string]struct{ in, want string }{
		"bad policy":    {img + "{policy: " + marker + ", policyDigest: " + digestA + ", signature: " + digestB + "}}\n", "images[0].verified.policy: malformed policy: want spec.verify[N]"},
		"bad digest":    {img + "{policy: 'spec.verify[0]', policyDigest: sha256:" + marker + ", signature: " + digestB + "}}\n", "images[0].verified.policyDigest: malformed digest"},
		"bad signature": {img + "{policy: 'spec.verify[0]', policyDigest: " + digestA + ", signature: " + marker + "}}\n", "images[0].verified.signature: malformed digest"},
		"missing":       {img + "{policy: 'spec.verify[0]'}}\n", "images[0].verified.policyDigest: missing"},
		"unknown":       {img + "{policy: 'spec.verify[0]', policyDigest: " + digestA + ", signature: " + digestB + ", " + marker + ": 1}}\n", "images[0].verified: unknown field: want policy, policyDigest or signature"},
		"not a map":     {img + "[x]}\n", "images[0].verified: want a mapping"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(head + "images:\n" + tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse: %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), marker) {
				t.Errorf("message quotes the lock: %v", err)
			}
		})
	}
}
