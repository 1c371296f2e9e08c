package mirror_test

import (
	"context"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// TestOrasInterop: layouts cross between fleetgen and the real oras CLI,
// on the distribution registry (no referrers API: the tag schema).
//
//   - `oras backup --include-referrers` of an image (a two-platform index
//     with an SBOM, an attestation on a platform, a signature on the SBOM)
//     and of its cosign .sig tag, as a tar: fleetgen pushes from it exactly
//     what the lock names, to a registry that never saw the source.
//   - fleetgen's layout: `oras restore --dry-run` reads it (every image by
//     its source reference, with its referrers), and `oras cp -r
//     --from-oci-layout-path LAYOUT SOURCE-REFERENCE` restores an image with
//     its referrers at its digest. (`oras restore` pushes each ref.name as a
//     tag of one repository: a layout of several repositories, named by
//     their source references, restores image by image with `oras cp`.)
func TestOrasInterop(t *testing.T) {
	oras := testenv.Tool(t, "oras")
	src := testenv.Registry(t)
	chain, err := testenv.SupplyChain(src+"/team/app:1.0", rand.New(rand.NewSource(11)))
	if err != nil {
		t.Fatal(err)
	}
	first := inProcess(t)
	pairs, err := mirror.Plan(schema.Registry{Host: first}, []string{src + "/team/app:1.0"})
	if err != nil {
		t.Fatal(err)
	}
	locked, _, err := mirror.Run(context.Background(), pairs, anon)
	if err != nil {
		t.Fatal(err)
	}
	if len(locked[0].Referrers) != 4 {
		t.Fatalf("locked %+v, want 4 referrers", locked[0].Referrers)
	}
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(oras, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "DOCKER_CONFIG="+filepath.Join(dir, "docker"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("oras %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	t.Run("oras backup, fleetgen --from", func(t *testing.T) {
		backup := filepath.Join(dir, "backup.tar")
		run("backup", "--plain-http", "--include-referrers", "--output", backup, src+"/team/app:1.0,"+chain.SignatureTag)
		dst := testenv.Registry(t)
		reg := schema.Registry{Host: dst, Insecure: true}
		relocked := relock(t, reg, locked)
		entries, _, err := mirror.FromLayout(context.Background(), backup, reg, relocked, anon)
		if err != nil {
			t.Fatal(err)
		}
		if entries[0].Digest != chain.Index.String() || !equalReferrers(entries[0].Referrers, relocked[0].Referrers) {
			t.Errorf("pushed %+v, want the lock's %+v", entries[0], relocked[0])
		}
		if err := mirror.Check(context.Background(), reg, relocked, mirror.WithInsecure(true)); err != nil {
			t.Error(err)
		}
	})

	t.Run("fleetgen --to, oras reads", func(t *testing.T) {
		layout := filepath.Join(dir, "fleetgen.tar")
		if _, err := mirror.ToLayout(context.Background(), layout, locked, anon); err != nil {
			t.Fatal(err)
		}
		dst := testenv.Registry(t)
		out := run("restore", "--dry-run", "--plain-http", "--input", layout, dst+"/team/app")
		t.Logf("oras restore --dry-run:\n%s", out)
		if !strings.Contains(out, src+"/team/app:1.0 with 3 referrer(s)") {
			t.Errorf("oras restore --dry-run did not list the image with its referrers:\n%s", out)
		}
		run("cp", "-r", "--from-oci-layout-path", layout, "--to-plain-http", src+"/team/app:1.0", dst+"/team/app:1.0")
		ref := mustRef(t, dst+"/team/app:1.0")
		desc, err := remote.Head(ref)
		if err != nil || desc.Digest != chain.Index {
			t.Fatalf("oras cp from fleetgen's layout: %v, %v; want %s", desc, err, chain.Index)
		}
		for _, d := range []string{chain.SBOM.String(), chain.Attestation.String(), chain.SBOMSignature.String()} {
			if _, err := remote.Head(mustRef(t, dst+"/team/app@"+d)); err != nil {
				t.Errorf("referrer %s not restored by oras: %v", d, err)
			}
		}
	})
}
