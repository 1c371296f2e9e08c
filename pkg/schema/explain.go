package schema

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// Field is what `fleetgen explain` says about one field of fleet.yaml. It is
// read from the JSON Schema that JSONSchema prints (the same tree), so the
// two never disagree.
type Field struct {
	// Path is the field path with list elements as []:
	// spec.clusters[].registration.mode; "" is the document.
	Path string `json:"path"`
	// Type is string, boolean, integer, Object, []string, []Object,
	// map[string]string, …
	Type        string `json:"type"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
	// Default is the value a missing field takes; HasDefault says whether
	// there is one (a default of false or "" is one).
	Default    any  `json:"default,omitempty"`
	HasDefault bool `json:"hasDefault"`
	// Enum lists the valid values of a field that takes a fixed set.
	Enum []string `json:"enum,omitempty"`
	// Pattern is the regular expression a string must match, if any.
	Pattern string `json:"pattern,omitempty"`
	// Example is YAML: the field with an example value, in place under its
	// parents from the top of fleet.yaml.
	Example string `json:"example"`
	// Fields are an object's fields (a list's element's), in order.
	Fields []FieldSummary `json:"fields,omitempty"`
}

// FieldSummary is one field of an object, as explain lists it.
type FieldSummary struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Required    bool   `json:"required"`
	Description string `json:"description"`
}

// listIndex is what explain tolerates after a field name: [], [3], [*].
var listIndex = regexp.MustCompile(`\[(\d*|\*)\]`)

// Explain describes the field of fleet.yaml at path, written as validate
// names fields (spec.clusters[2].registration.mode), with [] or no index at
// all (spec.clusters.registration.mode), as kubectl explain takes them; "" or
// "fleet" is the whole document. An unknown field is an input error (exit 2)
// that suggests the closest field, or the full paths of fields of that name.
func Explain(path string) (*Field, error) {
	root := schemaFor("", reflect.TypeOf(Fleet{}))
	p := strings.TrimSpace(path)
	if p == "fleet" || p == "Fleet" || p == "." {
		p = ""
	}
	n, parents := root, []*node{}
	canon := ""
	if p != "" {
		for _, seg := range strings.Split(listIndex.ReplaceAllString(p, ""), ".") {
			for n.items != nil {
				n = n.items
			}
			if seg == "" || strings.ContainsAny(seg, "[]") {
				return nil, problem.Invalid(fmt.Errorf("explain %q: want a field path such as spec.clusters.registration.mode (list indexes [] or [0] are optional)", path))
			}
			if n.props == nil {
				return nil, problem.Invalid(fmt.Errorf("explain %q: %s is a %s, not an object: it has no field %q", path, canon, typeName(n), seg))
			}
			c, ok := n.props[seg]
			if !ok {
				return nil, unknownField(root, path, n, seg)
			}
			parents = append(parents, n)
			n, canon = c, c.path
		}
	}
	f := &Field{Path: canon, Type: typeName(n)}
	f.Description, _ = n.schema["description"].(string)
	if len(parents) > 0 {
		parent := parents[len(parents)-1]
		req, _ := parent.schema["required"].([]string)
		f.Required = slices.Contains(req, canon[strings.LastIndex(canon, ".")+1:])
	}
	f.Default, f.HasDefault = n.schema["default"]
	f.Enum, _ = n.schema["enum"].([]string)
	f.Pattern, _ = n.schema["pattern"].(string)
	if ex := exampleOf(n); ex != nil {
		b, err := inPlace(canon, ex)
		if err != nil {
			return nil, fmt.Errorf("explain %s: %w", canon, err)
		}
		f.Example = b
	}
	obj := n
	for obj.items != nil {
		obj = obj.items
	}
	req, _ := obj.schema["required"].([]string)
	for _, name := range obj.names {
		c := obj.props[name]
		desc, _ := c.schema["description"].(string)
		f.Fields = append(f.Fields, FieldSummary{Name: name, Type: typeName(c), Required: slices.Contains(req, name), Description: desc})
	}
	return f, nil
}

// unknownField is explain's error for seg, which the object n lacks: the
// closest field of n, or the fields of that name elsewhere.
func unknownField(root *node, path string, n *node, seg string) error {
	where := "fleet.yaml"
	if n.path != "" {
		where = n.path
	}
	hint := problem.DidYouMean(seg, n.names)
	if hint == "" {
		var elsewhere []string
		walkNodes(root, func(c *node) {
			if strings.HasSuffix(c.path, "."+seg) || c.path == seg {
				elsewhere = append(elsewhere, c.path)
			}
		})
		if len(elsewhere) > 0 {
			if len(elsewhere) > 5 {
				elsewhere = append(elsewhere[:5], "…")
			}
			hint = " (a field of that name: " + strings.Join(elsewhere, ", ") + ")"
		}
	}
	return problem.Invalid(fmt.Errorf("explain %q: %s has no field %q%s; its fields: %s", path, where, seg, hint, strings.Join(n.names, ", ")))
}

// walkNodes calls fn for every field below n, in document order.
func walkNodes(n *node, fn func(*node)) {
	for n.items != nil {
		n = n.items
	}
	for _, name := range n.names {
		c := n.props[name]
		fn(c)
		walkNodes(c, fn)
	}
}

// typeName is a field's type as kubectl explain writes it.
func typeName(n *node) string {
	switch t := n.schema["type"]; t {
	case "array":
		return "[]" + typeName(n.items)
	case "object":
		if n.props != nil {
			return "Object"
		}
		v := "string"
		if ap, ok := n.schema["additionalProperties"].(map[string]any); ok {
			switch at := ap["type"].(type) {
			case string:
				v = at
			case []string:
				v = strings.Join(at, "|")
			}
		}
		return "map[string]" + v
	default:
		s, _ := t.(string)
		return s
	}
}

// exampleOf is a field's example as a YAML node: its own (the schema's
// examples), else an enum's first value, a boolean's non-default, a list of
// its element's example, or an object made of its fields' examples (every
// field that is not itself an object or a list of objects, and those that
// are required; when that is none, the first field); nil when none can be
// made.
func exampleOf(n *node) *yaml.Node {
	if ex, ok := n.schema["examples"].([]any); ok && len(ex) > 0 {
		return toYAML(n, ex[0])
	}
	if enum, ok := n.schema["enum"].([]string); ok && len(enum) > 0 {
		return scalar(enum[0], "!!str")
	}
	switch n.schema["type"] {
	case "boolean":
		def, _ := n.schema["default"].(bool)
		return scalar(fmt.Sprint(!def), "!!bool")
	case "array":
		e := exampleOf(n.items)
		if e == nil {
			return nil
		}
		return &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{e}}
	case "object":
		if n.props == nil {
			return nil
		}
		req, _ := n.schema["required"].([]string)
		m := &yaml.Node{Kind: yaml.MappingNode}
		for _, name := range n.names {
			c := n.props[name]
			if nested(c) && !slices.Contains(req, name) {
				continue
			}
			if e := exampleOf(c); e != nil {
				m.Content = append(m.Content, scalar(name, "!!str"), e)
			}
		}
		// Only optional objects: the first one.
		for _, name := range n.names {
			if len(m.Content) > 0 {
				break
			}
			if e := exampleOf(n.props[name]); e != nil {
				m.Content = append(m.Content, scalar(name, "!!str"), e)
			}
		}
		if len(m.Content) == 0 {
			return nil
		}
		return m
	}
	return nil
}

// toYAML writes the example v of n with an object's fields in their order,
// a map's keys sorted.
func toYAML(n *node, v any) *yaml.Node {
	switch x := v.(type) {
	case map[string]any:
		m := &yaml.Node{Kind: yaml.MappingNode}
		keys := slices.Sorted(maps.Keys(x))
		if n != nil && n.props != nil {
			keys = slices.DeleteFunc(slices.Clone(n.names), func(k string) bool { _, ok := x[k]; return !ok })
		}
		for _, k := range keys {
			var c *node
			if n != nil {
				c = n.props[k]
			}
			m.Content = append(m.Content, scalar(k, "!!str"), toYAML(c, x[k]))
		}
		return m
	case []any:
		var item *node
		if n != nil {
			item = n.items
		}
		l := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range x {
			l.Content = append(l.Content, toYAML(item, e))
		}
		return l
	}
	var y yaml.Node
	if err := y.Encode(v); err != nil {
		return scalar(fmt.Sprint(v), "!!str")
	}
	return &y
}

// nested reports whether n is an object with fields or a list of them.
func nested(n *node) bool {
	for n.items != nil {
		n = n.items
	}
	return n.props != nil
}

func scalar(v, tag string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}
}

// inPlace writes ex as the value of the field at canon, under its parents
// from the top of fleet.yaml, each list a one-element list.
func inPlace(canon string, ex *yaml.Node) (string, error) {
	cur := ex
	if canon != "" {
		segs := strings.Split(canon, ".")
		for i := len(segs) - 1; i >= 0; i-- {
			name := segs[i]
			for strings.HasSuffix(name, "[]") {
				name = strings.TrimSuffix(name, "[]")
				cur = &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{cur}}
			}
			cur = &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar(name, "!!str"), cur}}
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(cur); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}
