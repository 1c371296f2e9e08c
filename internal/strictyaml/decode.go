package strictyaml

import (
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// decoder walks a yaml.Node tree into Go values by their json tag names,
// recording where every field path stands and collecting every problem.
type decoder struct {
	Doc
	pos   map[string]Pos
	errs  problem.Errors
	types map[reflect.Type]fieldList    // the fields of each struct type met
	seen  map[*yaml.Node]map[string]int // keys of long mappings, by mapping
}

func (d *decoder) add(n *yaml.Node, e *problem.FieldError) {
	d.errs = append(d.errs, e.At(d.File, n.Line, n.Column))
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

// Join is the path of field in the struct at path.
func Join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

// value decodes n into v, which is one of the shapes the document types
// use: struct, pointer to struct, string, bool, *bool, int, int32, int64,
// *int64, slice and map[string]string.
func (d *decoder) value(path string, n *yaml.Node, v reflect.Value) {
	if _, ok := d.pos[path]; !ok {
		d.pos[path] = Pos{n.Line, n.Column}
	}
	if isNull(n) && (!d.Opaque || v.Kind() == reflect.Slice) {
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
		switch {
		case d.Opaque && (n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" || n.Value == ""):
			d.add(n, problem.WrongType(path, "want a non-empty string"))
		case n.Kind != yaml.ScalarNode:
			d.add(n, problem.WrongType(path, "got %s: want a string", kindName(n)))
		default:
			v.SetString(n.Value)
		}
	case reflect.Bool:
		var b bool
		if d.bool(path, n, &b) {
			v.SetBool(b)
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		d.int(path, n, v)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			e := problem.WrongType(path, "got %s: want a list", kindName(n))
			if d.Opaque {
				e = problem.WrongType(path, "want a list")
			}
			d.add(n, e)
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
		d.add(n, problem.WrongType(path, "cannot decode into %s", v.Type())) // unreachable for the document types
	}
}

func (d *decoder) bool(path string, n *yaml.Node, b *bool) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(b) != nil {
		d.add(n, problem.WrongType(path, "got %s: want true or false", got(n)))
		return false
	}
	return true
}

// int decodes an integer scalar into v (int, int32 or int64), refusing one
// that does not fit.
func (d *decoder) int(path string, n *yaml.Node, v reflect.Value) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.add(n, problem.WrongType(path, "got %s: want an integer", got(n)))
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

// key checks a mapping key and returns its text; ok is false when it is not
// a usable key or repeats an earlier one. The path of a duplicate is
// child(key), and names are the keys n may have (for an opaque document's
// message, which names neither).
func (d *decoder) key(path string, k, n *yaml.Node, i int, child func(string) string, names []string) (string, bool) {
	if k.Kind != yaml.ScalarNode || d.Opaque && k.ShortTag() != "!!str" {
		if d.Opaque {
			d.add(k, problem.WrongType(path, "a key that is not a string: want %s", problem.OrList(names)))
		} else {
			d.add(k, problem.WrongType(path, "key is %s: want a string", kindName(k)))
		}
		return "", false
	}
	first := d.earlier(k, n, i)
	switch {
	case first == 0:
		return k.Value, true
	case d.Opaque:
		d.add(k, problem.DuplicateKey(path, "duplicate field: want each of %s once", problem.OrList(names)))
	default:
		d.add(k, problem.DuplicateKey(child(k.Value), "duplicate key %q (first at line %d): want each key once", k.Value, first))
	}
	return "", false
}

// earlier returns the line of an earlier key of n with k's text, 0 when
// there is none (k is n.Content[i]). Most mappings have a handful of keys,
// for which a scan is cheaper than a map per mapping; a long one (a hostile
// file's, say) gets a map, so that the check stays linear.
func (d *decoder) earlier(k, n *yaml.Node, i int) int {
	if len(n.Content) <= 2*smallMapping {
		for j := 0; j < i; j += 2 {
			if e := n.Content[j]; e.Kind == yaml.ScalarNode && e.Value == k.Value {
				return e.Line
			}
		}
		return 0
	}
	seen := d.seen[n]
	if seen == nil {
		seen = map[string]int{}
		d.seen[n] = seen
	}
	if first, dup := seen[k.Value]; dup {
		return first
	}
	seen[k.Value] = k.Line
	return 0
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
		key, ok := d.key(path, k, n, i, func(key string) string { return path + "[" + key + "]" }, nil)
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

// Field is a decodable field of a struct type: its json tag name, its index
// and whether the tag says omitempty (an opaque document requires the
// others).
type Field struct {
	Name      string
	Index     int
	OmitEmpty bool
}

// Fields lists the decodable fields of a struct type by json tag name, in
// declaration order.
func Fields(t reflect.Type) []Field {
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" || name == "" {
			continue
		}
		out = append(out, Field{name, i, strings.Contains(opts, "omitempty")})
	}
	return out
}

type fieldList struct {
	fields []Field
	names  []string
}

func (d *decoder) structure(path string, n *yaml.Node, v reflect.Value) {
	t, ok := d.types[v.Type()]
	if !ok {
		t.fields = Fields(v.Type())
		for _, f := range t.fields {
			t.names = append(t.names, f.Name)
		}
		d.types[v.Type()] = t
	}
	fs, names := t.fields, t.names
	if n.Kind != yaml.MappingNode {
		e := problem.WrongType(path, "got %s: want a mapping", kindName(n))
		if d.Opaque {
			e = problem.WrongType(path, "want a mapping with %s", problem.OrList(names))
		}
		d.add(n, e)
		return
	}
	var set []bool // which fields n sets, for an opaque document's required ones
	if d.Opaque {
		set = make([]bool, len(fs))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key, ok := d.key(path, k, n, i, func(key string) string { return Join(path, key) }, names)
		if !ok {
			continue
		}
		idx := -1
		for j, f := range fs {
			if f.Name == key {
				idx = j
				break
			}
		}
		p := Join(path, key)
		switch {
		case idx < 0 && d.Opaque:
			d.add(k, problem.UnknownField(path, "unknown field: want %s", problem.OrList(names)))
			continue
		case idx < 0:
			d.add(k, problem.UnknownField(p, "unknown field %q%s: want one of %s", key, problem.DidYouMean(key, names), strings.Join(names, ", ")))
			continue
		}
		if set != nil {
			set[idx] = true
		}
		// Scalars are located at their value, collections at their key, so
		// that "x: required" errors point at the line that opens x.
		at := val
		if val.Kind != yaml.ScalarNode {
			at = k
		}
		d.pos[p] = Pos{at.Line, at.Column}
		d.value(p, val, v.Field(fs[idx].Index))
	}
	for j, f := range fs {
		if set != nil && !f.OmitEmpty && !set[j] {
			d.add(n, problem.Required(Join(path, f.Name), "missing: want %s set", f.Name))
		}
	}
}

// got is what n is, for a message: the text of a scalar, else its kind.
func got(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return strconv.Quote(n.Value)
	}
	return kindName(n)
}
