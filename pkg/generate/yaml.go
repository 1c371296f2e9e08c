package generate

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// This file is fleetgen's one YAML encoder. It writes block-style YAML from Go
// values the way encoding/json would see them (json tags, omitempty), with
// every mapping's keys sorted, LF line endings and no trailing spaces. It is
// small on purpose: sigs.k8s.io/yaml goes Go → JSON → map → YAML, which costs
// more than the rest of Render at 10,000 clusters. TestEncodeMatchesSigsYAML
// proves both encoders produce the same data.
//
// Supported: structs (exported fields with json tags; a struct field tagged
// omitempty is left out when all of its own fields would be), pointers,
// map[string]T, slices, string, bool and ints. Anything else is an error: the
// types are fleetgen's own, so that is a programming error caught by tests.

// encode appends the YAML document for v to buf.
func encode(buf []byte, v any) ([]byte, error) {
	e := encoder{buf: buf}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Struct, reflect.Map:
		if isEmpty(rv) {
			e.buf = append(e.buf, "{}\n"...)
		} else {
			e.mapping(rv, 0, false)
		}
	default:
		return buf, fmt.Errorf("encode %T: want a struct or map", v)
	}
	if e.err != nil {
		return buf, e.err
	}
	return e.buf, nil
}

type encoder struct {
	buf []byte
	err error // the first value that could not be encoded
}

// fail records the first value the encoder cannot write.
func (e *encoder) fail(format string, args ...any) {
	if e.err == nil {
		e.err = fmt.Errorf("encode: "+format, args...)
	}
}

type fieldInfo struct {
	name      string
	key       []byte // name as a YAML key, quoted when needed
	index     int
	omitEmpty bool
}

var structCache sync.Map // reflect.Type → []fieldInfo

// fields returns t's encoded fields sorted by name.
func fields(t reflect.Type) []fieldInfo {
	if fi, ok := structCache.Load(t); ok {
		return fi.([]fieldInfo)
	}
	var out []fieldInfo
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		key := (&encoder{}).appendString(name)
		out = append(out, fieldInfo{name: name, key: key, index: i, omitEmpty: strings.Contains(opts, "omitempty")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	structCache.Store(t, out)
	return out
}

// isEmpty reports whether omitempty leaves v out.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String, reflect.Map, reflect.Slice:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.Struct:
		for _, f := range fields(v.Type()) {
			fv := v.Field(f.index)
			if !f.omitEmpty || !isEmpty(fv) {
				return false
			}
		}
		return true
	}
	return false // scalar reports the unsupported kind
}

func (e *encoder) indent(n int) {
	for i := 0; i < n; i++ {
		e.buf = append(e.buf, ' ')
	}
}

// mapping writes the non-empty struct or map v as block mapping lines at
// indent n. With first, the first line's indentation is already written
// (a sequence item's "- ").
func (e *encoder) mapping(v reflect.Value, n int, first bool) {
	line := func() {
		if first {
			first = false
			return
		}
		e.indent(n)
	}
	if v.Kind() == reflect.Struct {
		for _, f := range fields(v.Type()) {
			fv := v.Field(f.index)
			if f.omitEmpty && isEmpty(fv) {
				continue
			}
			line()
			e.buf = append(e.buf, f.key...)
			e.value(fv, n)
		}
		return
	}
	if m, ok := v.Interface().(map[string]string); ok {
		// The common case (labels, data, substitute) without reflection.
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			line()
			e.scalarString(k)
			val := m[k]
			if strings.IndexByte(val, '\n') >= 0 && literalOK(val) {
				e.literal(val, n+2)
				continue
			}
			e.buf = append(e.buf, ": "...)
			e.scalarString(val)
			e.buf = append(e.buf, '\n')
		}
		return
	}
	keys := make([]string, 0, v.Len())
	for _, k := range v.MapKeys() {
		keys = append(keys, k.String())
	}
	sort.Strings(keys)
	for _, k := range keys {
		line()
		e.scalarString(k)
		e.value(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())), n)
	}
}

// value writes ":" and v after a mapping key at indent n, through the end of
// its last line.
func (e *encoder) value(v reflect.Value, n int) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			e.buf = append(e.buf, ": null\n"...)
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct, reflect.Map:
		if isEmpty(v) {
			e.buf = append(e.buf, ": {}\n"...)
			return
		}
		e.buf = append(e.buf, ":\n"...)
		e.mapping(v, n+2, false)
	case reflect.Slice:
		if v.Len() == 0 {
			e.buf = append(e.buf, ": []\n"...)
			return
		}
		e.buf = append(e.buf, ":\n"...)
		e.sequence(v, n)
	case reflect.String:
		s := v.String()
		if strings.IndexByte(s, '\n') >= 0 && literalOK(s) {
			e.literal(s, n+2)
			return
		}
		e.buf = append(e.buf, ": "...)
		e.scalarString(s)
		e.buf = append(e.buf, '\n')
	default:
		e.buf = append(e.buf, ": "...)
		e.scalar(v)
		e.buf = append(e.buf, '\n')
	}
}

// sequence writes the items of v at indent n ("- " at the parent key's
// indentation, as kubectl and sigs.k8s.io/yaml do).
func (e *encoder) sequence(v reflect.Value, n int) {
	for i := 0; i < v.Len(); i++ {
		item := v.Index(i)
		for item.Kind() == reflect.Pointer || item.Kind() == reflect.Interface {
			item = item.Elem()
		}
		e.indent(n)
		e.buf = append(e.buf, "- "...)
		switch item.Kind() {
		case reflect.Struct, reflect.Map:
			if isEmpty(item) {
				e.buf = append(e.buf, "{}\n"...)
				continue
			}
			e.mapping(item, n+2, true)
		case reflect.Slice:
			e.fail("nested sequences are not supported")
		case reflect.String:
			e.scalarString(item.String())
			e.buf = append(e.buf, '\n')
		default:
			e.scalar(item)
			e.buf = append(e.buf, '\n')
		}
	}
}

func (e *encoder) scalar(v reflect.Value) {
	switch v.Kind() {
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case reflect.Int, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case reflect.String:
		e.scalarString(v.String())
	default:
		e.fail("unsupported kind %s", v.Kind())
	}
}

// scalarString writes s plain when every YAML 1.1 and 1.2 reader takes it
// back as the same string, double-quoted otherwise.
func (e *encoder) scalarString(s string) {
	if plainOK(s) {
		e.buf = append(e.buf, s...)
		return
	}
	e.quoted(s)
}

// appendString returns s as a YAML scalar.
func (e *encoder) appendString(s string) []byte {
	e.scalarString(s)
	return e.buf
}

func (e *encoder) quoted(s string) {
	const hex = "0123456789abcdef"
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			e.buf = append(e.buf, '\\', 'x', hex[s[i]>>4], hex[s[i]&0xf])
		case r == '"' || r == '\\':
			e.buf = append(e.buf, '\\', byte(r))
		case r == '\n':
			e.buf = append(e.buf, '\\', 'n')
		case r == '\t':
			e.buf = append(e.buf, '\\', 't')
		case r == '\r':
			e.buf = append(e.buf, '\\', 'r')
		case r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xfeff:
			e.buf = append(e.buf, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			e.buf = append(e.buf, s[i:i+size]...)
		}
		i += size
	}
	e.buf = append(e.buf, '"')
}

// literal writes s (multi-line, literalOK) as a literal block scalar whose
// lines are indented by n.
func (e *encoder) literal(s string, n int) {
	switch {
	case strings.HasSuffix(s, "\n"):
		e.buf = append(e.buf, ": |\n"...)
		s = s[:len(s)-1]
	default:
		e.buf = append(e.buf, ": |-\n"...)
	}
	for line := range strings.SplitSeq(s, "\n") {
		if line != "" {
			e.indent(n)
			e.buf = append(e.buf, line...)
		}
		e.buf = append(e.buf, '\n')
	}
}

// literalOK reports whether s can be a literal block scalar that reads back
// unchanged: printable UTF-8, no carriage returns, the first line not
// starting with a space, at most one trailing newline and no line of only
// spaces (which a reader would take for indentation).
func literalOK(s string) bool {
	if !utf8.ValidString(s) || strings.HasSuffix(s, "\n\n") || strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\n") {
		return false
	}
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xfeff {
			return false
		}
	}
	for line := range strings.SplitSeq(s, "\n") {
		if line != "" && strings.TrimRight(line, " \t") != line {
			return false
		}
	}
	return true
}

// plainOK reports whether s may be written as a plain scalar: a conservative
// character set, no indicator first, nothing that YAML 1.1 or 1.2 resolves to
// a bool, null, number or timestamp.
func plainOK(s string) bool {
	if s == "" {
		return false
	}
	c := s[0]
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '/' || c == '.') {
		return false
	}
	if c == '.' && (len(s) == 1 || s[1] >= '0' && s[1] <= '9') {
		return false // ".", ".5"
	}
	hasLetter := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			hasLetter = true
		case c >= '0' && c <= '9', c == '_', c == '.', c == '/', c == '-', c == '@', c == '+', c == '=':
		case c == ':':
			// "a:b" is plain, "a: b" and a trailing ":" are not.
			if i == len(s)-1 || s[i+1] == ' ' {
				return false
			}
		case c == ' ':
			if i == len(s)-1 || s[i+1] == ' ' || s[i+1] == '#' || s[i-1] == ':' {
				return false
			}
		default:
			return false
		}
	}
	if len(s) <= 5 {
		for _, w := range [...]string{"y", "n", "yes", "no", "on", "off", "true", "false", "null", ".inf", ".nan"} {
			if strings.EqualFold(s, w) {
				return false
			}
		}
	}
	if c >= '0' && c <= '9' {
		// Numbers, timestamps and sexagesimals all start with a digit; a
		// digit-led string is plain only with a letter that no number
		// holds (1e5, 0x1f, 0o17 and 0b1 are numbers), no colon and no
		// space.
		if !hasLetter || strings.ContainsAny(s, ": ") {
			return false
		}
		if len(s) > 1 && s[0] == '0' && strings.IndexByte("xXoObB", s[1]) >= 0 {
			return false
		}
		numeric := true
		for i := 0; i < len(s); i++ {
			if strings.IndexByte("0123456789._+-eE", s[i]) < 0 {
				numeric = false
				break
			}
		}
		if numeric {
			return false
		}
	}
	return true
}
