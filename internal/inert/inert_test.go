package inert

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fleetgen.dev/fleetgen/test/testenv"
)

// attacks are strings a pull request can put in a name, a value or a file.
var attacks = map[string]string{
	"CR":               "ok\r::error::forged",
	"LF":               "ok\n::error::forged",
	"CRLF":             "ok\r\n::warning::forged",
	"ESC":              "\x1b[2J\x1b]0;title\x07",
	"C0":               "a\x00b\x01c\x7f",
	"C1":               "a\u0085b\u009bc",
	"bidi override":    "edge-1\u202e2-egde",
	"bidi isolate":     "a\u2066b\u2069",
	"zero width":       "edge\u200b-1\u200d\ufeff",
	"tag characters":   "a\U000e0041",
	"nbsp":             "a\u00a0b",
	"line separator":   "a\u2028::error::x",
	"V2 command":       "::error::forged",
	"V2 after spaces":  "   ::add-mask::x",
	"V1 mid-line":      "name ##[error]forged",
	"V1 nested":        "###[warning]x",
	"stop-commands":    "::stop-commands::x",
	"backslash":        `\u202e`,
	"invalid UTF-8":    "a\xffb\xc0",
	"backticks":        "a```b`",
	"markdown link":    "[x](https://evil.example) ![i](https://evil.example/i.png) <img src=x> @octocat",
	"forged no change": "x\nfleetgen diff: no changes",
	"percent":          "%0A::error::x%25",
}

// TestTextInert: for every attack, Text is printable ASCII without a line
// break, starts no workflow command, and differs for different inputs.
func TestTextInert(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for name, s := range attacks {
		out := Text(s)
		checkInert(t, name, out)
		if strings.ContainsAny(out, "\n\r") {
			t.Errorf("%s: Text(%q) = %q holds a line break", name, s, out)
		}
		if cmds := testenv.WorkflowCommands("  " + out + "\n"); len(cmds) > 0 {
			t.Errorf("%s: Text(%q) = %q starts %v", name, s, out, cmds)
		}
		if other, ok := seen[out]; ok {
			t.Errorf("%q and %q both read %q", s, other, out)
		}
		seen[out] = s
	}
}

// TestTextExamples pins the escapes a person reads.
func TestTextExamples(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"edge-1":            "edge-1",
		"edge\u202e1":       `edge\u202e1`,
		"a\x1b[31m":         `a\x1b[31m`,
		"a\r\nb":            `a\r\nb`,
		`a\b`:               `a\\b`,
		"  ::error::x":      `  \x3a:error::x`,
		"a ::error::x":      "a ::error::x",
		"x ##[error]y":      `x #\x23[error]y`,
		"caf\u00e9":         `caf\u00e9`,
		"\U0001f600":        `\U0001f600`,
		"\xff":              `\xff`,
		"fleet-default/web": "fleet-default/web",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestQuote: plain tokens stay bare; anything else is quoted, so a value
// never reads as a marker, a list or an arrow.
func TestQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"us":                              "us",
		"./apps/dev":                      "./apps/dev",
		"r.example/podinfo@sha256:ab":     "r.example/podinfo@sha256:ab",
		"images[ghcr.io/x]":               "images[ghcr.io/x]",
		"(generated at render)":           `"(generated at render)"`,
		"(set)":                           `"(set)"`,
		"a, b":                            `"a, b"`,
		"a -> b":                          `"a -> b"`,
		"":                                `""`,
		`say "hi"`:                        `"say \"hi\""`,
		"::error::x":                      `"\x3a:error::x"`,
		"-x":                              `"-x"`,
		"edge\u200b1":                     `"edge\u200b1"`,
		strings.Repeat("a", 513):          `"` + strings.Repeat("a", 513) + `"`,
		"fleetgen diff: no changes":       `"fleetgen diff: no changes"`,
		"https://fleet.example.com:6443/": "https://fleet.example.com:6443/",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBlock: a quoted block runs under stop-commands with a token derived
// from it: the same block gives the same bytes, another block another token,
// and nothing inside runs, even a line that names the token's form.
func TestBlock(t *testing.T) {
	t.Parallel()
	var all strings.Builder
	for _, s := range attacks {
		all.WriteString(s + "\n")
	}
	block := all.String() + "::fleetgen-0123::\n##[fleetgen-abc]\n"
	out := Block(block)
	if out != Block(block) {
		t.Error("Block is not deterministic")
	}
	checkInert(t, "block", out)
	cmds := testenv.WorkflowCommands(out)
	if len(cmds) != 2 || cmds[0].Name != "stop-commands" || !strings.EqualFold(cmds[1].Name, cmds[0].Data) {
		t.Errorf("commands %+v, want only the stop-commands pair", cmds)
	}
	if cmds := testenv.WorkflowCommands(Lines(block)); len(cmds) != 0 {
		t.Errorf("Lines alone lets %+v through", cmds)
	}
	if Block("a\n") == Block("b\n") {
		t.Error("two blocks share a token")
	}
	if Block("") != "" {
		t.Error("an empty block prints")
	}
}

// TestCommand: whatever the message and properties hold, the line is one
// command with fleetgen's name.
func TestCommand(t *testing.T) {
	t.Parallel()
	for name, s := range attacks {
		out := Command("warning", []Prop{{"file", s}, {"title", s}}, s)
		checkInert(t, name, out)
		if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
			t.Errorf("%s: %q is not one line", name, out)
		}
		cmds := testenv.WorkflowCommands(out)
		if len(cmds) != 1 || cmds[0].Name != "warning" {
			t.Errorf("%s: commands %+v, want one warning", name, cmds)
		}
		props := out[len("::warning ") : len(out)-len(Data(s))-3]
		if strings.Count(props, ",") != 1 || strings.Contains(props, "::") {
			t.Errorf("%s: properties %q let a value out", name, props)
		}
	}
}

// TestCode: a code span ends where Code ends it.
func TestCode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"x":         "`x`",
		"a`b":       "``a`b``",
		"``a":       "``` ``a ```",
		"a ":        "` a  `",
		"":          "` `",
		"[l](u) @m": "`[l](u) @m`",
	} {
		if got := Code(in); got != want {
			t.Errorf("Code(%q) = %q, want %q", in, got, want)
		}
	}
	for name, s := range attacks {
		checkInert(t, name, Code(s))
	}
}

// TestJSON: ASCII only, no "##[", and a reader decodes the same value.
func TestJSON(t *testing.T) {
	t.Parallel()
	for name, s := range attacks {
		for _, indent := range []string{"", "  "} {
			b, err := JSON(map[string]string{s: s}, indent)
			if err != nil {
				t.Fatal(err)
			}
			checkInert(t, name, string(b))
			var back map[string]string
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want := strings.ToValidUTF8(s, "\ufffd")
			if d := cmp.Diff(map[string]string{want: want}, back); d != "" {
				t.Errorf("%s: round trip (-want +got):\n%s", name, d)
			}
		}
	}
}

// checkInert fails when out holds a byte outside printable ASCII and LF, or a
// legacy command prefix.
func checkInert(t *testing.T, name, out string) {
	t.Helper()
	for i := 0; i < len(out); i++ {
		if c := out[i]; (c < 0x20 && c != '\n') || c >= 0x7f {
			t.Errorf("%s: byte %#x at %d in %q", name, c, i, out)
			return
		}
	}
	if strings.Contains(out, "##[") {
		t.Errorf("%s: %q holds ##[", name, out)
	}
}

// TestProse: fleetgen's own messages keep … and → and a backslash (their
// values are quoted with %q already); everything else is escaped as Text
// escapes it, and ProseLines keeps only the message's own line breaks.
func TestProse(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"want age1… (→ docs)":     "want age1… (→ docs)",
		`name "a\u202e"`:          `name "a\u202e"`,
		"x ##[error]y \u202e\x1b": `x #\x23[error]y \u202e\x1b`,
		"::warning::x":            `\x3a:warning::x`,
		"caf\u00e9 \u2028 \u200b": `caf\u00e9 \u2028 \u200b`,
	} {
		if got := Prose(in); got != want {
			t.Errorf("Prose(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := ProseLines("a\n::error::b\n  c ##[x]"), "a\n\\x3a:error::b\n  c #\\x23[x]"; got != want {
		t.Errorf("ProseLines = %q, want %q", got, want)
	}
	for name, s := range attacks {
		if cmds := testenv.WorkflowCommands(ProseLines(s)); len(cmds) > 0 {
			t.Errorf("%s: ProseLines lets %+v through", name, cmds)
		}
	}
}
