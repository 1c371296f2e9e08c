package publish_test

import (
	"context"
	"errors"
	"io"
	"log"
	"math/rand"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/publish"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

func inProcessRegistry(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// TestVerifyRefusesDeletedSignature: a signature deleted from the mirror
// after `mirror` stops publish, naming the image and the artifact type, and
// quoting no credential.
func TestVerifyRefusesDeletedSignature(t *testing.T) {
	t.Parallel()
	src, dst := inProcessRegistry(t), inProcessRegistry(t)
	chain, err := testenv.SupplyChain(src+"/team/app:1.0", rand.New(rand.NewSource(3)))
	if err != nil {
		t.Fatal(err)
	}
	reg := schema.Registry{Host: dst}
	pairs, err := mirror.Plan(reg, []string{src + "/team/app:1.0"})
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := mirror.Run(context.Background(), pairs, mirror.WithKeychain(authn.NewMultiKeychain()))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cr3t-PASSWORD-q7"
	lookup := func(k string) (string, bool) {
		switch k {
		case publish.EnvRegistryUsername:
			return "ci", true
		case publish.EnvRegistryPassword:
			return secret, true
		}
		return "", false
	}
	if err := publish.Verify(context.Background(), reg, entries, publish.WithLookupEnv(lookup)); err != nil {
		t.Fatalf("Verify of a whole mirror: %v", err)
	}
	sig, err := name.NewDigest(dst + "/team/app@" + chain.Signature.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Delete(sig); err != nil {
		t.Fatal(err)
	}
	err = publish.Verify(context.Background(), reg, entries, publish.WithLookupEnv(lookup))
	var missing *publish.MissingError
	if !errors.As(err, &missing) {
		t.Fatalf("Verify with the signature deleted: %v, want *MissingError", err)
	}
	want := dst + "/team/app@" + chain.Index.String() + ": referrer " + chain.Signature.String() + " (" + testenv.CosignSignatureType + ")"
	if len(missing.Images) != 1 || missing.Images[0] != want {
		t.Errorf("missing %q, want [%s]", missing.Images, want)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("message quotes the password: %v", err)
	}
}
