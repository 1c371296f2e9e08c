package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestProblemCodesDocumented runs validate -o json on every fleet.yaml the
// testscripts and schema's golden cases hold (with the files beside it) and
// checks that every problem has a code docs/cli.md lists: an error made
// without a code, or with one nobody documented, fails.
func TestProblemCodesDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	_, warnings, _ := strings.Cut(string(doc), "Their codes are ") // warnings'
	warnings, _, _ = strings.Cut(warnings, ".")
	for _, m := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(warnings, -1) {
		documented[m[1]] = true
	}
	var fleets []string
	archives, _ := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	for _, a := range archives {
		ar, err := txtar.ParseFile(a)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(a), ".txtar"))
		for _, f := range ar.Files {
			p := filepath.Join(dir, filepath.FromSlash(f.Name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(f.Name, ".yaml") && bytes.Contains(f.Data, []byte("kind: Fleet")) {
				fleets = append(fleets, p)
			}
		}
	}
	golden, _ := filepath.Glob(filepath.Join("..", "..", "pkg", "schema", "testdata", "golden", "*", "fleet.yaml"))
	fleets = append(fleets, golden...)
	problems := 0
	for _, f := range fleets {
		var stdout, stderr bytes.Buffer
		run(context.Background(), []string{"validate", "-o", "json", f}, strings.NewReader(""), &stdout, &stderr)
		for _, line := range bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var r record
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("%s: %v: %s", f, err, line)
			}
			problems++
			if !documented[r.Code] {
				t.Errorf("%s: code %q is not in docs/cli.md's table: %s", f, r.Code, r.Message)
			}
		}
	}
	t.Logf("%d problems of %d fleets", problems, len(fleets))
	if len(fleets) < 50 || problems < 50 {
		t.Fatalf("checked %d problems of %d fleets: want more", problems, len(fleets))
	}
}
