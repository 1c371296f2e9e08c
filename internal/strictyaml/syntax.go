package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"fleetgen.dev/fleetgen/pkg/problem"
	"go.yaml.in/yaml/v3"
)

// yaml.v3 reports a syntax error as "yaml: line N: PROBLEM" and keeps its
// marks to itself. N is the line of the context mark when that is not the
// first line (where the construct the parser was reading began: a block
// mapping, a flow collection, a quoted scalar), else of the problem mark;
// "line N: " is left out when both are on the first line. Scanner errors
// count N from 1, parser errors (the "did not find expected …" family and a
// few "found …" ones) from 0: v3 adds one only for the former.
var (
	yamlLineRE     = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	parserProblems = []string{"did not find expected", "found duplicate %YAML directive", "found incompatible YAML document", "found undefined tag handle", "found duplicate %TAG directive"}
)

// syntaxError reports a yaml.v3 syntax error at the line v3 names (made
// 1-based) and at the column, on that line, of the construct its problem
// names: the tab, the opening quote or bracket, the second ':' of a line,
// or the first character of the block. A problem v3 names no line for is on
// the first line; one that is no syntax error at all (an unknown anchor)
// gets no position.
func (doc *Doc) syntaxError(data []byte, err error) problem.Errors {
	line, col := 0, 0
	msg := strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if isParserProblem(msg) {
			line++
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		if isSyntaxProblem(msg) {
			line = 1
		}
	}
	if line > 0 {
		var note string
		line, col, note = locate(data, line, msg)
		msg += note
	}
	es := doc.refuse(problem.Syntax, line, "invalid YAML", "invalid YAML: %s: want well-formed YAML (check indentation and quoting)", msg)
	es[0].Column = col
	return es
}

func isParserProblem(msg string) bool {
	for _, p := range parserProblems {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// isSyntaxProblem tells a scanner or parser problem (which has a mark) from
// the composer's own errors, which have none.
func isSyntaxProblem(msg string) bool {
	return isParserProblem(msg) || strings.HasPrefix(msg, "found ") || strings.HasPrefix(msg, "did not find") ||
		strings.HasPrefix(msg, "mapping values are not allowed") || strings.HasPrefix(msg, "could not find expected") ||
		strings.HasPrefix(msg, "exceeded max depth") || strings.HasPrefix(msg, "control characters are not allowed")
}

// locate returns the line and column of the construct msg names, starting at
// line (1-based), and a note for the message.
func locate(data []byte, line int, msg string) (int, int, string) {
	lines := bytes.Split(data, []byte("\n"))
	if line > len(lines) {
		return line, 0, ""
	}
	text := func(n int) []byte { return bytes.TrimSuffix(lines[n-1], []byte("\r")) }
	// A tab: v3 names the line of the scalar or token before it; the tab is
	// in the indentation of that line or one after it.
	if strings.Contains(msg, "tab character") || strings.Contains(msg, "cannot start any token") {
		for n := line; n <= len(lines) && n <= line+1; n++ {
			t := text(n)
			indent := len(t) - len(bytes.TrimLeft(t, " \t"))
			if i := bytes.IndexByte(t[:indent], '\t'); i >= 0 {
				return n, runeCol(t, i), ": a tab (YAML indents with spaces only)"
			}
		}
	}
	// A block that does not go on as it began: v3 names the line where the
	// block began; the mistake is on the first line at which the document
	// stops parsing.
	if strings.HasPrefix(msg, "did not find expected key") || strings.HasPrefix(msg, "did not find expected node content") || strings.HasPrefix(msg, "did not find expected '-'") {
		if n := firstFailingLine(data, lines, line); n > 0 {
			t, note := text(n), ""
			if n != line {
				note = fmt.Sprintf(" (in the block that starts on line %d)", line)
			}
			return n, runeCol(t, len(t)-len(bytes.TrimLeft(t, " "))), note
		}
	}
	// An opening quote or bracket: v3 names the line it opens on, or, when
	// that is the first line (which v3 never names), the problem's line.
	opener := func(find func([]byte) int) (int, int) {
		for _, n := range []int{line, 1} {
			if i := find(text(n)); i >= 0 {
				return n, runeCol(text(n), i)
			}
		}
		return 0, 0
	}
	last := func(c byte) func([]byte) int { return func(t []byte) int { return bytes.LastIndexByte(t, c) } }
	var n, col int
	var note string
	switch {
	case strings.Contains(msg, "',' or '}'"):
		n, col = opener(last('{'))
		note = " (in the flow mapping that opens here)"
	case strings.Contains(msg, "',' or ']'"):
		n, col = opener(last('['))
		note = " (in the flow sequence that opens here)"
	case strings.Contains(msg, "end of stream"):
		// Input ran out inside a quoted scalar or flow collection: the
		// mistake is where it opens.
		n, col = opener(func(t []byte) int { return bytes.IndexAny(t, `"'[{`) })
		note = " (in the flow collection that opens here)"
		if n > 0 && strings.ContainsRune(`"'`, []rune(string(text(n)))[col-1]) {
			note = " (in the quoted string that opens here)"
		}
	case strings.HasPrefix(msg, "mapping values are not allowed"):
		if i := valueIndicator(text(line)); i >= 0 {
			return line, runeCol(text(line), i), ""
		}
	case strings.Contains(msg, "cannot start any token"):
		if i := bytes.IndexAny(text(line), "@`"); i >= 0 {
			return line, runeCol(text(line), i), ""
		}
	}
	if n > 0 {
		return n, col, note
	}
	t := text(line)
	note = ""
	if !strings.HasPrefix(msg, "exceeded max depth") {
		note = " (in the block that starts here)"
	}
	return line, runeCol(t, firstNonBlank(t)), note
}

// maxSearch bounds the files whose mistake firstFailingLine looks for: each
// of its log2(lines) steps parses a prefix, which for 256 KiB (a fleet of
// about 2,500 clusters) is about 0.5 s in all. A larger file's error names
// the line where the block began, as yaml.v3 does.
const maxSearch = 256 << 10

// firstFailingLine returns the first line n >= from such that data up to and
// including line n does not parse while data up to line n-1 does, by
// bisection between from and the last line; 0 when data is too large to
// search or no such line is found.
func firstFailingLine(data []byte, lines [][]byte, from int) int {
	if len(data) > maxSearch {
		return 0
	}
	end := func(n int) int { // the byte offset after line n
		off := 0
		for _, l := range lines[:n] {
			off += len(l) + 1
		}
		return min(off, len(data))
	}
	lo, hi := from-1, len(lines) // prefix(lo) parses, prefix(hi) does not
	if lo < 0 || parses(data[:end(hi)]) || !parses(data[:end(lo)]) {
		return 0
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if parses(data[:end(mid)]) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// parses reports whether every YAML document of data parses.
func parses(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		switch err := safeDecode(dec, &n); {
		case errors.Is(err, io.EOF):
			return true
		case err != nil:
			return false
		}
	}
}

// valueIndicator returns the index of the second ':' of t followed by a
// space or the end of the line (the one a plain scalar may not hold), else of
// the first, or -1.
func valueIndicator(t []byte) int {
	first := -1
	for i, c := range t {
		if c == ':' && (i+1 == len(t) || t[i+1] == ' ') {
			if first >= 0 {
				return i
			}
			first = i
		}
	}
	return first
}

// firstNonBlank returns the index of the first character of t that is not a
// space or "- " list marker, or 0.
func firstNonBlank(t []byte) int {
	i := 0
	for i < len(t) {
		switch {
		case t[i] == ' ':
			i++
		case t[i] == '-' && i+1 < len(t) && t[i+1] == ' ':
			i += 2
		default:
			return i
		}
	}
	return 0
}

// runeCol is the 1-based column of byte index i of t, in characters.
func runeCol(t []byte, i int) int {
	return utf8.RuneCount(t[:i]) + 1
}
