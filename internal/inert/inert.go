// Package inert writes untrusted text (file names and content from an output
// folder, label and substitute values, cluster, layer and image names,
// messages that quote them) so that it is shown and never acted on: not by a
// terminal, not by the GitHub Actions runner that reads a step's output, not
// by GitHub's Markdown renderer. Every report fleetgen prints goes through it,
// with one function per format:
//
//   - terminal text: Text, Quote, Lines and Block; Prose and ProseLines for
//     fleetgen's own messages that quote untrusted text;
//   - GitHub workflow commands: Command (Data and Property for its parts);
//   - Markdown: Code;
//   - JSON: JSON.
//
// The rules (SPEC §7):
//
//   - A quoted string is shown in printable ASCII. Every other byte or rune
//     (CR, LF, ESC and the rest of C0 and C1, DEL, bidirectional overrides
//     and isolates, zero-width and other invisible characters, any non-ASCII
//     letter) is a visible Go escape such as \r, \x1b or \u202e, and a
//     backslash is doubled, so two different strings never display alike
//     and a value never starts a new line.
//   - No line can start a workflow command: the runner takes a line that
//     starts with "::" after leading white space (its V2 form) and a "##["
//     anywhere in a line (the legacy form), so a leading "::" and every "##["
//     are broken by an escape (\x3a, \x23) that reads the same to a person.
//   - Markdown quotes sit in code spans whose backtick fence is longer than
//     any run of backticks they hold, so no link, image, HTML, emphasis or
//     @mention renders.
//   - JSON is ASCII: every non-ASCII rune, DEL and "##[" is a \u escape,
//     which a JSON reader decodes to the same value.
//
// The package is pure and deterministic: the same input gives the same bytes.
package inert

import (
	"strings"
	"unicode/utf8"
)

// Text returns s as printable ASCII for a terminal or a CI log: bytes 0x20 to
// 0x7e as they are, a backslash doubled, everything else a Go escape (\n, \r,
// \t, \x1b, \x7f, \u0085, \u202e, \U000e0001, \xff for a byte that is not
// UTF-8). A "::" that s starts with (after spaces) reads \x3a:, and every "##["
// reads #\x23[, so that no line that holds s can be taken for a workflow
// command. Text never returns a line break.
func Text(s string) string {
	return escape(s, false)
}

// Prose is Text for a message fleetgen composes (an error, a warning) that
// may quote untrusted text, where it quotes values itself (with %q, which
// escapes backslashes): the same escapes, but a backslash is not doubled, and
// fleetgen's own typographic marks … and → stay as they are (neither is
// invisible, a control or a look-alike of an ASCII character).
func Prose(s string) string {
	return escape(s, true)
}

// proseMark reports whether Prose keeps r, a non-ASCII rune of fleetgen's
// own messages.
func proseMark(r rune) bool { return r == '…' || r == '→' }

// ProseLines applies Prose to each line of s and keeps its line feeds, for
// a message whose line breaks are fleetgen's (an error that lists problems).
func ProseLines(s string) string {
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		parts[i] = Prose(p)
	}
	return strings.Join(parts, "\n")
}

func escape(s string, prose bool) string {
	if plainText(s, prose) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	lead := true // only spaces so far: a ':' here could start a command
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ':
			b.WriteByte(c)
			i++
			continue
		case lead && c == ':' && i+1 < len(s) && s[i+1] == ':':
			b.WriteString(`\x3a:`)
			i += 2
		case c == '#' && i+2 < len(s) && s[i+1] == '#' && s[i+2] == '[':
			b.WriteString(`#\x23`)
			i += 2
		case c == '\\' && !prose:
			b.WriteString(`\\`)
			i++
		case c > 0x20 && c < 0x7f:
			b.WriteByte(c)
			i++
		case c < utf8.RuneSelf:
			b.WriteString(escapeASCII(c))
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n <= 1:
				b.WriteString(hexByte(c))
				i++
			case prose && proseMark(r):
				b.WriteString(s[i : i+n])
				i += n
			default:
				b.WriteString(escapeRune(r))
				i += n
			}
		}
		lead = false
	}
	return b.String()
}

// plainText reports whether Text(s) == s (Prose(s) == s with prose):
// printable ASCII without a leading "::" or a "##[", nor a backslash unless
// prose.
func plainText(s string, prose bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || (c == '\\' && !prose) {
			return false
		}
	}
	t := strings.TrimLeft(s, " ")
	return !strings.HasPrefix(t, "::") && !strings.Contains(s, "##[")
}

// Quote returns s for a place where it stands beside fleetgen's own words (a
// field, a value, a name in a list): bare when it is a plain token, a
// non-empty run of letters, digits and ._/@:+=~[]- that starts with a letter,
// a digit, '.', '/' or '_'; otherwise in double quotes, with Text's escapes
// and a double quote as \". So no value reads as another value, as a list of
// two, as an arrow or as one of fleetgen's markers such as (set), which are
// not plain tokens.
func Quote(s string) string {
	if plainToken(s) {
		return s
	}
	t := Text(s)
	if strings.IndexByte(t, '"') >= 0 {
		t = strings.ReplaceAll(t, `"`, `\"`)
	}
	return `"` + t + `"`
}

// plainTokenMax bounds a bare token: a longer one is quoted, so that a cut
// (Cut) never lands in a bare value.
const plainTokenMax = 512

func plainToken(s string) bool {
	if s == "" || len(s) > plainTokenMax {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '/' || c == '_':
		case i > 0 && strings.IndexByte("@:+=~[]-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Lines applies Text to each line of s and keeps its line feeds, for a block
// of quoted lines (a unified diff, a multi-line message) whose line structure
// is fleetgen's. No line of the result can start a workflow command.
func Lines(s string) string {
	if plainLines(s) {
		return s
	}
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		parts[i] = Text(p)
	}
	return strings.Join(parts, "\n")
}

func plainLines(s string) bool {
	for line := range strings.SplitSeq(s, "\n") {
		if !plainText(line, false) {
			return false
		}
	}
	return true
}

// Cut returns s shortened to at most max bytes, at a rune boundary, and how
// many bytes it left out (0 when s fits). Reports show the cut with their own
// words, outside the quote.
func Cut(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], len(s) - n
}

func escapeASCII(c byte) string {
	switch c {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	}
	return hexByte(c)
}

const hexDigits = "0123456789abcdef"

func hexByte(c byte) string {
	return `\x` + string([]byte{hexDigits[c>>4], hexDigits[c&0xf]})
}

// escapeRune writes a non-ASCII rune as \uXXXX or \UXXXXXXXX, as Go does.
func escapeRune(r rune) string {
	if r < 0x10000 {
		return `\u` + hexN(uint32(r), 4)
	}
	return `\U` + hexN(uint32(r), 8)
}

func hexN(v uint32, digits int) string {
	b := make([]byte, digits)
	for i := digits - 1; i >= 0; i-- {
		b[i] = hexDigits[v&0xf]
		v >>= 4
	}
	return string(b)
}
