package examples_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/pipeline"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/test/crdcheck"
	"fleetgen.dev/fleetgen/test/testenv"
)

var update = flag.Bool("update", false, "rewrite each example's fleet.lock.yaml with placeholder digests")

// examples returns the folders holding a fleet.yaml, sorted.
func examples(t testing.TB) []string {
	t.Helper()
	matches, err := filepath.Glob("*/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range matches {
		out = append(out, filepath.Dir(m))
	}
	sort.Strings(out)
	if len(out) < 5 {
		t.Fatalf("found %d examples, want at least 5", len(out))
	}
	return out
}

// TestExamples loads, validates and renders every example with the real
// pipeline (in a copy, so the example stays as committed), without
// --allow-plaintext-secrets, and checks that the committed lock is complete and
// the render byte-stable.
func TestExamples(t *testing.T) {
	if *update {
		for _, name := range examples(t) {
			updateLock(t, name)
		}
	}
	for _, name := range examples(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := copyDir(t, name)
			cfg, ro := pipeline.Config{File: filepath.Join(dir, "fleet.yaml")}, pipeline.RenderOptions{OutDir: filepath.Join(dir, "out")}
			lockPath := filepath.Join(dir, lock.FileName)
			lockBefore, err := os.ReadFile(lockPath)
			if err != nil {
				t.Fatalf("every example commits its lock: %v", err)
			}

			if _, err := pipeline.Validate(ctx, cfg); err != nil {
				t.Fatalf("validate: %v", err)
			}
			f, err := schema.Load(cfg.File, schema.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			l, err := lock.Parse(lockBefore)
			if err != nil {
				t.Fatal(err)
			}
			for _, img := range wantImages(t, f) {
				if _, ok := l.Image(img); !ok {
					t.Errorf("%s is not in %s (go test ./examples -update)", img, lock.FileName)
				}
			}

			diff, err := pipeline.Check(ctx, cfg, ro)
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			if strings.Contains(diff, lock.FileName) {
				t.Errorf("the committed lock lacks client IDs:\n%s", diff)
			}
			if err := pipeline.Render(ctx, cfg, ro); err != nil {
				t.Fatalf("render: %v", err)
			}
			if _, err := os.Stat(filepath.Join(ro.OutDir, "clusters", f.Spec.Manager.Name, "manager.yaml")); err != nil {
				t.Errorf("no entry point for the manager: %v", err)
			}
			first := readTree(t, ro.OutDir)
			validateObjects(t, first)
			// A re-render and --check see nothing to do.
			if err := pipeline.Render(ctx, cfg, ro); err != nil {
				t.Fatalf("second render: %v", err)
			}
			if diff := cmp.Diff(first, readTree(t, ro.OutDir)); diff != "" {
				t.Errorf("second render changed the tree (-first +second):\n%s", diff)
			}
			if diff, err := pipeline.Check(ctx, cfg, ro); err != nil || diff != "" {
				t.Errorf("check after render: %v\n%s", err, diff)
			}
			lockAfter, err := os.ReadFile(lockPath)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(lockBefore, lockAfter) {
				t.Errorf("render changed the committed lock:\n%s", cmp.Diff(string(lockBefore), string(lockAfter)))
			}
		})
	}
}

// wantImages is every image the example needs: spec.images and what its layers
// use.
func wantImages(t testing.TB, f *schema.Fleet) []string {
	t.Helper()
	m, err := layers.Load(f, layers.DefaultOptions())
	if err != nil {
		t.Fatalf("build layers: %v", err)
	}
	found, err := images.Discover(f, m)
	if err != nil {
		t.Fatalf("discover images: %v", err)
	}
	set := map[string]bool{}
	for _, u := range found.Images {
		set[u.Ref] = true
	}
	for _, ref := range f.Spec.Images {
		n, err := lock.Normalize(ref)
		if err != nil {
			t.Fatal(err)
		}
		set[n] = true
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

var imageLine = regexp.MustCompile(`(?m)^\s*(?:-\s+)?image:\s*["']?([^"'\s#]+)`)

// updateLock rewrites name/fleet.lock.yaml: every image the example uses
// (found by images.Discover and by a plain scan of its manifests) with a
// placeholder digest, sha256 of the normalised source reference, since digests
// cannot be fetched offline; and a client ID for every agent cluster with
// clientID auto, kept when the lock has one.
func updateLock(t testing.TB, name string) {
	t.Helper()
	f, err := schema.Load(filepath.Join(name, "fleet.yaml"), schema.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Load(filepath.Join(name, lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]bool{}
	for _, r := range wantImages(t, f) {
		refs[r] = true
	}
	err = filepath.WalkDir(name, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		if base := filepath.Base(p); base == "fleet.yaml" || base == lock.FileName || strings.Contains(p, "kubeconfigs") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range imageLine.FindAllSubmatch(b, -1) {
			n, err := lock.Normalize(string(m[1]))
			if err != nil {
				return err
			}
			refs[n] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var imgs []lock.Image
	for ref := range refs {
		sum := sha256.Sum256([]byte(ref))
		imgs = append(imgs, lock.Image{Source: ref, Target: target(f.Spec.Registry, ref), Digest: "sha256:" + hex.EncodeToString(sum[:])})
	}
	l.SetImages(imgs)
	var auto []string
	for _, c := range f.Spec.Clusters {
		if c.Registration.Mode == schema.ModeAgent && (c.Registration.ClientID == "" || c.Registration.ClientID == "auto") {
			auto = append(auto, c.Name)
		}
	}
	// Deterministic bytes for the examples, a different 32 for each block (a
	// repeated seed gave the first and third cluster one client ID); a real
	// render reads crypto/rand.
	var stream []byte
	for i := 0; i < 64; i++ {
		sum := sha256.Sum256([]byte(fmt.Sprintf("fleetgen example client IDs %s %d", f.Metadata.Name, i)))
		stream = append(stream, sum[:]...)
	}
	if _, err := l.AssignClientIDs(auto, bytes.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if err := lock.Write(filepath.Join(name, lock.FileName), l); err != nil {
		t.Fatal(err)
	}
}

// target is where mirror puts ref (SPEC §4): strip-host drops the source
// registry, preserve-host keeps it as the first path element.
func target(reg schema.Registry, ref string) string {
	host, rest, _ := strings.Cut(ref, "/")
	if reg.Layout == schema.LayoutPreserveHost {
		rest = host + "/" + rest
	}
	if reg.Prefix != "" {
		rest = strings.Trim(reg.Prefix, "/") + "/" + rest
	}
	return reg.Host + "/" + rest
}

// copyDir copies the example folder into a temporary one, without its
// testdata and a render of it.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	return testenv.CopyTree(t, src, "testdata", "out")
}

// readTree reads a rendered tree without fleetgen's own .fleetgen/.
func readTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	return testenv.ReadTree(t, dir, ".fleetgen")
}

var sealed = regexp.MustCompile(`(?m)^sops:`)

// validateObjects checks every object of a rendered tree against the
// upstream CRDs (Fleet kinds against v0.16.1 and v0.13.15 both) or strict
// core types. Sealed Secrets are left to pkg/secrets' tests: their data is
// SOPS ciphertext, not base64, until Flux decrypts it.
func validateObjects(t testing.TB, tree map[string]string) {
	t.Helper()
	n := 0
	for p, data := range tree {
		// Helm values, kustomize files and .sops.yaml (SOPS' own config)
		// are not Kubernetes objects.
		if strings.HasPrefix(p, "agents/") || strings.HasSuffix(p, "kustomization.yaml") || strings.HasPrefix(filepath.Base(p), ".") {
			continue
		}
		for _, doc := range crdcheck.SplitDocuments([]byte(data)) {
			if sealed.Match(doc) {
				continue
			}
			n++
			if err := crdcheck.Validate(doc); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}
	}
	if n == 0 {
		t.Error("no object validated")
	}
}
