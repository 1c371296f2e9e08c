package publish

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
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

func TestVerify(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	reg := schema.Registry{Host: host, Insecure: true}
	push := func(repo string) lock.Image {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := name.NewTag(host+"/library/"+repo+":1", name.Insecure)
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		return lock.Image{Source: "docker.io/library/" + repo + ":1", Target: host + "/library/" + repo + ":1", Digest: d.String()}
	}
	a, b := push("a"), push("b")
	missing := lock.Image{Source: "docker.io/library/c:1", Target: host + "/library/c:1", Digest: "sha256:" + strings.Repeat("c", 64)}
	wrongDigest := lock.Image{Source: "docker.io/library/a:2", Target: host + "/library/a:2", Digest: "sha256:" + strings.Repeat("d", 64)}

	if err := Verify(ctx, reg, []lock.Image{a, b}); err != nil {
		t.Errorf("all present: %v", err)
	}
	if err := Verify(ctx, reg, nil); err != nil {
		t.Errorf("no images: %v", err)
	}
	err := Verify(ctx, reg, []lock.Image{missing, a, wrongDigest, b}, WithJobs(2))
	var me *MissingError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want *MissingError", err)
	}
	want := []string{host + "/library/a@sha256:" + strings.Repeat("d", 64), host + "/library/c@sha256:" + strings.Repeat("c", 64)}
	if diff := cmp.Diff(want, me.Images); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), "fleetgen mirror") {
		t.Errorf("error does not say what to run: %v", err)
	}
}

// TestKeychainUsesEnvCredentials: FLEETGEN_REGISTRY_* go to spec.registry's
// host, reached as it is declared, and nowhere else (SPEC §4): not to an OCI
// source on another host, not to the same host over plain HTTP when it is
// declared secure.
func TestKeychainUsesEnvCredentials(t *testing.T) {
	creds := map[string]string{EnvRegistryUsername: "ci", EnvRegistryPassword: "fake-password"}
	secure := schema.Registry{Host: "contoso.azurecr.io"}
	for _, tc := range []struct {
		name     string
		env      map[string]string
		reg      schema.Registry
		ref      string
		insecure bool // the reference is reached over plain HTTP
		wantUser string
	}{
		{"both set", creds, secure, "contoso.azurecr.io/a:1", false, "ci"},
		{"password missing", map[string]string{EnvRegistryUsername: "ci"}, secure, "contoso.azurecr.io/a:1", false, ""},
		{"another host", creds, secure, "ghcr.io/contoso/fleet:1", false, ""},
		{"the registry's host over plain HTTP", creds, secure, "contoso.azurecr.io/a:1", true, ""},
		{"an insecure registry over plain HTTP", creds, schema.Registry{Host: "registry.lan:5000", Insecure: true}, "registry.lan:5000/a:1", true, "ci"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DOCKER_CONFIG", t.TempDir()) // no user credentials
			o, err := newOptions([]Option{WithLookupEnv(env(tc.env))})
			if err != nil {
				t.Fatal(err)
			}
			var nopts []name.Option
			if tc.insecure {
				nopts = append(nopts, name.Insecure)
			}
			ref, err := name.NewTag(tc.ref, nopts...)
			if err != nil {
				t.Fatal(err)
			}
			auth, err := o.keychain(tc.reg).Resolve(ref.Context())
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := auth.Authorization()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Username != tc.wantUser {
				t.Errorf("user %q, want %q", cfg.Username, tc.wantUser)
			}
		})
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

// TestVerifyRefusesStaleLock: a lock made for another registry (host or
// prefix changed since the mirror) is refused before any request, and nothing
// claims the new registry was verified.
func TestVerifyRefusesStaleLock(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	img := func(target string) lock.Image {
		return lock.Image{Source: "ghcr.io/kubereboot/kured:1.12.0", Target: target, Digest: "sha256:" + strings.Repeat("a", 64)}
	}
	for _, tc := range []struct {
		name string
		reg  schema.Registry
		img  lock.Image
	}{
		{"host changed", schema.Registry{Host: host, Insecure: true}, img("old.azurecr.io/kubereboot/kured:1.12.0")},
		{"prefix changed", schema.Registry{Host: host, Prefix: "mirror", Insecure: true}, img(host + "/kubereboot/kured:1.12.0")},
		{"layout changed", schema.Registry{Host: host, Layout: schema.LayoutPreserveHost, Insecure: true}, img(host + "/kubereboot/kured:1.12.0")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			err := Verify(context.Background(), tc.reg, []lock.Image{tc.img}, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			var se *StaleLockError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *StaleLockError", err)
			}
			if problem.IsInvalid(err) {
				t.Error("a stale lock at publish time is a runtime refusal (exit 1)")
			}
			for _, w := range []string{"made for another registry", tc.img.Target, "fleetgen mirror"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			if strings.Contains(logs.String(), "verified") {
				t.Errorf("log claims a verification:\n%s", logs.String())
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("%d requests", n)
			}
		})
	}
}
