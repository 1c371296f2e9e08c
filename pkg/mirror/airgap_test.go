package mirror_test

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
)

// airgapSource mirrors a two-platform index with its supply chain (and a
// plain image) from a new source registry to a new registry, and returns
// the lock entries.
func airgapSource(t *testing.T) (src string, entries []lock.Image, chain testenv.Chain) {
	t.Helper()
	src, dst := inProcess(t), inProcess(t)
	chain, err := testenv.SupplyChain(src+"/team/app:1.0", rand.New(rand.NewSource(7)))
	if err != nil {
		t.Fatal(err)
	}
	push(t, src+"/team/tool:2.0", mustRandom(t))
	pairs, err := mirror.Plan(schema.Registry{Host: dst}, []string{src + "/team/app:1.0", src + "/team/tool:2.0"})
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err = mirror.Run(context.Background(), pairs, anon, mirror.WithBackoff(fastBackoff))
	if err != nil {
		t.Fatal(err)
	}
	return src, entries, chain
}

// TestAirGapRoundTrip: the locked images go into a layout (a folder and a
// tar) and from it into a registry that never saw the source: every image
// by its digest under its target tag, every referrer by digest (and the
// cosign tag), and the entries FromLayout makes are the lock's. index.json
// names each image by its source reference. Writing the same lock twice
// gives the same tar, byte for byte.
func TestAirGapRoundTrip(t *testing.T) {
	t.Parallel()
	src, locked, chain := airgapSource(t)
	for _, path := range []string{"layout", "layout.tar"} {
		t.Run(path, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), path)
			if _, err := mirror.ToLayout(context.Background(), path, locked, anon, mirror.WithBackoff(fastBackoff)); err != nil {
				t.Fatal(err)
			}
			if _, err := mirror.ToLayout(context.Background(), path, locked, anon); !problem.IsInvalid(err) {
				t.Errorf("a second ToLayout to the same path: %v, want an input error", err)
			}
			if !mirror.IsTar(path) {
				var idx v1.IndexManifest
				data, err := os.ReadFile(filepath.Join(path, "index.json"))
				if err != nil || json.Unmarshal(data, &idx) != nil {
					t.Fatalf("index.json: %v", err)
				}
				names := map[string]bool{}
				for _, m := range idx.Manifests {
					names[m.Annotations[mirror.LayoutRefName]] = true
				}
				for _, want := range []string{src + "/team/app:1.0", src + "/team/tool:2.0", src + "/team/app:" + chain.SignatureTag} {
					if !names[want] {
						t.Errorf("index.json names %v, not %s", names, want)
					}
				}
			} else {
				again := filepath.Join(t.TempDir(), "again.tar")
				if _, err := mirror.ToLayout(context.Background(), again, locked, anon); err != nil {
					t.Fatal(err)
				}
				a, _ := os.ReadFile(path)
				b, _ := os.ReadFile(again)
				if string(a) != string(b) {
					t.Error("two layouts of one lock differ")
				}
			}

			dst := inProcess(t)
			reg := schema.Registry{Host: dst}
			relocked := relock(t, reg, locked)
			entries, _, err := mirror.FromLayout(context.Background(), path, reg, relocked, anon, mirror.WithBackoff(fastBackoff))
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range entries {
				if e.Digest != relocked[i].Digest || !equalReferrers(e.Referrers, relocked[i].Referrers) {
					t.Errorf("entry %+v, want the lock's %+v", e, relocked[i])
				}
			}
			if err := mirror.Check(context.Background(), reg, relocked); err != nil {
				t.Errorf("the registry lacks what the lock names: %v", err)
			}
		})
	}
}

// relock is the lock of images for another registry: targets where reg
// mirrors them, digests and referrers the same.
func relock(t *testing.T, reg schema.Registry, images []lock.Image) []lock.Image {
	t.Helper()
	var sources []string
	for _, img := range images {
		sources = append(sources, img.Source)
	}
	pairs, err := mirror.Plan(reg, sources)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]lock.Image, len(images))
	for i, img := range images {
		img.Target = pairs[i].Target
		out[i] = img
	}
	return out
}

// TestAirGapLayoutLacks: a layout without a manifest the lock names (a
// referrer deleted from it) fails before anything is pushed, naming it.
func TestAirGapLayoutLacks(t *testing.T) {
	t.Parallel()
	_, locked, chain := airgapSource(t)
	path := filepath.Join(t.TempDir(), "layout")
	if _, err := mirror.ToLayout(context.Background(), path, locked, anon); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(path, "blobs", "sha256", chain.SBOM.Hex)); err != nil {
		t.Fatal(err)
	}
	dst := inProcess(t)
	reg := schema.Registry{Host: dst}
	_, stats, err := mirror.FromLayout(context.Background(), path, reg, relock(t, reg, locked), anon)
	var le *mirror.LayoutError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), chain.SBOM.String()) || stats.Copied != 0 {
		t.Fatalf("err = %v (%+v), want a *LayoutError naming %s", err, stats, chain.SBOM)
	}
	if tags, err := remote.List(mustRepo(t, dst+"/team/app")); err == nil && len(tags) > 0 {
		t.Errorf("pushed %v", tags)
	}
}

// TestAirGapTarAttack: a tar whose members reach outside the layout (a
// path with .., an absolute path, a link, a file that is not a layout's)
// is refused before anything is read, and nothing is written outside.
func TestAirGapTarAttack(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]*tar.Header{
		"dot-dot":  {Name: "blobs/sha256/../../../evil", Typeflag: tar.TypeReg, Size: 1},
		"absolute": {Name: "/etc/evil", Typeflag: tar.TypeReg, Size: 1},
		"symlink":  {Name: "blobs/sha256/" + strings.Repeat("a", 64), Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
		"hardlink": {Name: "blobs/sha256/" + strings.Repeat("a", 64), Typeflag: tar.TypeLink, Linkname: "oci-layout"},
		"other":    {Name: "evil.sh", Typeflag: tar.TypeReg, Size: 1},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "layout.tar")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			tw := tar.NewWriter(f)
			for _, m := range []*tar.Header{{Name: "oci-layout", Typeflag: tar.TypeReg, Size: 2}, h} {
				m.Mode = 0o644
				if err := tw.WriteHeader(m); err != nil {
					t.Fatal(err)
				}
				if m.Typeflag == tar.TypeReg {
					tw.Write([]byte("{}")[:m.Size])
				}
			}
			tw.Close()
			f.Close()
			_, _, err = mirror.FromLayout(context.Background(), path, schema.Registry{Host: "127.0.0.1:1"}, nil)
			if !problem.IsInvalid(err) || !strings.Contains(err.Error(), "member") {
				t.Fatalf("err = %v, want the member refused (exit 2)", err)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("files beside the tar: %v", entries)
			}
		})
	}
}

func mustRepo(t *testing.T, s string) name.Repository {
	t.Helper()
	r, err := name.NewRepository(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAirGapTampered: a blob of the layout whose bytes are not its digest's
// fails the push of its image (the copier checks every digest as it reads),
// and the image's tag is not written.
func TestAirGapTampered(t *testing.T) {
	t.Parallel()
	_, locked, _ := airgapSource(t)
	path := filepath.Join(t.TempDir(), "layout")
	if _, err := mirror.ToLayout(context.Background(), path, locked, anon); err != nil {
		t.Fatal(err)
	}
	// The tool image's one layer.
	var tool lock.Image
	for _, img := range locked {
		if strings.Contains(img.Source, "/team/tool:") {
			tool = img
		}
	}
	d, _ := v1.NewHash(tool.Digest)
	raw, err := os.ReadFile(filepath.Join(path, "blobs", "sha256", d.Hex))
	if err != nil {
		t.Fatal(err)
	}
	m, err := v1.ParseManifest(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	layer := filepath.Join(path, "blobs", "sha256", m.Layers[0].Digest.Hex)
	data, err := os.ReadFile(layer)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(layer, data, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := inProcess(t)
	reg := schema.Registry{Host: dst}
	relocked := relock(t, reg, locked)
	_, _, err = mirror.FromLayout(context.Background(), path, reg, relocked, anon, mirror.WithBackoff(fastBackoff))
	if err == nil || !strings.Contains(err.Error(), "/team/tool") {
		t.Fatalf("err = %v, want the tool image refused", err)
	}
	t.Logf("refused: %v", err)
	if _, err := remote.Head(mustRef(t, dst+"/team/tool:2.0")); err == nil {
		t.Error("the tampered image was tagged at the target")
	}
}
