package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/verify"
	"fleetgen.dev/fleetgen/test/testenv"
)

const signedFleet = `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata:
  name: contoso
spec:
  registry:
    host: %DST%
  source:
    kind: git
    url: ssh://git@github.com/contoso/fleet-gitops.git
    ref: main
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

// signedSetup pushes to an in-process source registry contoso/app (signed by
// key, a bundle referrer) and contoso/tool (unsigned), and writes a fleet
// that mirrors images to another in-process registry under a policy for
// contoso/**. It returns the config, the source and target hosts and the
// app's digest.
func signedSetup(t *testing.T, key *testenv.Key, images ...string) (pipeline.Config, string, string) {
	t.Helper()
	newReg := func() string {
		s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	src, dst := newReg(), newReg()
	for _, repo := range []string{"contoso/app", "contoso/tool"} {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := name.NewTag(src + "/" + repo + ":1.0")
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		if repo == "contoso/app" {
			d, _ := img.Digest()
			sz, _ := img.Size()
			mt, _ := img.MediaType()
			testenv.PushBundle(t, ref.Context(), v1.Descriptor{MediaType: mt, Digest: d, Size: sz}, key.Bundle(t, testenv.CosignStatement(d)))
		}
	}
	var list strings.Builder
	for _, i := range images {
		list.WriteString("    - " + strings.ReplaceAll(i, "%SRC%", src) + "\n")
	}
	root := t.TempDir()
	testenv.WriteTree(t, root, map[string]string{
		"fleet.yaml":              strings.NewReplacer("%DST%", dst, "%SRC%", src, "%IMAGES%\n", list.String()).Replace(signedFleet),
		"keys/cosign.pub":         string(key.PublicPEM),
		"apps/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [cm.yaml]\n",
		"apps/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\n",
	})
	noEnv := func(string) (string, bool) { return "", false }
	return pipeline.Config{File: filepath.Join(root, "fleet.yaml"), LookupEnv: noEnv}, src, dst
}

// TestMirrorPublishVerified: a fleet with spec.verify mirrors its signed
// image with the signature, locks the policy and signature, validates,
// renders and publishes; publish verifies at the mirror again.
func TestMirrorPublishVerified(t *testing.T) {
	ctx := context.Background()
	key := testenv.NewKey(t)
	cfg, src, dst := signedSetup(t, key, "%SRC%/contoso/app:1.0")
	if _, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := lock.Load(filepath.Join(filepath.Dir(cfg.File), lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	img, ok := l.Image(src + "/contoso/app:1.0")
	if !ok || img.Verified == nil || img.Verified.Policy != "spec.verify[0]" {
		t.Fatalf("lock entry %+v, want it verified under spec.verify[0]", img)
	}
	if _, err := pipeline.Validate(ctx, cfg); err != nil {
		t.Fatalf("validate after mirror: %v", err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := pipeline.Render(ctx, cfg, pipeline.RenderOptions{OutDir: out}); err != nil {
		t.Fatal(err)
	}
	bare := testenv.BareRepo(t, "fleet.git")
	if _, err := pipeline.Publish(ctx, cfg, pipeline.PublishOptions{OutDir: out, PushURL: bare}); err != nil {
		t.Fatal(err)
	}

	// What clusters pull loses its signature: publish refuses, nothing pushed.
	sig, _ := name.NewDigest(dst + "/contoso/app@" + img.Verified.Signature)
	if err := remote.Delete(sig); err != nil {
		t.Fatal(err)
	}
	bare2 := testenv.BareRepo(t, "fleet2.git")
	_, err = pipeline.Publish(ctx, cfg, pipeline.PublishOptions{OutDir: out, PushURL: bare2})
	if err == nil || !strings.Contains(err.Error(), "nothing pushed") || problem.IsInvalid(err) {
		t.Fatalf("publish without the signature at the mirror: %v, want a refusal (exit 1)", err)
	}
	if refs := testenv.Git(t, bare2, "for-each-ref"); refs != "" {
		t.Errorf("pushed: %s", refs)
	}
}

// TestMirrorRefusesUnsigned: an unsigned image under the policy fails the
// mirror (exit 1) naming the image, the policy and the reason, and the lock
// keeps its bytes.
func TestMirrorRefusesUnsigned(t *testing.T) {
	ctx := context.Background()
	key := testenv.NewKey(t)
	cfg, src, _ := signedSetup(t, key, "%SRC%/contoso/app:1.0", "%SRC%/contoso/tool:1.0")
	lockPath := filepath.Join(filepath.Dir(cfg.File), lock.FileName)
	before := []byte("# an old lock\napiVersion: fleetgen.dev/v1alpha1\nkind: Lock\n")
	if err := os.WriteFile(lockPath, before, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{})
	var ve *verify.Error
	if !errors.As(err, &ve) || problem.IsInvalid(err) {
		t.Fatalf("err = %v, want a signature refusal (exit 1)", err)
	}
	for _, want := range []string{src + "/contoso/tool:1.0", "policy spec.verify[0]: no signature", "1 of 2 images not mirrored"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if after, _ := os.ReadFile(lockPath); !bytes.Equal(after, before) {
		t.Errorf("the lock changed:\n%s", after)
	}
}

// TestValidateVerifyPolicies: validate reports a glob that matches no image,
// a trusted root that does not parse, and a lock made before the policy,
// each at its place in fleet.yaml (exit 2).
func TestValidateVerifyPolicies(t *testing.T) {
	ctx := context.Background()
	key := testenv.NewKey(t)
	cfg, _, _ := signedSetup(t, key, "%SRC%/contoso/app:1.0")
	if _, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(cfg.File)
	good, err := os.ReadFile(cfg.File)
	if err != nil {
		t.Fatal(err)
	}
	testenv.ReplaceIn(t, cfg.File, `    - images: ["`, `    - images: ["ghcr.io/contoso/typo/**"]
      cosign:
        identities: [{issuer: "https://accounts.google.com", subject: a@contoso.example}]
        trustedRoot: {file: keys/root.json}
    - images: ["`)
	testenv.WriteTree(t, dir, map[string]string{"keys/root.json": `{"mediaType": "MARKER"}`})
	_, err = pipeline.Validate(ctx, cfg)
	if !problem.IsInvalid(err) {
		t.Fatalf("err = %v, want input errors", err)
	}
	for _, want := range []string{
		`fleet.yaml:18:29: spec.verify[0].cosign.trustedRoot.file: "keys/root.json" does not parse as a trusted root`,
		`fleet.yaml:15:16: spec.verify[0].images[0]: "ghcr.io/contoso/typo/**" matches no image of the fleet`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("validate does not say %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "MARKER") {
		t.Errorf("validate quotes the trusted root: %v", err)
	}

	// The policy changes (a second key) after the lock was written.
	testenv.WriteTree(t, dir, map[string]string{"fleet.yaml": strings.Replace(string(good), "keys: [{file: keys/cosign.pub}]", "keys: [{file: keys/cosign.pub}, {file: keys/other.pub}]", 1),
		"keys/other.pub": string(testenv.NewKey(t).PublicPEM)})
	_, err = pipeline.Validate(ctx, cfg)
	if !problem.IsInvalid(err) || !strings.Contains(err.Error(), "spec.verify[0]: 1 image(s) this policy covers are locked without a signature verified under it (the policy is new or changed): run `fleetgen mirror`") {
		t.Errorf("validate with a changed policy: %v", err)
	}
	if _, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Validate(ctx, cfg); err != nil {
		t.Errorf("validate after mirror: %v", err)
	}
}

// TestDiffShowsPolicyChange: a change to spec.verify that mirror has not
// applied shows per image in diff (manager changes), and none shows when
// the lock matches the policy.
func TestDiffShowsPolicyChange(t *testing.T) {
	ctx := context.Background()
	key := testenv.NewKey(t)
	cfg, src, _ := signedSetup(t, key, "%SRC%/contoso/app:1.0")
	if _, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	ro := pipeline.RenderOptions{OutDir: filepath.Join(t.TempDir(), "out")}
	if err := pipeline.Render(ctx, cfg, ro); err != nil {
		t.Fatal(err)
	}
	rep, _, err := pipeline.Diff(ctx, cfg, ro)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Manager.Changes) != 0 {
		t.Errorf("changes with the lock verified under the policy: %+v", rep.Manager.Changes)
	}
	testenv.ReplaceIn(t, cfg.File, "keys: [{file: keys/cosign.pub}]", "keys: [{file: keys/cosign.pub}, {file: keys/other.pub}]")
	testenv.WriteTree(t, filepath.Dir(cfg.File), map[string]string{"keys/other.pub": string(testenv.NewKey(t).PublicPEM)})
	rep, _, err = pipeline.Diff(ctx, cfg, ro)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Manager.Changes) != 1 {
		t.Fatalf("manager changes %+v, want one", rep.Manager.Changes)
	}
	ch := rep.Manager.Changes[0]
	if ch.Field != "images["+src+"/contoso/app:1.0].verified" || !strings.HasPrefix(ch.From, "spec.verify[0] policy sha256:") ||
		!strings.Contains(ch.From, " signature sha256:") || !strings.HasSuffix(ch.To, "(not verified yet: run `fleetgen mirror`)") || ch.From == ch.To {
		t.Errorf("change %+v", ch)
	}
}

// TestVerifyInPlace: `fleetgen verify` checks, copying nothing, what mirror
// checks at the source (a signed image verifies, an unsigned one is refused
// with the policy and the reason) and, after a mirror, what publish checks
// at the mirror (the locked signature there; refused once it is deleted).
// mirror --dry-run reports the same verdicts at the source and fails as the
// mirror would, leaving the lock and the mirror as they were.
func TestVerifyInPlace(t *testing.T) {
	ctx := context.Background()
	key := testenv.NewKey(t)
	cfg, src, dst := signedSetup(t, key, "%SRC%/contoso/app:1.0", "%SRC%/contoso/tool:1.0")
	lockPath := filepath.Join(filepath.Dir(cfg.File), lock.FileName)

	vs, err := pipeline.Verify(ctx, cfg, pipeline.VerifyOptions{})
	var fe *pipeline.VerifyError
	if !errors.As(err, &fe) || fe.Refused != 1 || fe.Total != 2 || problem.IsInvalid(err) {
		t.Fatalf("verify at the source: %v, want 1 of 2 refused (exit 1)", err)
	}
	if len(vs) != 2 || vs[0].Image != src+"/contoso/app:1.0" || vs[0].Reason != "" || vs[0].Signature == "" ||
		vs[1].Image != src+"/contoso/tool:1.0" || vs[1].Reason != string(verify.NoSignature) || vs[1].Policy != "spec.verify[0]" {
		t.Fatalf("verdicts %+v", vs)
	}
	res, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{DryRun: true})
	if !errors.As(err, &fe) || res == nil || len(res.Plan) != 2 || len(res.Verdicts) != 2 || res.Verdicts[1].Reason == "" {
		t.Fatalf("mirror --dry-run: %+v, %v; want the plan and the refusal", res, err)
	}
	if _, err := os.Stat(lockPath); !os.IsNotExist(err) {
		t.Errorf("the dry run wrote the lock: %v", err)
	}
	if tags, err := remote.List(mustRepo(t, dst+"/contoso/app")); err == nil && len(tags) > 0 {
		t.Errorf("the dry run copied: %v", tags)
	}

	// The unsigned image leaves the fleet; mirror; verify at the mirror.
	testenv.ReplaceIn(t, cfg.File, "    - "+src+"/contoso/tool:1.0\n", "")
	if _, err := pipeline.Mirror(ctx, cfg, pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	vs, err = pipeline.Verify(ctx, cfg, pipeline.VerifyOptions{At: pipeline.AtMirror})
	if err != nil || len(vs) != 1 || vs[0].Reason != "" || !strings.HasPrefix(vs[0].At, dst+"/contoso/app@sha256:") {
		t.Fatalf("verify at the mirror: %+v, %v", vs, err)
	}
	sig, _ := name.NewDigest(dst + "/contoso/app@" + vs[0].Signature)
	if err := remote.Delete(sig); err != nil {
		t.Fatal(err)
	}
	vs, err = pipeline.Verify(ctx, cfg, pipeline.VerifyOptions{At: pipeline.AtMirror})
	if !errors.As(err, &fe) || len(vs) != 1 || vs[0].Reason != string(verify.NoSignature) {
		t.Fatalf("verify at the mirror without the signature: %+v, %v", vs, err)
	}
	if _, err := pipeline.Verify(ctx, cfg, pipeline.VerifyOptions{At: "elsewhere"}); !problem.IsInvalid(err) {
		t.Errorf("--at elsewhere: %v, want a usage error", err)
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
