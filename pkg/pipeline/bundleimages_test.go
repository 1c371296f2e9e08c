package pipeline

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// TestUnpinnedBundleImages: validate warns once per image of an own-repo
// bundle that is not the mirror's reference by digest (Fleet deploys it as
// written), naming the delivery, the bundle folder, the file and the image;
// an image written as the mirror by digest passes, and the exit code does not
// change.
func TestUnpinnedBundleImages(t *testing.T) {
	t.Parallel()
	fleet := copyTree(t, filepath.Join("..", "..", "examples", "multi-manager"))
	pinnedRef := "multi.azurecr.io/other/app@sha256:" + strings.Repeat("a", 64)
	pubWrite(t, fleet, map[string]string{
		"bundles/podinfo/web.yaml": deployment("web", "ghcr.io/stefanprodan/podinfo:6.7.1", pinnedRef) +
			"---\n" + deployment("web2", "ghcr.io/stefanprodan/podinfo:6.7.1"),
	})
	lockPath := filepath.Join(fleet, lock.FileName)
	l, err := lock.Load(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	l.SetImages(append(l.Images,
		lock.Image{Source: "ghcr.io/stefanprodan/podinfo:6.7.1", Target: "multi.azurecr.io/stefanprodan/podinfo:6.7.1", Digest: "sha256:" + strings.Repeat("b", 64)},
		lock.Image{Source: pinnedRef, Target: pinnedRef, Digest: "sha256:" + strings.Repeat("a", 64)}))
	if err := lock.Write(lockPath, l); err != nil {
		t.Fatal(err)
	}
	ws, err := Validate(context.Background(), Config{File: filepath.Join(fleet, "fleet.yaml"), AgeKeyFile: filepath.Join(fleet, "age.agekey")})
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	var got []string
	for _, w := range ws {
		if w.ErrorCode() == problem.CodeUnpinnedBundle {
			got = append(got, w.Path+": "+w.Msg)
		}
	}
	want := []string{"spec.deliveries[2]: delivery apps: bundle bundles/podinfo: bundles/podinfo/web.yaml: image ghcr.io/stefanprodan/podinfo:6.7.1 is not the mirror's reference by digest, and Fleet deploys it as written (fleetgen cannot rewrite a bundle's images): write multi.azurecr.io/…@sha256:… (`fleetgen images` lists the locked digests)"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}
