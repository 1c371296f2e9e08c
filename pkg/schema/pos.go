package schema

import (
	"strings"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// Pos returns where the field at path (spec.clusters[3].registration.mode)
// stands in f.File: the value of a scalar field, the key of a mapping or list
// field, the item of a list. A path the file does not spell out (a defaulted
// field) falls back to its nearest parent that it does. The zero Pos means
// unknown (a Fleet built in Go).
func (f *Fleet) Pos(path string) Pos {
	for {
		if p, ok := f.pos[path]; ok {
			return p
		}
		if path == "" {
			return Pos{}
		}
		path = parentPath(path)
	}
}

// Has reports whether fleet.yaml spells out the field at path (rather than
// leaving it to Default). It is false for a Fleet built in Go.
func (f *Fleet) Has(path string) bool {
	_, ok := f.pos[path]
	return ok
}

// At places e, a problem made by one of problem's constructors, in f.File
// where its path stands (Pos), and returns it. Its message says what is
// wrong and what would be valid; it must never contain a credential.
func (f *Fleet) At(e *problem.FieldError) *problem.FieldError {
	p := f.Pos(e.Path)
	return e.At(f.File, p.Line, p.Column)
}

// parentPath strips the last element of a field path: a[1] -> a, a.b -> a,
// labels[x.y/z] -> labels, a -> "".
func parentPath(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndex(path, "["); i >= 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndex(path, "."); i >= 0 {
		return path[:i]
	}
	return ""
}
