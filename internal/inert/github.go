package inert

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// Prop is one property of a workflow command (file=…, line=…, title=…).
type Prop struct {
	Key, Value string
}

// Command returns one GitHub Actions workflow command line,
// "::name key=value,…::message\n". name and the keys are fleetgen's own
// words; values and message may be untrusted: they are escaped with Property
// and Data, so the line is one command whose name, properties and message are
// the ones given.
func Command(name string, props []Prop, message string) string {
	var b strings.Builder
	b.WriteString("::")
	b.WriteString(name)
	for i, p := range props {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(p.Key)
		b.WriteByte('=')
		b.WriteString(Property(p.Value))
	}
	b.WriteString("::")
	b.WriteString(Data(message))
	b.WriteByte('\n')
	return b.String()
}

// Data escapes a workflow command's message: each line with Prose, '%' as
// %25 (the runner's escape character), and the lines joined with %0A, which
// the runner turns back into a line break inside the one annotation (so a
// multi-line message stays one command, as the Actions toolkit writes it).
func Data(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(ProseLines(s), "%", "%25"), "\n", "%0A")
}

// Property escapes a workflow command's property value: Data's escapes, and
// ':' and ',' (which would end the value) as %3A and %2C.
func Property(s string) string {
	return strings.NewReplacer(":", "%3A", ",", "%2C").Replace(Data(s))
}

// Block returns s, a block of quoted lines (the unified diff of the output
// folder, whose content comes from a pull request), for output that a GitHub
// runner reads: every line escaped with Lines, between
// "::stop-commands::<token>" and "::<token>::", so that the runner runs no
// command it holds, whatever an escape missed. "" stays "".
//
// The token must be one the block cannot hold, or the block could end the
// pause itself, and the output must be the same bytes for the same input
// (fleetgen's determinism rule), so it cannot be random. It is
// "fleetgen-" and the first 32 hex digits of the SHA-256 of the escaped block:
// to hold its own token a block would have to contain (part of) its own hash,
// a fixed point of SHA-256 that nobody can find, and the token is not known
// before the block is. The runner compares tokens without regard to case and
// finds the legacy "##[token]" anywhere in a line, so Block also looks for
// the token in the block, case-folded, and in the never-seen case it is there
// hashes again with a counter.
func Block(s string) string {
	if s == "" {
		return ""
	}
	body := Lines(s)
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	token := blockToken(body)
	return "::stop-commands::" + token + "\n" + body + "::" + token + "::\n"
}

func blockToken(body string) string {
	folded := strings.ToLower(body)
	for n := 0; ; n++ {
		h := sha256.New()
		if n > 0 {
			h.Write([]byte(strconv.Itoa(n) + "\n"))
		}
		h.Write([]byte(body))
		token := "fleetgen-" + hex.EncodeToString(h.Sum(nil))[:32]
		if !strings.Contains(folded, token) {
			return token
		}
	}
}
