package schema

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// fastParse parses data when it is written in the plain block style that
// fleet.yaml files use (and fleetgen's own examples and generators write):
// block mappings with plain keys, block sequences, one-line plain or quoted
// scalars without escapes, comments. It builds the tree yaml.v3 would (the
// same Kind, Value, ShortTag, Line and Column of every node, in the same
// order), several times faster and with a fraction of the allocations: a
// 10,000-cluster fleet.yaml is 1.6 MB. Anything outside that subset (flow
// collections, anchors, tags, block scalars, escapes, tabs, non-ASCII text, a
// second document, a syntax error, …) returns ok false, and yaml.v3 parses the
// file instead; FuzzFastParse holds the two to the same trees.
func fastParse(data []byte) (root *yaml.Node, ok bool) {
	for _, c := range data {
		if c >= 0x7f || c < 0x20 && c != '\n' {
			return nil, false
		}
	}
	text := string(data)
	p := &fastParser{lines: make([]fastLine, 0, strings.Count(text, "\n")+1)}
	first := true
	for n := 1; len(text) > 0; n++ {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		indent := len(line) - len(strings.TrimLeft(line, " "))
		body := strings.TrimRight(line[indent:], " ")
		switch {
		case body == "" || body[0] == '#':
			continue
		case indent == 0 && (strings.HasPrefix(body, "---") || strings.HasPrefix(body, "...") || body[0] == '%'):
			// The one document's start marker, alone on the first line that
			// is not a comment: nothing else of the kind.
			if !first || body != "---" {
				return nil, false
			}
			first = false
			continue
		}
		first = false
		p.lines = append(p.lines, fastLine{n: n, indent: indent, text: body})
	}
	if len(p.lines) == 0 || p.lines[0].indent != 0 || isItem(p.lines[0].text) {
		return nil, false
	}
	// Nodes come from slabs: one allocation per few hundred nodes.
	p.slab = make([]yaml.Node, 0, min(len(p.lines)*2, 1<<16))
	root, i, ok := p.mapping(0, 0)
	if !ok || i != len(p.lines) {
		return nil, false
	}
	return root, true
}

type fastLine struct {
	n      int    // line number, from 1
	indent int    // leading spaces
	text   string // the rest, trailing spaces cut
}

type fastParser struct {
	lines []fastLine
	slab  []yaml.Node
	// stack holds the children of the collections being parsed; each
	// collection's are copied, at its end, into ptrs, a slab of exact-sized
	// Content slices.
	stack []*yaml.Node
	ptrs  []*yaml.Node
}

// content returns stack[from:] as a Content slice of its own and pops it.
func (p *fastParser) content(from int) []*yaml.Node {
	kids := p.stack[from:]
	n := len(kids)
	if n == 0 {
		return nil
	}
	if cap(p.ptrs)-len(p.ptrs) < n {
		p.ptrs = make([]*yaml.Node, 0, max(n, 4096))
	}
	c := append(p.ptrs[len(p.ptrs):len(p.ptrs):len(p.ptrs)+n], kids...)
	p.ptrs = p.ptrs[:len(p.ptrs)+n]
	clear(kids)
	p.stack = p.stack[:from]
	return c
}

func (p *fastParser) node(kind yaml.Kind, tag, value string, line, col int) *yaml.Node {
	if len(p.slab) == cap(p.slab) {
		p.slab = make([]yaml.Node, 0, 1024)
	}
	p.slab = append(p.slab, yaml.Node{Kind: kind, Tag: tag, Value: value, Line: line, Column: col})
	return &p.slab[len(p.slab)-1]
}

// isItem reports whether a line's text starts a block sequence item.
func isItem(s string) bool {
	return s == "-" || strings.HasPrefix(s, "- ")
}

// block parses the block node that starts at line i, indented ind.
func (p *fastParser) block(i, ind int) (*yaml.Node, int, bool) {
	if isItem(p.lines[i].text) {
		return p.sequence(i, ind)
	}
	return p.mapping(i, ind)
}

// mapping parses the block mapping whose keys are the lines from i on
// indented ind.
func (p *fastParser) mapping(i, ind int) (*yaml.Node, int, bool) {
	l := p.lines[i]
	m := p.node(yaml.MappingNode, "!!map", "", l.n, ind+1)
	from := len(p.stack)
	for i < len(p.lines) && p.lines[i].indent >= ind {
		l := p.lines[i]
		if l.indent != ind || isItem(l.text) {
			return nil, 0, false
		}
		k := keyLen(l.text)
		if k == 0 {
			return nil, 0, false
		}
		key := p.node(yaml.ScalarNode, "", l.text[:k], l.n, ind+1)
		if key.Value == "<<" {
			return nil, 0, false
		}
		rest := strings.TrimLeft(l.text[k+1:], " ")
		var val *yaml.Node
		var ok bool
		if rest == "" || rest[0] == '#' {
			// A nested block: more indented, or a sequence at the key's
			// indentation. (An empty value is left to yaml.v3.)
			j := i + 1
			switch {
			case j < len(p.lines) && p.lines[j].indent > ind:
				val, i, ok = p.block(j, p.lines[j].indent)
			case j < len(p.lines) && p.lines[j].indent == ind && isItem(p.lines[j].text):
				val, i, ok = p.sequence(j, ind)
			}
		} else {
			val, ok = p.scalar(rest, l.n, len(l.text)-len(rest)+ind+1)
			i++
		}
		if !ok {
			return nil, 0, false
		}
		p.stack = append(p.stack, key, val)
	}
	m.Content = p.content(from)
	return m, i, true
}

// sequence parses the block sequence whose items are the lines from i on
// indented ind and starting with "- ".
func (p *fastParser) sequence(i, ind int) (*yaml.Node, int, bool) {
	s := p.node(yaml.SequenceNode, "!!seq", "", p.lines[i].n, ind+1)
	from := len(p.stack)
	for i < len(p.lines) && p.lines[i].indent == ind && isItem(p.lines[i].text) {
		l := p.lines[i]
		rest := strings.TrimLeft(l.text[1:], " ")
		if rest == "" || rest[0] == '#' || isItem(rest) {
			return nil, 0, false // an item on the lines below, or a nested list
		}
		col := ind + len(l.text) - len(rest) // of rest, from 0
		var item *yaml.Node
		var ok bool
		if k := keyLen(rest); k > 0 {
			// A mapping whose first key follows "- ": its keys are
			// indented as that key.
			p.lines[i] = fastLine{n: l.n, indent: col, text: rest}
			item, i, ok = p.mapping(i, col)
		} else {
			item, ok = p.scalar(rest, l.n, col+1)
			i++
		}
		if !ok {
			return nil, 0, false
		}
		p.stack = append(p.stack, item)
	}
	if i < len(p.lines) && p.lines[i].indent > ind {
		return nil, 0, false
	}
	s.Content = p.content(from)
	return s, i, true
}

// keyLen returns the length of a plain key at the start of s followed by
// ':' and a space or the end of the line; 0 when s does not start so, or
// the key is longer than yaml.v3 takes a simple key to be (1024 bytes).
func keyLen(s string) int {
	for k := 0; k < len(s) && k <= maxKey; k++ {
		c := s[k]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
		case k > 0 && (c == '.' || c == '-' || c == '/'):
		case k > 0 && c == ':' && (k+1 == len(s) || s[k+1] == ' '):
			return k
		default:
			return 0
		}
	}
	return 0
}

// maxKey is the longest key fastParse takes (libyaml looks for a simple
// key's ':' within 1024 characters).
const maxKey = 512

// scalar parses a one-line scalar value s (at line n, 1-based column col)
// with an optional comment after it.
func (p *fastParser) scalar(s string, n, col int) (*yaml.Node, bool) {
	switch s[0] {
	case '"', '\'':
		end := strings.IndexByte(s[1:], s[0]) + 1
		if end == 0 || strings.IndexByte(s[:end], '\\') >= 0 {
			return nil, false
		}
		// After the closing quote: nothing, or a comment (not '' of an
		// escaped quote, nor more text).
		if !commentOnly(s[end+1:]) {
			return nil, false
		}
		v := p.node(yaml.ScalarNode, "!!str", s[1:end], n, col)
		if s[0] == '"' {
			v.Style = yaml.DoubleQuotedStyle
		} else {
			v.Style = yaml.SingleQuotedStyle
		}
		return v, true
	case '[', '{':
		v, rest, ok := p.flow(s, n, col)
		if !ok {
			return nil, false
		}
		if !commentOnly(rest) {
			return nil, false
		}
		return v, true
	case '-', '?', ':', ',', ']', '}', '#', '&', '*', '!', '|', '>', '%', '@', '`':
		return nil, false
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = strings.TrimRight(s[:i], " ")
	}
	// In block context flow indicators and quotes are plain characters
	// past the first (${env} in a path).
	if strings.IndexByte(s, '#') >= 0 || strings.Contains(s, ": ") || strings.HasSuffix(s, ":") || s == "<<" {
		return nil, false
	}
	return p.node(yaml.ScalarNode, "", s, n, col), true
}

// commentOnly reports whether what follows a value on its line is nothing,
// or spaces and a comment.
func commentOnly(rest string) bool {
	if rest == "" {
		return true
	}
	c := strings.TrimLeft(rest, " ")
	return len(c) < len(rest) && c != "" && c[0] == '#'
}

// flow parses a one-line flow sequence or mapping of scalars at the start of
// s ('[' or '{' at 1-based column col of line n); rest is what follows it.
func (p *fastParser) flow(s string, n, col int) (v *yaml.Node, rest string, ok bool) {
	open, close := s[0], byte(']')
	kind, tag := yaml.SequenceNode, "!!seq"
	if open == '{' {
		close, kind, tag = '}', yaml.MappingNode, "!!map"
	}
	v = p.node(kind, tag, "", n, col)
	v.Style = yaml.FlowStyle
	i := 1
	skip := func() {
		for i < len(s) && s[i] == ' ' {
			i++
		}
	}
	skip()
	if i < len(s) && s[i] == close {
		return v, s[i+1:], true
	}
	// item parses the next scalar into v.Content.
	item := func() (*yaml.Node, bool) {
		skip()
		it, j, ok := p.flowScalar(s, i, n, col)
		if ok {
			i = j
			v.Content = append(v.Content, it)
		}
		return it, ok
	}
	for {
		key, ok := item()
		if !ok {
			return nil, "", false
		}
		if kind == yaml.MappingNode {
			// key: value, ':' right after the key, a space after it
			if i+1 >= len(s) || s[i] != ':' || s[i+1] != ' ' || key.Style != 0 || len(key.Value) > maxKey {
				return nil, "", false
			}
			i += 2
			if _, ok := item(); !ok {
				return nil, "", false
			}
		}
		skip()
		if i >= len(s) {
			return nil, "", false
		}
		switch s[i] {
		case close:
			return v, s[i+1:], true
		case ',':
			i++
			skip()
			if i < len(s) && (s[i] == close || s[i] == ',') {
				return nil, "", false // a trailing or doubled comma: left to yaml.v3
			}
		default:
			return nil, "", false
		}
	}
}

// flowScalar parses a plain or quoted scalar of a flow collection starting
// at s[i]; j is where it ends (spaces after a plain scalar left in).
func (p *fastParser) flowScalar(s string, i, n, col int) (v *yaml.Node, j int, ok bool) {
	if i >= len(s) {
		return nil, 0, false
	}
	switch c := s[i]; c {
	case '"', '\'':
		end := strings.IndexByte(s[i+1:], c)
		if end < 0 {
			return nil, 0, false
		}
		end += i + 1
		if strings.IndexByte(s[i:end], '\\') >= 0 || end+1 < len(s) && s[end+1] == c {
			return nil, 0, false
		}
		v := p.node(yaml.ScalarNode, "!!str", s[i+1:end], n, col+i)
		v.Style = yaml.DoubleQuotedStyle
		if c == '\'' {
			v.Style = yaml.SingleQuotedStyle
		}
		return v, end + 1, true
	case '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '%', '@', '`':
		return nil, 0, false
	}
	// A plain scalar ends at ',', ']', '}' or ": "; ':' inside (a tag of
	// an image) only before another character of it; '?', '[', '{', '#' and
	// quotes inside are left to yaml.v3.
	j = i
	for j < len(s) {
		c := s[j]
		if c == ',' || c == ']' || c == '}' {
			break
		}
		if c == ':' {
			if j+1 >= len(s) || s[j+1] == ' ' {
				break
			}
			if strings.IndexByte(",[]{}", s[j+1]) >= 0 {
				return nil, 0, false
			}
		}
		// '?' ends a plain scalar in flow context for yaml.v3 (libyaml).
		if c == '#' || c == '?' || c == '[' || c == '{' || c == '"' || c == '\'' || c == '`' {
			return nil, 0, false
		}
		j++
	}
	value := strings.TrimRight(s[i:j], " ")
	if value == "" || value == "<<" {
		return nil, 0, false
	}
	return p.node(yaml.ScalarNode, "", value, n, col+i), i + len(value), true
}
