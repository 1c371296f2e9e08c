package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"fleetgen.dev/fleetgen/test/testenv"
)

// TestRenderStream checks that `render -o -` is one YAML stream that a YAML
// parser reads back into the objects of the folder render, in path order,
// with a # Source comment before each document, and that the files that are
// not Kubernetes objects (kustomization.yaml, .sops.yaml, agent values) are
// left out and named in the closing comment. Sealed Secrets compare without
// their ciphertext (see decodeAll).
func TestRenderStream(t *testing.T) {
	t.Parallel()
	dir := testenv.CopyTree(t, filepath.Join("..", "..", "examples", "quickstart"), ".fleetgen")
	out := filepath.Join(t.TempDir(), "out")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"render", "-q", "-f", dir, "-o", out}, nil, io.Discard, &stderr); code != 0 {
		t.Fatalf("render -o out: exit %d: %s", code, stderr.String())
	}
	var stream bytes.Buffer
	if code := run(context.Background(), []string{"render", "-q", "-f", dir, "-o", "-"}, nil, &stream, &stderr); code != 0 {
		t.Fatalf("render -o -: exit %d: %s", code, stderr.String())
	}

	files := testenv.ReadTree(t, out, ".fleetgen")
	var paths, left []string
	for p := range files {
		if isObjectFile(t, []byte(files[p])) {
			paths = append(paths, p)
		} else {
			left = append(left, p)
		}
	}
	sort.Strings(paths)
	sort.Strings(left)
	if want := []string{".sops.yaml", "agents/edge-1/values.yaml", "agents/edge-2/values.yaml", "manager/kustomization.yaml"}; !slices.Equal(left, want) {
		t.Fatalf("non-object files of the quickstart %v, want %v", left, want)
	}
	var want []any
	for _, p := range paths {
		want = append(want, decodeAll(t, []byte(files[p]))...)
	}
	got := decodeAll(t, stream.Bytes())
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stream objects differ from the folder's object files (-folder +stream):\n%s", d)
	}
	var sources []string
	for _, m := range regexp.MustCompile(`(?m)^---\n# Source: (.+)$`).FindAllSubmatch(stream.Bytes(), -1) {
		sources = append(sources, string(m[1]))
	}
	if !slices.Equal(sources, paths) {
		t.Errorf("# Source comments %v, want the object files in path order %v", sources, paths)
	}
	var named []string
	for _, m := range regexp.MustCompile(`(?m)^#   (.+)$`).FindAllSubmatch(stream.Bytes(), -1) {
		named = append(named, string(m[1]))
	}
	if !slices.Equal(named, left) {
		t.Errorf("closing comment names %v, want the files left out %v", named, left)
	}
}

// TestRenderStreamObjectsOnly renders every example with `render -o -` and
// checks that every document of the stream is a Kubernetes object (apiVersion,
// kind, metadata.name), as kubeconform and kubectl apply need (SPEC §2).
func TestRenderStreamObjectsOnly(t *testing.T) {
	t.Parallel()
	fleets, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "fleet.yaml"))
	if err != nil || len(fleets) < 5 {
		t.Fatalf("examples: %v %v", fleets, err)
	}
	for _, fleet := range fleets {
		name := filepath.Base(filepath.Dir(fleet))
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := testenv.CopyTree(t, filepath.Dir(fleet), ".fleetgen")
			var stream, stderr bytes.Buffer
			if code := run(context.Background(), []string{"render", "-q", "-f", dir, "-o", "-"}, nil, &stream, &stderr); code != 0 {
				t.Fatalf("render -o -: exit %d: %s", code, stderr.String())
			}
			dec := yaml.NewDecoder(bytes.NewReader(stream.Bytes()))
			n := 0
			for {
				var doc map[string]any
				err := dec.Decode(&doc)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("document %d: %v", n, err)
				}
				md, _ := doc["metadata"].(map[string]any)
				if s, _ := doc["apiVersion"].(string); s == "" {
					t.Errorf("document %d has no apiVersion: %v", n, keys(doc))
				}
				if s, _ := doc["kind"].(string); s == "" {
					t.Errorf("document %d has no kind: %v", n, keys(doc))
				}
				if s, _ := md["name"].(string); s == "" {
					t.Errorf("document %d has no metadata.name: %v", n, keys(doc))
				}
				n++
			}
			if n == 0 {
				t.Fatal("the stream holds no object")
			}
			t.Logf("%d objects", n)
		})
	}
}

// isObjectFile reports whether every document of a rendered file is a
// Kubernetes object.
func isObjectFile(t *testing.T, b []byte) bool {
	t.Helper()
	for _, d := range decodeAll(t, b) {
		m, _ := d.(map[string]any)
		md, _ := m["metadata"].(map[string]any)
		if m["apiVersion"] == nil || m["kind"] == nil || md["name"] == nil {
			return false
		}
	}
	return true
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func decodeAll(t *testing.T, b []byte) []any {
	t.Helper()
	var docs []any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		// SOPS seals afresh each run (random data key and nonce): a sealed
		// Secret compares without its ciphertext and its salted hash.
		if m, ok := v.(map[string]any); ok && m["sops"] != nil {
			delete(m, "sops")
			delete(m, "data")
			delete(m["metadata"].(map[string]any), "annotations")
		}
		docs = append(docs, v)
	}
}
