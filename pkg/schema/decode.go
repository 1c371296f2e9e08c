package schema

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"fleetgen.dev/fleetgen/pkg/problem"
	"go.yaml.in/yaml/v3"
)

// MaxFileSize is the largest fleet.yaml Load and Parse accept, and MaxItems
// the most YAML separators (',' ':' '-' '[' '{' and line breaks, a bound on
// the number of YAML nodes) in it. A fleet of 10,000 clusters is about 1 MiB
// and 160,000 separators; the caps keep a runaway or hostile file from
// exhausting memory (a file at the cap parses in about 2 s and 400 MiB).
const (
	MaxFileSize = 16 << 20
	MaxItems    = 1_000_000
)

// decoder walks a yaml.Node tree into Go values by their json tag names,
// recording where every field path stands and collecting every problem.
type decoder struct {
	file   string
	pos    map[string]Pos
	errs   problem.Errors
	fields map[reflect.Type][]fieldInfo
	seen   map[*yaml.Node]map[string]int // keys of long mappings, by mapping
}

func (d *decoder) add(n *yaml.Node, e *problem.FieldError) {
	e.File = d.file
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// decodeDocument parses data into f. It returns the decode problems; the
// result is only usable when none of them is a whole-document problem (the
// returned bool is false then).
func decodeDocument(file string, data []byte, f *Fleet) (errs problem.Errors, ok bool) {
	one := func(line int, e *problem.FieldError) (problem.Errors, bool) {
		e.File, e.Line = file, line
		return problem.Errors{e}, false
	}
	if len(data) > MaxFileSize {
		return one(0, problem.TooLarge("", "file is %d bytes: want at most %d (is this really a fleet.yaml?)", len(data), MaxFileSize))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return one(0, problem.Empty("", "empty file: want a Fleet document (apiVersion: %s, kind: %s)", APIVersion, Kind))
	}
	if !utf8.Valid(data) {
		i := firstInvalidUTF8(data)
		return one(1+bytes.Count(data[:i], []byte("\n")), problem.NotText("", "not UTF-8 text (a binary file?): want a YAML Fleet document"))
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return one(1+bytes.Count(data[:i], []byte("\n")), problem.NotText("", "contains a NUL byte (a binary file?): want a YAML Fleet document"))
	}

	items := CountItems(data)
	if items > MaxItems {
		return one(0, problem.TooLarge("", "file has more than %d YAML items: want a smaller fleet.yaml (is this really a fleet.yaml?)", MaxItems))
	}

	root, errs := parseYAML(file, data)
	if errs != nil {
		return errs, false
	}
	if a := findAlias(root); a != nil {
		// Aliases are rejected outright rather than expanded with a budget:
		// no fleet needs them, and it rules out alias bombs by construction.
		return one(a.Line, problem.Alias("", "YAML aliases (*%s) are not supported: write the value out", a.Value))
	}
	if root.Kind != yaml.MappingNode {
		return one(root.Line, problem.NotAMapping("", "top level is %s: want a mapping (a Fleet document with apiVersion: %s, kind: %s)", kindName(root), APIVersion, Kind))
	}

	// Every field path gets a position; a map sized for them (about one per
	// ':' of the file) is not rebuilt as it grows.
	pos := make(map[string]Pos, items/2)
	pos[""] = Pos{root.Line, root.Column}
	d := &decoder{file: file, pos: pos, fields: map[reflect.Type][]fieldInfo{}, seen: map[*yaml.Node]map[string]int{}}
	d.value("", root, reflect.ValueOf(f).Elem())
	f.pos = d.pos
	return d.errs, true
}

// parseYAML parses data with yaml.v3: any YAML, exactly one document.
func parseYAML(file string, data []byte) (*yaml.Node, problem.Errors) {
	one := func(line int, e *problem.FieldError) problem.Errors {
		e.File, e.Line = file, line
		return problem.Errors{e}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := safeDecode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, one(0, problem.Empty("", "empty file: want a Fleet document (apiVersion: %s, kind: %s)", APIVersion, Kind))
		}
		return nil, syntaxError(file, data, err)
	}
	var extra yaml.Node
	switch err := safeDecode(dec, &extra); {
	case err == nil:
		return nil, one(extra.Line, problem.MultiDoc("", "a second YAML document: want exactly one Fleet document per file"))
	case !errors.Is(err, io.EOF):
		return nil, syntaxError(file, data, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	return root, nil
}

// safeDecode turns a panic inside the YAML library into an error: fleet.yaml
// is user input and must never crash the program.
func safeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: unparsable input")
		}
	}()
	return dec.Decode(n)
}

// CountItems counts the bytes that separate YAML nodes, stopping a little
// past MaxItems: a bound on what a YAML parse of data may allocate, checked
// before parsing (fleet.yaml here, the lock in pkg/lock).
func CountItems(data []byte) int {
	n := 0
	for _, c := range data {
		switch c {
		case ',', ':', '-', '[', '{', '\n':
			n++
			if n > MaxItems {
				return n
			}
		}
	}
	return n
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\r", " ")
	return strings.ReplaceAll(s, "\n", " ")
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// findAlias returns the first alias node in document order, without
// following any alias.
func findAlias(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return n
	}
	for _, c := range n.Content {
		if a := findAlias(c); a != nil {
			return a
		}
	}
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return "a string"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		}
		return "a scalar (" + strings.TrimPrefix(n.ShortTag(), "!!") + ")"
	case yaml.DocumentNode:
		return "a document"
	}
	return "an alias"
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// value decodes n into v, which is one of the shapes the Fleet types use:
// struct, pointer to struct, string, bool, *bool, int, int32, int64, *int64,
// slice and map[string]string.
func (d *decoder) value(path string, n *yaml.Node, v reflect.Value) {
	if _, ok := d.pos[path]; !ok {
		d.pos[path] = Pos{n.Line, n.Column}
	}
	if isNull(n) {
		return // an explicit null leaves the field unset
	}
	switch v.Kind() {
	case reflect.Pointer:
		switch v.Type().Elem().Kind() {
		case reflect.Bool:
			var b bool
			if d.bool(path, n, &b) {
				v.Set(reflect.ValueOf(&b))
			}
			return
		case reflect.Int, reflect.Int32, reflect.Int64:
			p := reflect.New(v.Type().Elem())
			if d.int(path, n, p.Elem()) {
				v.Set(p)
			}
			return
		}
		p := reflect.New(v.Type().Elem())
		d.value(path, n, p.Elem())
		v.Set(p)
	case reflect.Struct:
		d.structure(path, n, v)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.add(n, problem.WrongType(path, "got %s: want a string", kindName(n)))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if d.bool(path, n, &b) {
			v.SetBool(b)
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		d.int(path, n, v)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.add(n, problem.WrongType(path, "got %s: want a list", kindName(n)))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.value(path+"["+strconv.Itoa(i)+"]", c, s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		d.stringMap(path, n, v)
	default:
		d.add(n, problem.WrongType(path, "cannot decode into %s", v.Type())) // unreachable for the Fleet types
	}
}

func (d *decoder) bool(path string, n *yaml.Node, b *bool) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		if n.Kind == yaml.ScalarNode {
			d.add(n, problem.WrongType(path, "got %q: want true or false", n.Value))
		} else {
			d.add(n, problem.WrongType(path, "got %s: want true or false", kindName(n)))
		}
		return false
	}
	if err := n.Decode(b); err != nil {
		d.add(n, problem.WrongType(path, "got %q: want true or false", n.Value))
		return false
	}
	return true
}

// int decodes an integer scalar into v (int, int32 or int64), refusing one
// that does not fit.
func (d *decoder) int(path string, n *yaml.Node, v reflect.Value) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		if n.Kind == yaml.ScalarNode {
			d.add(n, problem.WrongType(path, "got %q: want an integer", n.Value))
		} else {
			d.add(n, problem.WrongType(path, "got %s: want an integer", kindName(n)))
		}
		return false
	}
	var i int64
	if err := n.Decode(&i); err != nil || v.OverflowInt(i) {
		d.add(n, problem.WrongType(path, "got %q: want an integer of at most %d bits", n.Value, v.Type().Bits()))
		return false
	}
	v.SetInt(i)
	return true
}

// key checks a mapping key and returns its text; ok is false when it is not a
// usable key or repeats an earlier one.
// The path of a key's error is child(key).
func (d *decoder) key(path string, k *yaml.Node, n *yaml.Node, i int, child func(string) string) (string, bool) {
	if k.Kind != yaml.ScalarNode {
		d.add(k, problem.WrongType(path, "key is %s: want a string", kindName(k)))
		return "", false
	}
	// The keys before it. Most mappings of fleet.yaml have a handful, for
	// which a scan is cheaper than a map per mapping; a long one (a hostile
	// file's, say) gets a map, so that the check stays linear.
	if len(n.Content) <= 2*smallMapping {
		for j := 0; j < i; j += 2 {
			if e := n.Content[j]; e.Kind == yaml.ScalarNode && e.Value == k.Value {
				d.add(k, problem.DuplicateKey(child(k.Value), "duplicate key %q (first at line %d): want each key once", k.Value, e.Line))
				return "", false
			}
		}
		return k.Value, true
	}
	seen := d.seen[n]
	if seen == nil {
		seen = map[string]int{}
		d.seen[n] = seen
	}
	if first, dup := seen[k.Value]; dup {
		d.add(k, problem.DuplicateKey(child(k.Value), "duplicate key %q (first at line %d): want each key once", k.Value, first))
		return "", false
	}
	seen[k.Value] = k.Line
	return k.Value, true
}

// smallMapping: mappings with at most this many keys are checked for
// duplicates by a scan.
const smallMapping = 16

func (d *decoder) stringMap(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.add(n, problem.WrongType(path, "got %s: want a mapping of strings", kindName(n)))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key, ok := d.key(path, k, n, i, func(key string) string { return path + "[" + key + "]" })
		if !ok {
			continue
		}
		p := path + "[" + key + "]"
		d.pos[p] = Pos{k.Line, k.Column}
		if val.Kind != yaml.ScalarNode {
			d.add(val, problem.WrongType(p, "got %s: want a string", kindName(val)))
			continue
		}
		s := val.Value
		if isNull(val) {
			s = ""
		}
		m.SetMapIndex(reflect.ValueOf(key), reflect.ValueOf(s))
	}
	v.Set(m)
}

type fieldInfo struct {
	name  string
	index int
}

// fields lists the decodable fields of a struct type by json tag name.
func fields(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" || name == "" {
			continue
		}
		out = append(out, fieldInfo{name, i})
	}
	return out
}

func (d *decoder) structure(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.add(n, problem.WrongType(path, "got %s: want a mapping", kindName(n)))
		return
	}
	fs, ok := d.fields[v.Type()]
	if !ok {
		fs = fields(v.Type())
		d.fields[v.Type()] = fs
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key, ok := d.key(path, k, n, i, func(key string) string { return join(path, key) })
		if !ok {
			continue
		}
		idx := -1
		for _, f := range fs {
			if f.name == key {
				idx = f.index
				break
			}
		}
		p := join(path, key)
		if idx < 0 {
			names := make([]string, len(fs))
			for j, f := range fs {
				names[j] = f.name
			}
			d.add(k, problem.UnknownField(p, "unknown field %q%s: want one of %s", key, didYouMean(key, names), strings.Join(names, ", ")))
			continue
		}
		// Scalars are located at their value, collections at their key, so
		// that "x: required" errors point at the line that opens x.
		at := val
		if val.Kind != yaml.ScalarNode {
			at = k
		}
		d.pos[p] = Pos{at.Line, at.Column}
		d.value(p, val, v.Field(idx))
	}
}
