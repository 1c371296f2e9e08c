package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestCIWorkflows parses the CI files docs/ci.md ships (YAML) and checks that
// every fleetgen command line in them parses with the real CLI: the command
// exists, every flag exists and takes the value given, the arguments fit.
func TestCIWorkflows(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "ci", "*.yml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want the three workflow files in docs/ci, got %v (%v)", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var doc yaml.Node
			if err := yaml.Unmarshal(b, &doc); err != nil {
				t.Fatalf("not YAML: %v", err)
			}
			lines := fleetgenLines(&doc)
			t.Logf("command lines: %q", lines)
			if len(lines) == 0 {
				t.Fatal("no fleetgen command line found")
			}
			for _, line := range lines {
				if err := parseCommandLine(line); err != nil {
					t.Errorf("%q: %v", line, err)
				}
			}
		})
	}
}

// fleetgenCall is a fleetgen command: at the start of a line or after a shell
// operator or `then`, not the word inside a sentence (a step name, a message).
var fleetgenCall = regexp.MustCompile(`(^\s*|[;(|&]\s*|then\s+)fleetgen\s[^;|>&)]*`)

// fleetgenLines returns every fleetgen invocation in the scalars of n, cut at
// the first shell operator (;, |, >, &, )).
func fleetgenLines(n *yaml.Node) []string {
	var out []string
	if n.Kind == yaml.ScalarNode {
		for _, l := range strings.Split(n.Value, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "#") {
				continue
			}
			l = strings.ReplaceAll(l, "<!-- fleetgen diff -->", "") // the comment marker
			for _, m := range fleetgenCall.FindAllString(l, -1) {
				m = strings.TrimLeft(m, ";(|& \t")
				m = strings.TrimPrefix(m, "then")
				out = append(out, strings.TrimSpace(m))
			}
		}
	}
	for _, c := range n.Content {
		out = append(out, fleetgenLines(c)...)
	}
	return out
}

// parseCommandLine parses line ("fleetgen cmd args…") as the CLI would,
// without running the command, and checks what RunE checks first (-o).
func parseCommandLine(line string) error {
	var args []string
	for _, w := range strings.Fields(line)[1:] {
		w = strings.Trim(w, `"'`)
		if strings.Contains(w, "$") {
			w = "https://example.invalid/x.git" // a variable: any value
		}
		args = append(args, w)
	}
	g := &globals{errFormat: formatText}
	root := newRoot(g, nil, io.Discard, io.Discard)
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if cmd == root {
		return errUnknown(args)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return err
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return err
	}
	if f := cmd.Flags().Lookup("dir"); f != nil {
		if err := checkOutFlag(cmd, f.Value.String(), cmd.Name() == "render"); err != nil {
			return err
		}
	}
	if f := cmd.Flags().Lookup("output"); f != nil && cmd.Name() != "validate" {
		valid := []string{formatText, formatGitHub}
		if cmd.Name() == "diff" {
			valid = append(valid, formatMarkdown, formatJSON)
		}
		if err := checkFormat(cmd, f.Value.String(), valid...); err != nil {
			return err
		}
	}
	return nil
}

func errUnknown(args []string) error {
	return usagef("no fleetgen command in %q", strings.Join(args, " "))
}
