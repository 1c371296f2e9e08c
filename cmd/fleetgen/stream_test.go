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
// with a # Source comment before each document. Sealed Secrets compare
// without their ciphertext (see decodeAll).
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
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var want []any
	for _, p := range paths {
		want = append(want, decodeAll(t, []byte(files[p]))...)
	}
	got := decodeAll(t, stream.Bytes())
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stream objects differ from the folder's (-folder +stream):\n%s", d)
	}
	var sources []string
	for _, m := range regexp.MustCompile(`(?m)^---\n# Source: (.+)$`).FindAllSubmatch(stream.Bytes(), -1) {
		sources = append(sources, string(m[1]))
	}
	if !slices.Equal(sources, paths) {
		t.Errorf("# Source comments %v, want the files in path order %v", sources, paths)
	}
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
