package charts

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/lock"
)

const mirror = "acr.example.io"

// lockPins pins every image to the mirror as layout strip-host names it,
// with a digest derived from the reference, as the lock would.
func lockPins(ref string) (string, string, bool) {
	n, err := lock.Normalize(ref)
	if err != nil {
		return "", "", false
	}
	repo, _ := lock.SplitRef(n)
	repo = strings.SplitN(repo, "/", 2)[1]
	return mirror + "/" + repo, digestOf([]byte(n)), true
}

// TestPinnedRenderUsesMirrorOnly is the acceptance test in small: the
// chart rendered with the post-renderer PinImages builds, beside the
// HelmRelease's own, names only mirror images by digest, hooks and
// subcharts included.
func TestPinnedRenderUsesMirrorOnly(t *testing.T) {
	t.Parallel()
	rel := release(t, webRelease+`  postRenderers:
    - kustomize:
        images:
          - {name: ghcr.io/acme/report, newName: ghcr.io/acme/report-fips}
        patches:
          - target: {kind: Deployment}
            patch: |
              - op: add
                path: /spec/template/spec/containers/-
                value: {name: proxy, image: "envoyproxy/envoy:v1.30"}
`)
	c := webChart(t)
	res, err := Render(context.Background(), c, Input{Release: rel}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, u := range res.Images() {
		refs = append(refs, u.Ref)
	}
	want := []string{
		"docker.io/library/busybox@sha256:1111111111111111111111111111111111111111111111111111111111111111",
		"envoyproxy/envoy:v1.30", // the HelmRelease's own patch
		"ghcr.io/acme/report-fips:3",
		"ghcr.io/acme/web:1.0",
		"quay.io/acme/migrate:2",
		"redis:7.2",
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Fatalf("images (-want +got):\n%s", diff)
	}
	pins, err := PinImages(refs, mirror, lockPins)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Image{Name: "redis", NewName: mirror + "/library/redis", Digest: digestOf([]byte("docker.io/library/redis:7.2"))}, pins.Kustomize.Images[5]); diff != "" {
		t.Errorf("pin of a Docker Hub short name (-want +got):\n%s", diff)
	}
	pinned := *rel
	pinned.Spec.PostRenderers = WithPins(rel.Spec.PostRenderers, pins)
	if len(rel.Spec.PostRenderers) != 1 || len(pinned.Spec.PostRenderers) != 2 {
		t.Fatalf("WithPins changed the HelmRelease's own list, or did not keep it")
	}
	res, err = Render(context.Background(), c, Input{Release: &pinned}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range res.Images() {
		if !strings.HasPrefix(u.Ref, mirror+"/") || !strings.Contains(u.Ref, "@sha256:") {
			t.Errorf("%s (%s) is not a mirror reference by digest", u.Ref, u.Object)
		}
	}
	if n := len(res.Images()); n != len(want) {
		t.Errorf("%d images after pinning, want %d", n, len(want))
	}
}

func TestPinImagesRefuses(t *testing.T) {
	t.Parallel()
	_, err := PinImages([]string{"nginx:1.1", "nginx:1.2", "ghcr.io/a/b:1", "unlocked:1", mirror + "/x@sha256:" + strings.Repeat("a", 64)}, mirror, func(ref string) (string, string, bool) {
		if strings.HasPrefix(ref, "unlocked") {
			return "", "", false
		}
		return lockPins(ref)
	})
	var pe *PinError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v: want a PinError", err)
	}
	if diff := cmp.Diff(&PinError{Missing: []string{"unlocked:1"}, Clash: []string{"nginx"}}, pe); diff != "" {
		t.Errorf("PinError (-want +got):\n%s", diff)
	}
	if msg := err.Error(); strings.Contains(msg, "unlocked") || strings.Contains(msg, "nginx") {
		t.Errorf("%q quotes a reference from the chart", msg)
	}
}

// TestPostRenderStrategy: with nohooks the hooks keep their images as
// written, and say they cannot be pinned.
func TestPostRenderStrategy(t *testing.T) {
	t.Parallel()
	rel := release(t, webRelease+"  postRenderStrategy: nohooks\n")
	res, err := Render(context.Background(), webChart(t), Input{Release: rel}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Objects {
		if o.Hook == o.PostRendered && !o.CRD {
			t.Errorf("%s: hook %v, post-rendered %v", o.Describe(), o.Hook, o.PostRendered)
		}
		labels, _ := o.Map["metadata"].(map[string]any)["labels"].(map[string]any)
		if _, ok := labels["helm.toolkit.fluxcd.io/name"]; ok != o.PostRendered {
			t.Errorf("%s: origin labels %v, post-rendered %v", o.Describe(), ok, o.PostRendered)
		}
	}
	rel.Spec.PostRenderStrategy = "later"
	if _, err := Render(context.Background(), webChart(t), Input{Release: rel}, DefaultLimits()); err == nil || !strings.Contains(err.Error(), "want combined, nohooks or separate") {
		t.Errorf("unknown strategy: %v", err)
	}
}

// TestMemo: clusters that agree share one render; a different Kubernetes
// version or values render again.
func TestMemo(t *testing.T) {
	t.Parallel()
	c := webChart(t)
	rel := release(t, webRelease)
	memo := NewMemo()
	var wg sync.WaitGroup
	results := make([]*Result, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := memo.Render(context.Background(), c, Input{Release: rel, Values: map[string]any{"replicas": 2}}, DefaultLimits())
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	for _, r := range results[1:] {
		if r != results[0] {
			t.Fatalf("concurrent callers of one input got different results")
		}
	}
	if n := memo.Renders(); n != 1 {
		t.Errorf("%d renders of one input, want 1", n)
	}
	for _, in := range []Input{
		{Release: rel, Values: map[string]any{"replicas": 2}, KubeVersion: "1.30"},
		{Release: rel, Values: map[string]any{"replicas": 3}},
		{Release: rel, Values: map[string]any{"replicas": 2}, APIVersions: []string{"acme.example/v1"}},
	} {
		if _, err := memo.Render(context.Background(), c, in, DefaultLimits()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := memo.Render(context.Background(), c, Input{Release: rel, Values: map[string]any{"replicas": 2}, KubeVersion: DefaultKubeVersion}, DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	if n := memo.Renders(); n != 4 {
		t.Errorf("%d renders, want 4 (the default version is the same input)", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := memo.Render(ctx, c, Input{Release: rel, KubeVersion: "1.29"}, DefaultLimits()); err == nil {
		t.Errorf("cancelled render succeeded")
	}
	if _, err := memo.Render(context.Background(), c, Input{Release: rel, KubeVersion: "1.29"}, DefaultLimits()); err != nil {
		t.Errorf("a cancelled render was kept: %v", err)
	}
}

// BenchmarkRender is one render of the test chart (every cluster whose
// input differs pays it); BenchmarkMemoHit what a cluster that shares an
// input pays.
func BenchmarkRender(b *testing.B) {
	c := webChart(b)
	rel := release(b, webRelease)
	for b.Loop() {
		if _, err := Render(context.Background(), c, Input{Release: rel}, DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemoHit(b *testing.B) {
	c := webChart(b)
	rel := release(b, webRelease)
	memo := NewMemo()
	in := Input{Release: rel, Values: map[string]any{"replicas": 3, "image": map[string]any{"tag": "2.0"}}}
	for b.Loop() {
		if _, err := memo.Render(context.Background(), c, in, DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}
