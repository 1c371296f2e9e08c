package schema

import (
	"strings"
	"testing"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// TestSyntaxErrorPosition checks the line and column derived from yaml.v3's
// syntax errors, which carry a line (not always the mistake's) and no column.
func TestSyntaxErrorPosition(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		yaml      string
		line, col int
		msg       string
	}{
		"tab indentation":          {"a: 1\nb:\n\t- x\n", 3, 1, "a tab"},
		"tab after a scalar":       {"a:\n  b: 1\n\tc: 2\n", 3, 1, "a tab"},
		"unclosed double quote":    {"a: 1\nb: \"x\nc: 2\n", 2, 4, "quoted string that opens here"},
		"unclosed single quote":    {"a: 'x\nb: 1\n", 1, 4, "quoted string that opens here"},
		"second colon, line one":   {"a: b: c\n", 1, 5, "mapping values are not allowed"},
		"second colon, line two":   {"x: 1\n  a: b: c\n", 2, 7, "mapping values are not allowed"},
		"key under a scalar":       {"a:\n  b: 1\n    c: 2\n", 3, 6, "mapping values are not allowed"},
		"key indented too deep":    {"a:\n  - b: {x: 1}\n      c: 2\n", 3, 7, "did not find expected key (in the block that starts on line 2)"},
		"item indented too little": {"a:\n  b:\n    - 1\n   - 2\n", 4, 4, "did not find expected key"},
		"unclosed flow sequence":   {"a: [1, 2\nb: 3\n", 1, 4, "flow sequence that opens here"},
		"unclosed flow mapping":    {"x: 1\na: {b: 1\nc: 2\n", 2, 4, "flow mapping that opens here"},
		"duplicate key":            {"apiVersion: x\nkind: Fleet\napiVersion: y\n", 3, 1, `duplicate key "apiVersion" (first at line 1)`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("fleet.yaml", []byte(tc.yaml))
			errs, ok := err.(problem.Errors)
			if !ok || len(errs) == 0 {
				t.Fatalf("Parse: %v, want a syntax error", err)
			}
			e := errs[0]
			if e.Line != tc.line || e.Column != tc.col || !strings.Contains(e.Msg, tc.msg) {
				t.Errorf("got %d:%d %s, want %d:%d …%s…", e.Line, e.Column, e.Msg, tc.line, tc.col, tc.msg)
			}
		})
	}
}

// TestSyntaxErrorLargeFile: past strictyaml's maxSearch (256 KiB) no prefix
// is parsed again; the error names the line yaml.v3 names, where the broken
// block began.
func TestSyntaxErrorLargeFile(t *testing.T) {
	t.Parallel()
	data := append(fleetYAML(3000), "   - name: bad\n"...)
	if len(data) <= 256<<10 {
		t.Fatalf("fixture is %d bytes: want more than 256 KiB", len(data))
	}
	_, err := Parse("fleet.yaml", data)
	errs, ok := err.(problem.Errors)
	if !ok || len(errs) != 1 {
		t.Fatalf("Parse: %v, want one syntax error", err)
	}
	if e := errs[0]; e.Line != 5 || e.Column != 3 || !strings.Contains(e.Msg, "(in the block that starts here)") {
		t.Errorf("got %d:%d %s, want 5:3 in the block that starts here", e.Line, e.Column, e.Msg)
	}
}
