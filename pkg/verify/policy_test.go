package verify_test

import (
	"strings"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/verify"
	"fleetgen.dev/fleetgen/test/testenv"
)

// compile compiles spec.verify policies of keyed cosign entries with the
// given image globs.
func compile(t *testing.T, globs ...[]string) verify.Policies {
	t.Helper()
	key := testenv.NewKey(t)
	f := &schema.Fleet{}
	for _, g := range globs {
		f.Spec.Verify = append(f.Spec.Verify, schema.VerifyPolicy{Images: g, Cosign: &schema.CosignVerify{Keys: []schema.FileRef{{File: "k.pub", Data: key.PublicPEM}}}})
	}
	ps, err := verify.Compile(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestGlobAttack: which policy covers an image is decided in time linear
// in the name, whatever the globs (issue 38: 31 characters of repeated **
// segments against a long image name kept validate busy past 60 s). Every
// adversarial glob is compiled and asked about a long name under 100 ms.
func TestGlobAttack(t *testing.T) {
	t.Parallel()
	long := "ghcr.io/" + strings.Repeat("a/", 100) + strings.Repeat("a", 150) + "b"
	for _, g := range []string{
		strings.Repeat("**/", 10) + "*",
		strings.Repeat("**a", 10) + "c",
		"ghcr.io/" + strings.Repeat("*a", 15) + "c",
		strings.Repeat("**/", 5) + strings.Repeat("*/", 8) + "c",
	} {
		ps := compile(t, []string{g})
		start := time.Now()
		ps.For(long)
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("glob %q (%d characters) against a %d-character name took %v, want under 100ms", g, len(g), len(long), d)
		}
	}
}

// TestDockerHub: Docker Hub's names are one registry to a policy, as they
// are to the mirror (issue 38: registry-1.docker.io/library/alpine escaped
// a docker.io/library/** policy).
func TestDockerHub(t *testing.T) {
	t.Parallel()
	for _, glob := range []string{"docker.io/library/**", "index.docker.io/library/*", "registry-1.docker.io/library/alpine", "alpine", "library/alpine"} {
		ps := compile(t, []string{glob})
		for _, repo := range []string{
			"docker.io/library/alpine",
			"index.docker.io/library/alpine",
			"registry-1.docker.io/library/alpine",
			"registry.hub.docker.com/library/alpine",
			"registry-1.docker.io/alpine",
		} {
			if ps.For(repo) == nil {
				t.Errorf("the policy %q does not cover %s", glob, repo)
			}
		}
		for _, repo := range []string{"ghcr.io/library/alpine", "docker.io.evil.example/library/alpine", "evil.example/docker.io/library/alpine"} {
			if ps.For(repo) != nil {
				t.Errorf("the policy %q covers %s", glob, repo)
			}
		}
	}
	// A namespace on Docker Hub and a glob of it.
	ps := compile(t, []string{"contoso/*"})
	for _, repo := range []string{"docker.io/contoso/app", "registry-1.docker.io/contoso/app"} {
		if ps.For(repo) == nil {
			t.Errorf("contoso/* does not cover %s", repo)
		}
	}
	if ps.For("ghcr.io/contoso/app") != nil {
		t.Error("contoso/* (Docker Hub's contoso) covers ghcr.io/contoso/app")
	}
}
