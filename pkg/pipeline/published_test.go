package pipeline_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/test/testenv"
)

// quickstart is the example whose test age key and fake kubeconfigs the
// merge-job tests borrow.
var quickstart = filepath.Join("..", "..", "examples", "quickstart")

// sealedFleet is aksFleet with SOPS encryption (the quickstart's test
// recipient) and two manager-mode clusters whose kubeconfig Secrets are
// sealed; with oci, spec.source is an OCI repository of dst. It returns the
// fleet repository (committed, lock complete) and fleet.yaml's name in it.
func sealedFleet(t *testing.T, src, dst string, oci bool) string {
	t.Helper()
	pushKured(t, src)
	file := aksFleet(t, src, dst)
	repo := filepath.Dir(file)
	for _, k := range []string{"prod-eu-1.yaml", "dev-us-1.yaml"} {
		b, err := os.ReadFile(filepath.Join(quickstart, "kubeconfigs", k))
		if err != nil {
			t.Fatal(err)
		}
		testenv.WriteTree(t, repo, map[string]string{"kubeconfigs/" + k: string(b)})
	}
	testenv.ReplaceIn(t, file,
		"  images:\n", "  encryption:\n    sops:\n      ageRecipients: [age1qpmdkse4kd0sr7dzclvg8ryty8h4uap43hp0dm78qa2fq5n8syysna60a8]\n  images:\n",
		"  clusters:\n", "  clusters:\n"+
			"    - name: prod-eu-1\n      registration: {mode: manager, kubeconfig: {file: kubeconfigs/prod-eu-1.yaml}}\n"+
			"    - name: dev-us-1\n      registration: {mode: manager, kubeconfig: {file: kubeconfigs/dev-us-1.yaml}}\n")
	if oci {
		testenv.ReplaceIn(t, file,
			"    kind: git\n    url: https://github.com/contoso/aks-baseline-gitops.git\n    ref: main\n",
			"    kind: oci\n    url: oci://"+dst+"/fleet-gitops\n    ref: latest\n    insecure: true\n")
	}
	if _, err := pipeline.Mirror(context.Background(), pipeline.Config{File: file, LookupEnv: noEnv}, pipeline.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	commitAll(t, repo, "fleet")
	return repo
}

func noEnv(string) (string, bool) { return "", false }

// mergeJob runs the documented merge job, `fleetgen build -o out --publish
// --locked`, as CI does: in a fresh clone of repo, with no output folder.
func mergeJob(t *testing.T, repo, pushURL, ageKey string) {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "clone")
	testenv.Git(t, "", "clone", "--quiet", repo, clone)
	cfg := pipeline.Config{File: filepath.Join(clone, "fleet.yaml"), Locked: true, LookupEnv: noEnv, AgeKeyFile: ageKey}
	o := pipeline.BuildOptions{Publish: pipeline.PublishOptions{OutDir: filepath.Join(t.TempDir(), "out"), PushURL: pushURL}, Push: true}
	if err := pipeline.Build(context.Background(), cfg, o); err != nil {
		t.Fatal(err)
	}
}

// TestMergeJobsKeepCiphertextGit is issue 28.1 as CI runs it: two fresh clones
// of an unchanged fleet repository, two merge jobs against one bare Git
// repository, one commit; the second job verifies the published ciphertext
// with the age key. A kubeconfig change then re-seals that Secret only.
func TestMergeJobsKeepCiphertextGit(t *testing.T) {
	t.Parallel()
	src := strings.TrimPrefix(httptest.NewServer(registry.New()).URL, "http://")
	dst := strings.TrimPrefix(httptest.NewServer(registry.New()).URL, "http://")
	repo := sealedFleet(t, src, dst, false)
	bare := testenv.BareRepo(t, "gitops.git")
	key := filepath.Join(quickstart, "age.agekey")

	mergeJob(t, repo, bare, "")
	first := bareCommits(t, bare)
	mergeJob(t, repo, bare, key)
	second := bareCommits(t, bare)
	t.Logf("commits after two merge jobs of an unchanged fleet: %s, %s", first, second)
	if first != "1" || second != "1" {
		t.Fatalf("commits %s then %s, want 1 then 1: the second job re-sealed unchanged Secrets", first, second)
	}
	prodBefore := testenv.Git(t, bare, "show", "main:manager/fleet/prod-eu-1/kubeconfig.yaml")
	devBefore := testenv.Git(t, bare, "show", "main:manager/fleet/dev-us-1/kubeconfig.yaml")

	testenv.ReplaceIn(t, filepath.Join(repo, "kubeconfigs", "prod-eu-1.yaml"), "FAKE-TOKEN-prod-eu-1", "FAKE-TOKEN-prod-eu-1-rotated")
	commitAll(t, repo, "rotate prod-eu-1")
	mergeJob(t, repo, bare, "")
	if n := bareCommits(t, bare); n != "2" {
		t.Fatalf("after a kubeconfig change: %s commits, want 2", n)
	}
	if got := testenv.Git(t, bare, "show", "main:manager/fleet/prod-eu-1/kubeconfig.yaml"); got == prodBefore {
		t.Error("the changed kubeconfig kept its old ciphertext")
	}
	if got := testenv.Git(t, bare, "show", "main:manager/fleet/dev-us-1/kubeconfig.yaml"); got != devBefore {
		t.Error("the unchanged kubeconfig was re-sealed")
	}
	changed := testenv.Git(t, bare, "diff", "--name-only", "main~1", "main")
	if changed != "manager/fleet/prod-eu-1/kubeconfig.yaml" {
		t.Errorf("the rotation commit changed %q, want only prod-eu-1's Secret", changed)
	}
}

// TestMergeJobsKeepCiphertextOCI is the same with spec.source an OCI
// repository in an in-process registry: the second job finds its artifact at
// the tag already (same digest) and pushes nothing.
func TestMergeJobsKeepCiphertextOCI(t *testing.T) {
	t.Parallel()
	src := strings.TrimPrefix(httptest.NewServer(registry.New()).URL, "http://")
	dst := strings.TrimPrefix(httptest.NewServer(registry.New()).URL, "http://")
	repo := sealedFleet(t, src, dst, true)
	ref, err := name.NewTag(dst+"/fleet-gitops:latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	digest := func() string {
		d, err := remote.Head(ref)
		if err != nil {
			t.Fatal(err)
		}
		return d.Digest.String()
	}
	mergeJob(t, repo, "", "")
	first := digest()
	mergeJob(t, repo, "", filepath.Join(quickstart, "age.agekey"))
	second := digest()
	t.Logf("artifact after two merge jobs of an unchanged fleet: %s, %s", first, second)
	if first != second {
		t.Fatalf("the second merge job pushed a new artifact (%s -> %s): unchanged Secrets were re-sealed", first, second)
	}
}

// TestMergeJobForgedPublishedSecret: the published branch is untrusted. A
// push to it replaces prod-eu-1's sealed Secret with dev-us-1's ciphertext
// under prod-eu-1's names and plaintext-hash annotation. A merge job with the
// age key does not keep it: it publishes a Secret that decrypts to the
// render. (Without a key the annotation is trusted, as docs/secrets.md says.)
func TestMergeJobForgedPublishedSecret(t *testing.T) {
	t.Parallel()
	src := strings.TrimPrefix(httptest.NewServer(registry.New()).URL, "http://")
	dst := strings.TrimPrefix(httptest.NewServer(registry.New()).URL, "http://")
	repo := sealedFleet(t, src, dst, false)
	bare := testenv.BareRepo(t, "gitops.git")
	mergeJob(t, repo, bare, "")

	work := filepath.Join(t.TempDir(), "gitops")
	testenv.Git(t, "", "clone", "--quiet", bare, work)
	prodPath := filepath.Join(work, "manager", "fleet", "prod-eu-1", "kubeconfig.yaml")
	prod, dev := readFile(t, prodPath), readFile(t, filepath.Join(work, "manager", "fleet", "dev-us-1", "kubeconfig.yaml"))
	annotation := func(s string) string {
		i := strings.Index(s, "fleetgen.dev/plaintext-hash: ")
		return s[i : i+strings.IndexByte(s[i:], '\n')]
	}
	forged := strings.ReplaceAll(dev, "dev-us-1", "prod-eu-1")
	forged = strings.Replace(forged, annotation(dev), annotation(prod), 1)
	if err := os.WriteFile(prodPath, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, work, "commit", "--quiet", "-am", "forge")
	testenv.Git(t, work, "push", "--quiet", "origin", "main")

	mergeJob(t, repo, bare, filepath.Join(quickstart, "age.agekey"))
	got := testenv.Git(t, bare, "show", "main:manager/fleet/prod-eu-1/kubeconfig.yaml")
	if strings.TrimSpace(got) == strings.TrimSpace(forged) {
		t.Fatal("the merge job kept a forged published Secret although it holds the age key")
	}
	if n := bareCommits(t, bare); n != "3" {
		t.Errorf("%s commits, want 3 (publish, forgery, repair)", n)
	}
}
