// Package problem holds what is wrong with the input: field errors with their
// place and stable code, and the input-or-usage mark the CLI exits 2 for. It
// imports nothing of fleetgen, so every package can report a problem
// without depending on the schema.
package problem

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// FieldError is one problem with the input: where it is, which field, what is
// wrong and what would be valid.
type FieldError struct {
	File   string // path of the input (fleet.yaml, the lock) as given; may be empty
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	Path   string // field path, e.g. spec.clusters[3].registration.mode
	Msg    string // what is wrong and what would be valid
	// code names the rule that failed, for machines (CI annotations,
	// editors): a Code* constant, set by its constructor (ErrorCode).
	code string
}

// ErrorCode returns the code of the rule that failed, set by the
// constructor that made e (Required, NotSupported, …): never "" for a
// FieldError made by one, and a FieldError is made by nothing else.
func (e *FieldError) ErrorCode() string { return e.code }

// At places e in file at line and column (0: unknown) and returns it.
func (e *FieldError) At(file string, line, column int) *FieldError {
	e.File, e.Line, e.Column = file, line, column
	return e
}

// Error formats as file:line:col: path: msg, leaving out the parts it lacks
// (a column is only known with a line).
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Column > 0 {
				fmt.Fprintf(&b, ":%d", e.Column)
			}
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one input, in document order. The CLI exits 2
// for it.
type Errors []*FieldError

// Sort puts es in document order, by line and column; problems without a
// line keep their relative order ahead of the rest.
func (es Errors) Sort() {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return es[i].Column < es[j].Column
	})
}

// Error lists the problems one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// InvalidError marks an error caused by the user's input or usage rather than by
// the environment (registry, Git, file system). The CLI exits 2 for it.
type InvalidError struct {
	Err error
}

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// Invalid wraps err as an *InvalidError; nil stays nil.
func Invalid(err error) error {
	if err == nil {
		return nil
	}
	return &InvalidError{Err: err}
}

// IsInvalid reports whether err (or anything it wraps) is an input error:
// Errors, *FieldError or *InvalidError.
func IsInvalid(err error) bool {
	var es Errors
	var fe *FieldError
	var ie *InvalidError
	return errors.As(err, &es) || errors.As(err, &fe) || errors.As(err, &ie)
}
