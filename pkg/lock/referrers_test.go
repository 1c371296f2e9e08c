package lock

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	digestA = "sha256:aaaa432289a2f69dad7e00346d00e8d4df4d0053a44dffb3f8cf463f6e3fb4b0"
	digestB = "sha256:bbbb432289a2f69dad7e00346d00e8d4df4d0053a44dffb3f8cf463f6e3fb4b0"
)

// TestReferrersRoundTrip: referrers are written sorted by digest, read back
// the same, and a lock without any keeps its bytes (no empty field).
func TestReferrersRoundTrip(t *testing.T) {
	t.Parallel()
	plain := New()
	plain.SetImages([]Image{{Source: "docker.io/library/busybox:1.36", Target: "r.example/library/busybox:1.36", Digest: digest}})
	if b := plain.Marshal(); bytes.Contains(b, []byte("referrers")) {
		t.Errorf("a lock without referrers names them:\n%s", b)
	}
	l := New()
	l.SetImages([]Image{{Source: "docker.io/library/busybox:1.36", Target: "r.example/library/busybox:1.36", Digest: digest, Referrers: []Referrer{
		{Digest: digestB, ArtifactType: "application/spdx+json"},
		{Digest: digestA, ArtifactType: "application/vnd.dev.cosign.simplesigning.v1+json", Tag: "sha256-" + strings.TrimPrefix(digest, "sha256:") + ".sig"},
	}}})
	b := l.Marshal()
	if i, j := bytes.Index(b, []byte(digestA)), bytes.Index(b, []byte(digestB)); i < 0 || j < i {
		t.Errorf("referrers not sorted by digest:\n%s", b)
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
}

func TestReferrersParseErrors(t *testing.T) {
	t.Parallel()
	img := "- {source: a, target: b, digest: " + digest + ", referrers: "
	tests := map[string]struct{ in, want string }{
		"bad digest":   {img + "[{digest: sha256:" + marker + ", artifactType: x}]}\n", "images[0].referrers[0].digest: malformed digest"},
		"missing type": {img + "[{digest: " + digestA + "}]}\n", "images[0].referrers[0].artifactType: missing"},
		"bad tag":      {img + "[{digest: " + digestA + ", artifactType: x, tag: " + marker + "}]}\n", "images[0].referrers[0].tag: malformed tag"},
		"unknown":      {img + "[{digest: " + digestA + ", artifactType: x, " + marker + ": 1}]}\n", "images[0].referrers[0]: unknown field: want digest, artifactType or tag"},
		"duplicate":    {img + "[{digest: " + digestA + ", artifactType: x}, {digest: " + digestA + ", artifactType: y}]}\n", "images[0].referrers[1].digest: duplicate referrer (also images[0].referrers[0])"},
		"not a list":   {img + "x}\n", "images[0].referrers: want a list"},
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
