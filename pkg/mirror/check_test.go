package mirror_test

import (
	"context"
	"errors"
	"log/slog"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/testenv"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestCheck: Check passes when every locked image is at its digest and
// names each one missing, or at another digest, sorted.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	host := inProcess(t)
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

	if err := mirror.Check(ctx, reg, []lock.Image{a, b}); err != nil {
		t.Errorf("all present: %v", err)
	}
	if err := mirror.Check(ctx, reg, nil); err != nil {
		t.Errorf("no images: %v", err)
	}
	err := mirror.Check(ctx, reg, []lock.Image{missing, a, wrongDigest, b}, mirror.WithJobs(2))
	var me *mirror.MissingError
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

// TestCheckRefusesStaleLock: a lock made for another registry (host or
// prefix changed since the mirror) is refused before any request, and nothing
// claims the new registry holds the images.
func TestCheckRefusesStaleLock(t *testing.T) {
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
			err := mirror.Check(context.Background(), tc.reg, []lock.Image{tc.img}, mirror.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			var se *mirror.StaleLockError
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
			if strings.Contains(logs.String(), "holds") {
				t.Errorf("log claims the registry holds them:\n%s", logs.String())
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("%d requests", n)
			}
		})
	}
}

// TestCheckRefusesDeletedSignature: a signature deleted from the mirror
// after `mirror` fails Check, naming the image and the artifact type, and
// quoting no credential.
func TestCheckRefusesDeletedSignature(t *testing.T) {
	t.Parallel()
	src, dst := inProcess(t), inProcess(t)
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
	creds := mirror.WithTargetCredentials("ci", secret)
	if err := mirror.Check(context.Background(), reg, entries, creds); err != nil {
		t.Fatalf("Check of a whole mirror: %v", err)
	}
	sig, err := name.NewDigest(dst + "/team/app@" + chain.Signature.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Delete(sig); err != nil {
		t.Fatal(err)
	}
	err = mirror.Check(context.Background(), reg, entries, creds)
	var missing *mirror.MissingError
	if !errors.As(err, &missing) {
		t.Fatalf("Check with the signature deleted: %v, want *MissingError", err)
	}
	want := dst + "/team/app@" + chain.Index.String() + ": referrer " + chain.Signature.String() + " (" + testenv.CosignSignatureType + ")"
	if len(missing.Images) != 1 || missing.Images[0] != want {
		t.Errorf("missing %q, want [%s]", missing.Images, want)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("message quotes the password: %v", err)
	}
}

// TestCheckQuotesTheLock: the lock comes from pull requests, and publish's
// refusal names what it lacks: a referrer's artifact type, a stale entry's
// source and target are quoted (internal/inert), so that none starts a CI
// workflow command or a line of its own (issue 38: publish quoted a lock
// referrer's artifactType as it was).
func TestCheckQuotesTheLock(t *testing.T) {
	ctx := context.Background()
	host := inProcess(t)
	reg := schema.Registry{Host: host, Insecure: true}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.NewTag(host+"/library/a:1", name.Insecure)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	evil := "x\n::error::pwned\r##[error]x"
	entry := lock.Image{Source: "docker.io/library/a:1", Target: host + "/library/a:1", Digest: d.String(),
		Referrers: []lock.Referrer{{Digest: "sha256:" + strings.Repeat("e", 64), ArtifactType: evil}}}
	stale := lock.Image{Source: "docker.io/library/b:1", Target: "evil.example/b:1\n::error::pwned", Digest: d.String()}
	for name, images := range map[string][]lock.Image{"referrer": {entry}, "stale": {stale}} {
		err := mirror.Check(ctx, reg, images)
		if err == nil {
			t.Fatalf("%s: the check passed", name)
		}
		if msg := err.Error(); strings.Contains(msg, "\n::") || strings.Contains(msg, "\r") || strings.Contains(msg, "\n##[") {
			t.Errorf("%s: the lock's text is in the message as it is: %q", name, msg)
		}
	}
}
