package layers

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	yamlv2 "go.yaml.in/yaml/v2"
	yamlv3 "go.yaml.in/yaml/v3"
)

// The fast way of post-build substitution, for an object that many clusters
// substitute with their own values (a ConfigMap holding ${cluster}): Flux
// substitutes the object's text and decodes it again, which costs a YAML
// parse per cluster. When every reference is a plain ${var} inside a quoted
// or plain string scalar, the decoded object is known once per object: the
// same tree with those strings rebuilt around the values. slots find those
// strings once (the text substituted with a probe for each variable, then
// decoded), and a cluster whose values cannot change how the YAML parses
// (checked per value and scalar style) gets its object by copying the paths
// to them; any other goes the slow way. TestSlotsMatchSlowWay holds the two
// to equal results.

// slotsAfter is the number of substitutions of an object after which it is
// worth finding its slots: one finding costs about two slow substitutions.
const slotsAfter = 2

// slots are where a template's references land in its decoded object.
type slots struct {
	// base is the object decoded with a probe for each reference, with
	// every part equal to the build object's replaced by it (share).
	base map[string]any
	root *slotPath
	// strs are the scalars holding references.
	strs []slotString
}

// slotString is one string scalar holding references: its text is parts
// joined by the values of refs (indexes into the template's refs).
type slotString struct {
	parts []string
	refs  []int
	style yamlv3.Style
}

// slotPath is the tree of paths from the object's root to its slotStrings:
// key is a map key (string) or slice index (int); str is the index of the
// slotString it ends at, or -1.
type slotPath struct {
	key  any
	str  int
	kids []*slotPath
}

// slotState is a template's fast way, found once.
type slotState struct {
	calls atomic.Int32
	once  sync.Once
	s     *slots // nil: every substitution of the template goes the slow way
}

// probe is the text put in place of reference i: a plain YAML string that no
// escape sequence can start in (no YAML escape is \z) and no other probe
// holds.
func probe(i int) string { return "zqfg" + strconv.Itoa(i) + "qz" }

// fastSlots returns tp's slots, finding them once tp has been substituted
// slotsAfter times; nil when it has none (yet).
func (tp *template) fastSlots(orig map[string]any) *slots {
	if !tp.plain || tp.fast.calls.Add(1) < slotsAfter {
		return nil
	}
	tp.fast.once.Do(func() { tp.fast.s = findSlots(tp, orig) })
	return tp.fast.s
}

// findSlots finds the slots of tp, whose references are all plain ${var},
// or returns nil.
func findSlots(tp *template, orig map[string]any) *slots {
	if strings.Contains(tp.text, "zqfg") {
		return nil
	}
	index := make(map[string]int, len(tp.refs))
	for i, r := range tp.refs {
		index[r] = i
	}
	text, err := tp.t.Execute(func(v string) (string, bool) {
		i, ok := index[v]
		return probe(i), ok
	})
	if err != nil {
		return nil
	}
	base, ok := fromYAML(text)
	if !ok {
		return nil
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal([]byte(text), &doc); err != nil || len(doc.Content) != 1 {
		return nil
	}
	s := &slots{root: &slotPath{str: -1}}
	f := slotFinder{s: s, base: base}
	if !f.walk(doc.Content[0], nil) || f.refs != tp.total() {
		return nil // a probe in a key, an alias, a comment, a block scalar, …
	}
	shared, _ := share(base, orig)
	s.base, ok = shared.(map[string]any)
	if !ok {
		return nil
	}
	return s
}

// slotFinder walks the probe-substituted object's nodes beside its decoded
// values.
type slotFinder struct {
	s    *slots
	base map[string]any
	refs int // the references found
}

// walk records every string scalar below n (at path) that holds a probe, and
// reports false for anything the fast way does not take.
func (f *slotFinder) walk(n *yamlv3.Node, path []any) bool {
	switch n.Kind {
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yamlv3.ScalarNode || k.Value == "<<" || strings.Contains(k.Value, "zqfg") {
				return false
			}
			if !f.walk(n.Content[i+1], append(path[:len(path):len(path)], k.Value)) {
				return false
			}
		}
		return true
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			if !f.walk(c, append(path[:len(path):len(path)], i)) {
				return false
			}
		}
		return true
	case yamlv3.ScalarNode:
		if !strings.Contains(n.Value, "zqfg") {
			return true
		}
		return f.add(n, path)
	}
	return false // aliases
}

// add records the scalar n at path, which holds a probe.
func (f *slotFinder) add(n *yamlv3.Node, path []any) bool {
	switch n.Style {
	case 0, yamlv3.DoubleQuotedStyle, yamlv3.SingleQuotedStyle:
	default:
		return false
	}
	// The decoded value there must be this very string.
	var v any = f.base
	for _, k := range path {
		switch c := v.(type) {
		case map[string]any:
			s, ok := k.(string)
			if !ok {
				return false
			}
			v = c[s]
		case []any:
			i, ok := k.(int)
			if !ok || i >= len(c) {
				return false
			}
			v = c[i]
		default:
			return false
		}
	}
	if s, ok := v.(string); !ok || s != n.Value {
		return false
	}
	str := slotString{style: n.Style}
	rest := n.Value
	for {
		i := strings.Index(rest, "zqfg")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i+4:], "qz")
		if j < 0 {
			return false
		}
		ref, err := strconv.Atoi(rest[i+4 : i+4+j])
		if err != nil {
			return false
		}
		str.parts = append(str.parts, rest[:i])
		str.refs = append(str.refs, ref)
		rest = rest[i+4+j+2:]
	}
	str.parts = append(str.parts, rest)
	f.refs += len(str.refs)
	f.s.strs = append(f.s.strs, str)
	p := f.s.root
	for _, k := range path {
		var next *slotPath
		for _, c := range p.kids {
			if c.key == k {
				next = c
			}
		}
		if next == nil {
			next = &slotPath{key: k, str: -1}
			p.kids = append(p.kids, next)
		}
		p = next
	}
	p.str = len(f.s.strs) - 1
	return true
}

// total is the number of references in tp's text.
func (tp *template) total() int {
	n := 0
	for _, k := range tp.uses {
		n += k
	}
	return n
}

// made is an object the fast way made: the slots' base with strs, the
// strings of a cluster's values, in them.
type made struct {
	s    *slots
	strs []string
}

// value returns the object: a copy of every map and slice on the paths to
// the strings, the rest shared with the build object.
func (d made) value() map[string]any { return d.s.root.build(d.s.base, d.strs).(map[string]any) }

// apply returns the object substituted with vals (the value of each of the
// template's refs, newlines removed), or false when a value could change how
// the YAML parses: the slow way decides then.
func (s *slots) apply(vals []string) (made, bool) {
	strs := make([]string, len(s.strs))
	for i, str := range s.strs {
		var b strings.Builder
		b.WriteString(str.parts[0])
		for j, r := range str.refs {
			if !keepsScalar(vals[r], str.style) {
				return made{}, false
			}
			b.WriteString(vals[r])
			b.WriteString(str.parts[j+1])
		}
		strs[i] = b.String()
		if str.style == 0 && !plainString(strs[i]) {
			return made{}, false
		}
	}
	return made{s, strs}, true
}

// build returns v with the strings below p replaced, copying every map and
// slice on the way.
func (p *slotPath) build(v any, strs []string) any {
	if p.str >= 0 {
		return strs[p.str]
	}
	switch c := v.(type) {
	case map[string]any:
		m := maps.Clone(c)
		for _, k := range p.kids {
			key := k.key.(string)
			m[key] = k.build(c[key], strs)
		}
		return m
	case []any:
		l := slices.Clone(c)
		for _, k := range p.kids {
			i := k.key.(int)
			l[i] = k.build(c[i], strs)
		}
		return l
	}
	return v // not reached: findSlots checked every path
}

// keepsScalar reports whether v, put into a scalar of style, stays part of that
// string whatever surrounds it: no quote that ends it, no escape, no space
// (which a line fold could eat), not empty and, in a plain scalar, nothing YAML reads as
// an indicator (plainString checks what the whole scalar resolves to).
func keepsScalar(v string, style yamlv3.Style) bool {
	if v == "" {
		return false // spaces either side of it would meet, which a fold can join
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c > '~' {
			return false
		}
		switch style {
		case yamlv3.DoubleQuotedStyle:
			if c == '"' || c == '\\' {
				return false
			}
		case yamlv3.SingleQuotedStyle:
			if c == '\'' {
				return false
			}
		default:
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '/') {
				return false
			}
		}
	}
	return true
}

// plainString reports whether s, as a plain scalar, is the string s (not a
// number, a bool, null, a document marker…), as yaml.v2 resolves it. A
// scalar that starts with a letter is a string unless it is one of the
// words yaml.v2 reads as a bool or null (any case, to be safe); any other
// is decoded to see.
func plainString(s string) bool {
	if s == "" {
		return false // null
	}
	if c := s[0]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
		switch strings.ToLower(s) {
		case "y", "yes", "n", "no", "on", "off", "true", "false", "null":
			return false
		}
		return true
	}
	var v any
	if err := yamlv2.Unmarshal([]byte(s), &v); err != nil {
		return false
	}
	got, ok := v.(string)
	return ok && got == s
}

// fastSubstitute returns what substituteChecked returns for tp with vars
// (the object substituted; never an error), as made, or false when the fast
// way does not take them. orig is the build object's map.
func (tp *template) fastSubstitute(orig map[string]any, vars map[string]string) (made, bool) {
	s := tp.fastSlots(orig)
	if s == nil {
		return made{}, false
	}
	vals := make([]string, len(tp.refs))
	for i, r := range tp.refs {
		vals[i] = strings.ReplaceAll(vars[r], "\n", "")
	}
	return s.apply(vals)
}
