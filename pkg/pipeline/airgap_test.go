package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/test/testenv"
)

const airGapFleet = `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata:
  name: contoso
spec:
  registry: {host: "%DST%", insecure: true}
  source: {kind: git, url: "ssh://git@github.com/contoso/fleet-gitops.git", ref: main}
  images:
%IMAGES%
  verify:
    - images: ["%SRC%/contoso/**"]
      cosign:
        keys: [{file: keys/cosign.pub}]
  layers:
    - name: apps
      path: ./apps
  clusters:
    - name: prod-1
      registration: {mode: capi}
`

// TestAirGap is the air gap end to end, on real distribution registries
// with no connection between them: on the connected side a source registry
// and the mirror A; a fleet is mirrored to A and written into a layout
// (a folder), then a pull request adds an image, the direct mirror to A
// locks it and a second layout (a tar) is written. A and the source stop.
// On the other side a registry B starts at A's address (so one fleet.yaml
// and one lock name both) and each layout is pushed into it in turn, at the
// fleet's state of the time. B ends up holding every image and signature at
// the digests A holds, the lock is byte for byte what the direct mirror
// wrote, and publish's checks pass against B.
func TestAirGap(t *testing.T) {
	ctx := context.Background()
	key := testenv.NewKey(t)
	src, stopSrc, err := testenv.StartRegistry(t.TempDir())
	if err != nil {
		t.Skipf("no registry: %v", err)
	}
	t.Cleanup(stopSrc)
	mirrorHost := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	stopA := testenv.RegistryAt(t, mirrorHost)
	for _, repo := range []string{"contoso/app", "contoso/lib"} {
		img, err := random.Index(256, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := name.NewTag(src + "/" + repo + ":1.0")
		if err := remote.WriteIndex(ref, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		sz, _ := img.Size()
		mt, _ := img.MediaType()
		testenv.PushBundle(t, ref.Context(), v1.Descriptor{MediaType: mt, Digest: d, Size: sz}, key.Bundle(t, testenv.CosignStatement(d)))
	}
	root := t.TempDir()
	fleetAt := func(images ...string) string {
		var list strings.Builder
		for _, i := range images {
			list.WriteString("    - " + src + "/" + i + "\n")
		}
		return strings.NewReplacer("%DST%", mirrorHost, "%SRC%", src, "%IMAGES%\n", list.String()).Replace(airGapFleet)
	}
	testenv.WriteTree(t, root, map[string]string{
		"fleet.yaml":              fleetAt("contoso/app:1.0"),
		"keys/cosign.pub":         string(key.PublicPEM),
		"apps/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cm.yaml]\n",
		"apps/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\n",
	})
	noEnv := func(string) (string, bool) { return "", false }
	cfg := pipeline.Config{File: filepath.Join(root, "fleet.yaml"), LookupEnv: noEnv}
	lockPath := filepath.Join(root, lock.FileName)
	layouts := t.TempDir()
	v1Layout, v2Layout := filepath.Join(layouts, "v1"), filepath.Join(layouts, "v2.tar")

	// The connected side.
	if _, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	lockV1 := read(t, lockPath)
	if _, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{To: "oci-layout:" + v1Layout}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, lockPath), lockV1) {
		t.Fatal("mirror --to changed the lock")
	}
	testenv.WriteTree(t, root, map[string]string{"fleet.yaml": fleetAt("contoso/app:1.0", "contoso/lib:1.0")}) // the pull request
	if _, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{To: "oci-layout:" + v2Layout}); !problem.IsInvalid(err) {
		t.Fatalf("mirror --to before the lock names the new image: %v, want an input error", err)
	}
	if _, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	lockV2 := read(t, lockPath)
	if _, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{To: "oci-layout:" + v2Layout}); err != nil {
		t.Fatal(err)
	}
	atA := heads(t, lockPath)
	stopA()
	stopSrc()

	// The other side: B at A's address, the fleet as it was at each layout.
	testenv.RegistryAt(t, mirrorHost)
	testenv.WriteTree(t, root, map[string]string{"fleet.yaml": fleetAt("contoso/app:1.0"), lock.FileName: string(lockV1)})
	if _, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{From: "oci-layout:" + v1Layout}); err != nil {
		t.Fatal(err)
	}
	testenv.WriteTree(t, root, map[string]string{"fleet.yaml": fleetAt("contoso/app:1.0", "contoso/lib:1.0"), lock.FileName: string(lockV2)})
	if _, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{From: "oci-layout:" + v2Layout}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, lockPath), lockV2) {
		t.Error("mirror --from changed the lock")
	}
	if atB := heads(t, lockPath); fmt.Sprint(atB) != fmt.Sprint(atA) {
		t.Errorf("B holds\n  %v\nA held\n  %v", atB, atA)
	}
	if vs, err := pipeline.Verify(ctx, cfg, pipeline.VerifyOptions{At: pipeline.AtMirror}); err != nil || len(vs) != 2 {
		t.Errorf("verify --at mirror on B: %+v, %v", vs, err)
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// heads returns, for every image of the lock at path, the digest its target
// tag and each referrer have in the registry ("" when missing).
func heads(t *testing.T, path string) map[string]string {
	t.Helper()
	l, err := lock.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, img := range l.Images {
		ref, err := name.ParseReference(img.Target, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if d, err := remote.Head(ref); err == nil {
			out[img.Target] = d.Digest.String()
		} else {
			out[img.Target] = ""
		}
		for _, r := range img.Referrers {
			d, err := name.NewDigest(img.Repository()+"@"+r.Digest, name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			_, err = remote.Head(d)
			out[img.Target+" "+r.Digest] = fmt.Sprint(err == nil)
		}
	}
	return out
}
