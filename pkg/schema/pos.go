package schema

import (
	"strings"
	"sync"

	"fleetgen.dev/fleetgen/internal/strictyaml"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// Pos returns where the field at path (spec.clusters[3].registration.mode)
// stands in f.File: the value of a scalar field, the key of a mapping or list
// field, the item of a list. A path the file does not spell out (a defaulted
// field) falls back to its nearest parent that it does. The zero Pos means
// unknown (a Fleet built in Go).
func (f *Fleet) Pos(path string) Pos {
	pos := f.positions()
	for {
		if p, ok := pos[path]; ok {
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
	_, ok := f.positions()[path]
	return ok
}

// posSource is fleet.yaml as Load decoded it, to find its positions again
// once DropPositions let them go.
type posSource struct {
	data []byte
	doc  strictyaml.Doc
	once sync.Once
	pos  map[string]Pos
}

// DropPositions lets go of where each field stands in fleet.yaml, once the
// checks that place their problems with them are done; Pos, Has and At then
// decode fleet.yaml's bytes again, once, when first asked. It must not run
// beside a call of those. A Fleet built in Go keeps what it has.
func (f *Fleet) DropPositions() {
	if f.src != nil {
		f.pos = nil
	}
}

// positions is f.pos, or, after DropPositions, the same map found again.
func (f *Fleet) positions() map[string]Pos {
	if f.pos != nil || f.src == nil {
		return f.pos
	}
	s := f.src
	s.once.Do(func() {
		var again Fleet
		s.pos, _, _ = strictyaml.Decode(s.data, &again, s.doc)
	})
	return s.pos
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
