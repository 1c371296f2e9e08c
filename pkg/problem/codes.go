package problem

import (
	"fmt"
	"strings"
)

// Stable problem codes (FieldError.ErrorCode). docs/cli.md lists them; a code
// once published keeps its meaning. Each has the constructor named after it
// below: the code of a problem is chosen where the problem is made, never
// read from its message.
const (
	// Whole-document problems.
	CodeYAMLSyntax   = "yaml-syntax"   // not well-formed YAML
	CodeEmpty        = "empty"         // no document at all
	CodeTooLarge     = "too-large"     // over MaxFileSize or MaxItems
	CodeNotText      = "not-text"      // invalid UTF-8 or a NUL byte
	CodeMultiDoc     = "multiple-docs" // more than one YAML document
	CodeYAMLAlias    = "yaml-alias"    // aliases are not supported
	CodeNotAMapping  = "not-a-mapping" // the top level is not a mapping
	CodeUnknownField = "unknown-field" // a key the type does not have
	CodeDuplicateKey = "duplicate-key" // a key given twice in one mapping
	CodeWrongType    = "wrong-type"    // a list where a string belongs, …

	// Rules of Validate (and the checks of later steps).
	CodeRequired      = "required"          // a required field is missing or empty
	CodeUnsupported   = "unsupported-value" // a value outside an enum
	CodeInvalid       = "invalid-value"     // a value of the wrong form
	CodeDuration      = "invalid-duration"  // not a Flux duration, or out of range
	CodeDuplicate     = "duplicate"         // a name or ID given twice
	CodeUnknownRef    = "unknown-reference" // names something that does not exist
	CodeCycle         = "dependency-cycle"  // dependsOn loops
	CodeNotApplicable = "not-applicable"    // a field the mode does not use
	CodeUnreadable    = "unreadable-file"   // a {file: …} that cannot be read
	CodeUnsetEnv      = "unset-env"         // an {env: …} that is not set
	CodeMissingLabel  = "missing-label"     // ${label} a selected cluster lacks
	CodeOther         = "invalid"           // any other rule

	// Warnings (Warnings): valid input that is likely a mistake.
	CodeEmptyGroup      = "empty-group"      // a ClusterGroup that holds no Fleet cluster
	CodeUnmatchedTarget = "unmatched-target" // a delivery target that reaches no cluster
	CodeEmptySelection  = "empty-selection"  // spec.argocd selects no cluster
)

// Constructors, one per code, after apimachinery's field.Required,
// field.NotSupported, …: each returns the problem at the field path (""
// for the whole document) with the message format says, made one line. The
// caller places it: File, Line and Column (schema's Fleet.At does it by the
// path).

func Syntax(path, format string, args ...any) *FieldError {
	return newf(CodeYAMLSyntax, path, fmt.Sprintf(format, args...))
}
func Empty(path, format string, args ...any) *FieldError {
	return newf(CodeEmpty, path, fmt.Sprintf(format, args...))
}
func TooLarge(path, format string, args ...any) *FieldError {
	return newf(CodeTooLarge, path, fmt.Sprintf(format, args...))
}
func NotText(path, format string, args ...any) *FieldError {
	return newf(CodeNotText, path, fmt.Sprintf(format, args...))
}
func MultiDoc(path, format string, args ...any) *FieldError {
	return newf(CodeMultiDoc, path, fmt.Sprintf(format, args...))
}
func Alias(path, format string, args ...any) *FieldError {
	return newf(CodeYAMLAlias, path, fmt.Sprintf(format, args...))
}
func NotAMapping(path, format string, args ...any) *FieldError {
	return newf(CodeNotAMapping, path, fmt.Sprintf(format, args...))
}
func UnknownField(path, format string, args ...any) *FieldError {
	return newf(CodeUnknownField, path, fmt.Sprintf(format, args...))
}
func DuplicateKey(path, format string, args ...any) *FieldError {
	return newf(CodeDuplicateKey, path, fmt.Sprintf(format, args...))
}
func WrongType(path, format string, args ...any) *FieldError {
	return newf(CodeWrongType, path, fmt.Sprintf(format, args...))
}
func Required(path, format string, args ...any) *FieldError {
	return newf(CodeRequired, path, fmt.Sprintf(format, args...))
}

// NotSupported is CodeUnsupported: a value outside a fixed set.
func NotSupported(path, format string, args ...any) *FieldError {
	return newf(CodeUnsupported, path, fmt.Sprintf(format, args...))
}

// InvalidValue is CodeInvalid: a value of the wrong form. (Invalid marks an
// error as the input's.)
func InvalidValue(path, format string, args ...any) *FieldError {
	return newf(CodeInvalid, path, fmt.Sprintf(format, args...))
}

// InvalidDuration is CodeDuration.
func InvalidDuration(path, format string, args ...any) *FieldError {
	return newf(CodeDuration, path, fmt.Sprintf(format, args...))
}
func Duplicate(path, format string, args ...any) *FieldError {
	return newf(CodeDuplicate, path, fmt.Sprintf(format, args...))
}

// NotFound is CodeUnknownRef: a name that names nothing.
func NotFound(path, format string, args ...any) *FieldError {
	return newf(CodeUnknownRef, path, fmt.Sprintf(format, args...))
}
func Cycle(path, format string, args ...any) *FieldError {
	return newf(CodeCycle, path, fmt.Sprintf(format, args...))
}
func NotApplicable(path, format string, args ...any) *FieldError {
	return newf(CodeNotApplicable, path, fmt.Sprintf(format, args...))
}
func Unreadable(path, format string, args ...any) *FieldError {
	return newf(CodeUnreadable, path, fmt.Sprintf(format, args...))
}
func UnsetEnv(path, format string, args ...any) *FieldError {
	return newf(CodeUnsetEnv, path, fmt.Sprintf(format, args...))
}
func MissingLabel(path, format string, args ...any) *FieldError {
	return newf(CodeMissingLabel, path, fmt.Sprintf(format, args...))
}

// Other is CodeOther: a rule no other code names.
func Other(path, format string, args ...any) *FieldError {
	return newf(CodeOther, path, fmt.Sprintf(format, args...))
}
func EmptyGroup(path, format string, args ...any) *FieldError {
	return newf(CodeEmptyGroup, path, fmt.Sprintf(format, args...))
}
func UnmatchedTarget(path, format string, args ...any) *FieldError {
	return newf(CodeUnmatchedTarget, path, fmt.Sprintf(format, args...))
}
func EmptySelection(path, format string, args ...any) *FieldError {
	return newf(CodeEmptySelection, path, fmt.Sprintf(format, args...))
}

func newf(code, path, msg string) *FieldError {
	return &FieldError{Path: path, Msg: strings.NewReplacer("\r", " ", "\n", " ").Replace(msg), Code: code}
}
