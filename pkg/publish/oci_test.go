package publish

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// untar reads a tar.gz layer into files, checking every header is
// reproducible (mtime 0, owner 0, no names).
func untar(t testing.TB, rc io.Reader) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("gzip header name %q mtime %v, want none", zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	out := map[string]string{}
	var prev string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(time.Unix(0, 0)) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: mtime %v uid %d gid %d uname %q gname %q, want all zero", h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if h.Typeflag == tar.TypeDir {
			if h.Mode != 0o755 {
				t.Errorf("%s: mode %o, want 755", h.Name, h.Mode)
			}
			continue
		}
		if h.Mode != 0o644 {
			t.Errorf("%s: mode %o, want 644", h.Name, h.Mode)
		}
		if h.Name < prev {
			t.Errorf("entries not sorted: %s after %s", h.Name, prev)
		}
		prev = h.Name
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = string(b)
	}
	return out
}

func TestOCIPublish(t *testing.T) {
	ctx := context.Background()
	host := testenv.Registry(t)
	url := "oci://" + host + "/contoso/fleet"
	for _, srcPath := range []string{"", "deploy"} {
		t.Run("path="+srcPath, func(t *testing.T) {
			fx := newFixture(t, schema.SourceOCI, url+strings.ReplaceAll(srcPath, "/", "-"), srcPath, "")
			fx.f.Spec.Source.Insecure = true
			res, err := OCI(ctx, fx.f, fx.l, fx.files, WithSource("https://github.com/contoso/fleet-config"))
			if err != nil {
				t.Fatal(err)
			}
			if !res.Changed {
				t.Error("first push: Changed = false")
			}
			ref, err := name.NewTag(strings.TrimPrefix(fx.f.Spec.Source.URL, "oci://")+":v1", name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			img, err := remote.Image(ref, remote.WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			d, _ := img.Digest()
			if d.String() != res.Revision {
				t.Errorf("tag points at %s, Result.Revision %s", d, res.Revision)
			}
			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			digest, _ := InputDigest(fx.f, fx.l)
			wantAnn := map[string]string{
				"org.opencontainers.image.source":   "https://github.com/contoso/fleet-config",
				"org.opencontainers.image.revision": "v1@" + digest,
			}
			if diff := cmp.Diff(wantAnn, m.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != "application/vnd.cncf.flux.config.v1+json" ||
				len(m.Layers) != 1 || m.Layers[0].MediaType != "application/vnd.cncf.flux.content.v1.tar+gzip" {
				t.Errorf("media types: manifest %s config %s layers %+v", m.MediaType, m.Config.MediaType, m.Layers)
			}
			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			rc, err := layers[0].Compressed()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if diff := cmp.Diff(fx.want, untar(t, rc)); diff != "" {
				t.Errorf("artifact tree (-want +got):\n%s", diff)
			}

			// Again: same digest, nothing pushed.
			res2, err := OCI(ctx, fx.f, fx.l, fx.files, WithSource("https://github.com/contoso/fleet-config"))
			if err != nil {
				t.Fatal(err)
			}
			if res2.Changed || res2.Revision != res.Revision {
				t.Errorf("second push: %+v, want unchanged %s", res2, res.Revision)
			}
		})
	}
}

func TestArtifactReproducible(t *testing.T) {
	build := func(variant string) v1.Hash {
		fx := newFixture(t, schema.SourceOCI, "oci://example.invalid/fleet", "", variant)
		c, err := collect(fx.f, fx.files, quiet(t))
		if err != nil {
			t.Fatal(err)
		}
		img, err := artifact(c, map[string]string{SourceAnnotation: "s", RevisionAnnotation: "r"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b, c := build(""), build(""), build("changed: true\n")
	if a != b {
		t.Errorf("same tree in two folders: digests %s and %s", a, b)
	}
	if a == c {
		t.Errorf("different trees: same digest %s", a)
	}
}

func TestOCIRejectsNonOCIURL(t *testing.T) {
	fx := newFixture(t, schema.SourceOCI, "oci://example.invalid/fleet", "", "")
	_, err := OCI(context.Background(), fx.f, fx.l, fx.files, WithPushURL("https://example.invalid/fleet"))
	if !problem.IsInvalid(err) {
		t.Errorf("err = %v, want an input error", err)
	}
}

func TestCollectRejectsEscapingPaths(t *testing.T) {
	fx := newFixture(t, "git", clusterURL, "", "")
	fx.f.Spec.Source.Path = "../elsewhere"
	if _, err := collect(fx.f, fx.files, quiet(t)); !problem.IsInvalid(err) {
		t.Errorf("source.path ../elsewhere: err = %v, want an input error", err)
	}
	fx = newFixture(t, "git", clusterURL, "", "")
	fx.f.Spec.Layers[0].Path = "./missing/${env}"
	if _, err := collect(fx.f, fx.files, quiet(t)); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing layer folder: err = %v", err)
	}
}
