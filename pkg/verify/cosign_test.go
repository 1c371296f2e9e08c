package verify_test

import (
	"context"
	"errors"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
	"fleetgen.dev/fleetgen/test/testenv"
)

// cosignBinary is the real cosign CLI (testenv.Tool: $FLEETGEN_COSIGN, else
// test/e2e/tools/build.sh's pinned cosign).
func cosignBinary(t *testing.T) string {
	t.Helper()
	return testenv.Tool(t, "cosign")
}

// TestCosignInterop: the real cosign CLI signs images on the loopback
// distribution registry with a key, offline (--tlog-upload=false, no
// signing config), in the bundle format (a referrer, cosign v3's default)
// and the legacy one (sha256-<hex>.sig); fleetgen verifies both, and refuses
// an image signed by another key. Everything runs behind TestMain's
// recording proxy: cosign and fleetgen alike make no request off the
// machine.
func TestCosignInterop(t *testing.T) {
	cosign := cosignBinary(t)
	reg := testenv.Registry(t)
	dir := t.TempDir()
	env := append(os.Environ(), "COSIGN_PASSWORD=", "HOME="+dir, "TUF_ROOT="+filepath.Join(dir, "tuf"), "DOCKER_CONFIG="+filepath.Join(dir, "docker"))
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(cosign, args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, k := range []string{"key", "other"} {
		run("generate-key-pair", "--output-key-prefix", k)
	}
	pub, err := os.ReadFile(filepath.Join(dir, "key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	f := &schema.Fleet{Spec: schema.Spec{Verify: []schema.VerifyPolicy{{Cosign: &schema.CosignVerify{Keys: []schema.FileRef{{File: "key.pub", Data: pub}}}}}}}
	ps, err := verify.Compile(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(5))
	for _, tc := range []struct {
		name, key string
		bundle    bool
		want      verify.Reason
	}{
		{"bundle", "key", true, ""},
		{"legacy", "key", false, ""},
		{"other-key", "other", true, verify.WrongKey},
		{"other-key-legacy", "other", false, verify.WrongKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := testenv.Image(rng, nil, 1, 1024)
			if err != nil {
				t.Fatal(err)
			}
			tag, err := name.NewTag(reg + "/contoso/" + tc.name + ":1.0")
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Write(tag, img); err != nil {
				t.Fatal(err)
			}
			d, _ := img.Digest()
			run("sign", "--key", tc.key+".key", "--tlog-upload=false", "--use-signing-config=false", "--yes",
				"--allow-http-registry", "--new-bundle-format="+map[bool]string{true: "true", false: "false"}[tc.bundle],
				tag.Context().Digest(d.String()).String())
			got, err := ps[0].Image(context.Background(), tag.Context(), d)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("fleetgen refuses cosign's %s signature: %v", tc.name, err)
				}
				t.Logf("verified by signature %s", got.Signature)
				return
			}
			var ve *verify.Error
			if !errors.As(err, &ve) || ve.Reason != tc.want {
				t.Fatalf("err = %v, want %s", err, tc.want)
			}
		})
	}
}
