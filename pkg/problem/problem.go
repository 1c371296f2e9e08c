// Package problem holds what is wrong with the input: field errors with their
// place and stable code, and the input-or-usage mark the CLI exits 2 for. It
// imports nothing of fleetgen, so every package can report a problem
// without depending on the schema.
package problem

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// FieldError is one problem with the input: where it is, which field, what is
// wrong and what would be valid.
type FieldError struct {
	File   string // path of fleet.yaml as given; may be empty
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	Path   string // field path, e.g. spec.clusters[3].registration.mode
	Msg    string // what is wrong and what would be valid
	// Code names the rule that failed, stable across releases, for machines
	// (CI annotations, editors); see the Code* constants. Empty means "derive
	// it from the message" (ErrorCode).
	Code string
}

// Stable problem codes (FieldError.Code). docs/cli.md lists them; a code once
// published keeps its meaning.
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
	CodeEmptySelection  = "empty-selection"  // a manager (spec.argocd, …) selects no cluster
	CodeNotEvaluated    = "not-evaluated"    // an ApplicationSet generator or template fleetgen does not preview
	CodeApplicationSet  = "applicationset"   // an ApplicationSet Argo CD's controller would refuse
)

// codeRules derive a code from the message of a FieldError made without one
// (Validate's rules and later checks write their messages to one pattern:
// "X is required: want …", "unsupported value …", "invalid X …"). First match
// wins.
var codeRules = []struct {
	re   *regexp.Regexp
	code string
}{
	{regexp.MustCompile(`^unknown field `), CodeUnknownField},
	{regexp.MustCompile(`^file (is|has) (larger|more) `), CodeTooLarge},
	{regexp.MustCompile(`^duplicate key `), CodeDuplicateKey},
	{regexp.MustCompile(`^(invalid duration|duration .* out of range|token TTL .* not positive)`), CodeDuration},
	{regexp.MustCompile(`^duplicate `), CodeDuplicate},
	{regexp.MustCompile(`^dependency cycle|depends on itself`), CodeCycle},
	{regexp.MustCompile(`^unknown `), CodeUnknownRef},
	{regexp.MustCompile(`applies only to |is not accepted here`), CodeNotApplicable},
	{regexp.MustCompile(`^cannot read `), CodeUnreadable},
	{regexp.MustCompile(`^environment variable .* not set`), CodeUnsetEnv},
	{regexp.MustCompile(`has no label `), CodeMissingLabel},
	{regexp.MustCompile(`^unsupported `), CodeUnsupported},
	{regexp.MustCompile(`(^| )(is )?required\b|^no |^want exactly one`), CodeRequired},
	{regexp.MustCompile(`^(invalid|got) `), CodeInvalid},
}

// ErrorCode returns e.Code, or when it is empty the code its message's
// pattern implies, CodeOther when none does. It never returns "".
func (e *FieldError) ErrorCode() string {
	if e.Code != "" {
		return e.Code
	}
	for _, r := range codeRules {
		if r.re.MatchString(e.Msg) {
			return r.code
		}
	}
	return CodeOther
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
