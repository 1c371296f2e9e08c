// Package strictyaml is fleetgen's one decoder of the YAML documents it reads
// (fleet.yaml, fleet.lock.yaml), as kind has one for every config document:
// exactly one document, no alias, bounded in bytes and nodes, decoded into Go
// values by their json tag names with unknown fields, duplicate keys and
// nodes of the wrong kind refused. Every problem is a problem.FieldError
// with the file, line, column and field path; Decode also returns where
// every field path stands, for the checks that come after it.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// Pos is a line and column (both 1-based) in a document.
type Pos struct {
	Line, Column int
}

// Doc describes one kind of document: its caps and how its errors read.
type Doc struct {
	File     string // names the input in every error
	MaxSize  int    // the most bytes
	MaxItems int    // the most YAML separators (CountItems)

	// Name (fleet.yaml), Kind and APIVersion say what a valid document is
	// in the whole-document errors of a document people write.
	Name, Kind, APIVersion string

	// Opaque marks a document a program writes and pull requests bring (the
	// lock). No error quotes it, not a key, a value or the YAML parser's
	// message: errors say where and what is wanted, and a whole-document
	// error ends in Want. Its strings are non-empty YAML strings, null
	// stands only for an empty list, and a field without omitempty is
	// required. Its types hold structs, lists and strings only.
	Opaque bool
	Want   string
}

// Decode parses data, one YAML document, into v (a pointer to a struct of the
// shapes decoder.value takes) strictly and returns where each field path
// stands and every problem. ok is false when the document as a whole is
// refused (too large, not text, not YAML, not one mapping): errs holds that
// one problem and v is untouched.
func Decode(data []byte, v any, doc Doc) (pos map[string]Pos, errs problem.Errors, ok bool) {
	root, items, errs := doc.parse(data)
	if errs != nil {
		return nil, errs, false
	}
	// Every field path gets a position; a map sized for them (about one per
	// ':' of the file) is not rebuilt as it grows.
	pos = make(map[string]Pos, items/2)
	pos[""] = Pos{root.Line, root.Column}
	d := &decoder{Doc: doc, pos: pos, types: map[reflect.Type]fieldList{}, seen: map[*yaml.Node]map[string]int{}}
	d.value("", root, reflect.ValueOf(v).Elem())
	return d.pos, d.errs, true
}

// refuse is the one problem of a document refused whole, at line: the
// message format says for a document people write, short and Want (no
// content) for an opaque one.
func (doc *Doc) refuse(mk func(path, format string, args ...any) *problem.FieldError, line int, short, format string, args ...any) problem.Errors {
	e := mk("", format, args...)
	if doc.Opaque {
		e = mk("", "%s: %s", short, doc.Want)
	}
	return problem.Errors{e.At(doc.File, line, 0)}
}

// parse checks data as a whole and returns its top-level mapping and
// CountItems.
func (doc *Doc) parse(data []byte) (*yaml.Node, int, problem.Errors) {
	if len(data) > doc.MaxSize {
		return nil, 0, doc.refuse(problem.TooLarge, 0, fmt.Sprintf("larger than %d bytes", doc.MaxSize),
			"file is %d bytes: want at most %d (is this really a %s?)", len(data), doc.MaxSize, doc.Name)
	}
	empty := func() problem.Errors {
		return doc.refuse(problem.Empty, 0, "empty file", "empty file: want a %s document (apiVersion: %s, kind: %s)", doc.Kind, doc.APIVersion, doc.Kind)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, 0, empty()
	}
	if !utf8.Valid(data) {
		i := firstInvalidUTF8(data)
		return nil, 0, doc.refuse(problem.NotText, 1+bytes.Count(data[:i], []byte("\n")), "not UTF-8 text",
			"not UTF-8 text (a binary file?): want a YAML %s document", doc.Kind)
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, 0, doc.refuse(problem.NotText, 1+bytes.Count(data[:i], []byte("\n")), "not UTF-8 text",
			"contains a NUL byte (a binary file?): want a YAML %s document", doc.Kind)
	}
	items := CountItems(data, doc.MaxItems)
	if items > doc.MaxItems {
		return nil, 0, doc.refuse(problem.TooLarge, 0, fmt.Sprintf("more than %d YAML items", doc.MaxItems),
			"file has more than %d YAML items: want a smaller %s (is this really a %s?)", doc.MaxItems, doc.Name, doc.Name)
	}

	var first yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := safeDecode(dec, &first); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, empty()
		}
		return nil, 0, doc.syntaxError(data, err)
	}
	var extra yaml.Node
	switch err := safeDecode(dec, &extra); {
	case err == nil:
		return nil, 0, doc.refuse(problem.MultiDoc, extra.Line, "a second YAML document",
			"a second YAML document: want exactly one %s document per file", doc.Kind)
	case !errors.Is(err, io.EOF):
		return nil, 0, doc.syntaxError(data, err)
	}
	root := &first
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if a := findAlias(root); a != nil {
		// Aliases are refused outright rather than expanded with a budget:
		// no document needs them, and it rules out alias bombs by
		// construction.
		return nil, 0, doc.refuse(problem.Alias, a.Line, "a YAML alias",
			"YAML aliases (*%s) are not supported: write the value out", a.Value)
	}
	if root.Kind != yaml.MappingNode {
		return nil, 0, doc.refuse(problem.NotAMapping, root.Line, "not a mapping",
			"top level is %s: want a mapping (a %s document with apiVersion: %s, kind: %s)", kindName(root), doc.Kind, doc.APIVersion, doc.Kind)
	}
	return root, items, nil
}

// safeDecode turns a panic inside the YAML library into an error: the
// documents come with pull requests and must never crash the program.
func safeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: unparsable input")
		}
	}()
	return dec.Decode(n)
}

// CountItems counts the bytes that separate YAML nodes, stopping a little
// past max: a bound on what a YAML parse of data may allocate, checked
// before parsing.
func CountItems(data []byte, max int) int {
	n := 0
	for _, c := range data {
		switch c {
		case ',', ':', '-', '[', '{', '\n':
			n++
			if n > max {
				return n
			}
		}
	}
	return n
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
