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
	CodeEmptyGroup      = "empty-group"        // a ClusterGroup that holds no Fleet cluster
	CodeUnmatchedTarget = "unmatched-target"   // a delivery target that reaches no cluster
	CodeEmptySelection  = "empty-selection"    // a manager (spec.argocd, …) or a layer selector selects no cluster
	CodeUnanchored      = "unanchored-pattern" // a keyless subjectRegExp without ^ and $
	CodeNotEvaluated    = "not-evaluated"      // an ApplicationSet generator or template fleetgen does not preview
	CodeApplicationSet  = "applicationset"     // an ApplicationSet Argo CD's controller would refuse
	CodeNotFollowed     = "not-followed"       // what the model of what each cluster receives cannot follow
	CodeEmptyShard      = "empty-shard"        // a declared shard that receives nothing
	CodeShardLoad       = "shard-load"         // a shard carries more than 1.5x the mean
	CodeStatusSize      = "status-size"        // a delivery's GitRepo status nears etcd's limit

	// An image of a bundle of a delivery from the fleet's own repository that
	// is not written as the mirror reference by digest.
	CodeUnpinnedBundle = "unpinned-bundle-image"
)

// Constructors, one per code, after apimachinery's field.Required: each
// returns the problem at field path ("" for the whole document) with its code
// and the message format says, on one line, for the caller to place (At).

// Syntax is YAML that is not well-formed (CodeYAMLSyntax).
func Syntax(path, format string, args ...any) *FieldError {
	return newf(CodeYAMLSyntax, path, fmt.Sprintf(format, args...))
}

// Empty is no document at all (CodeEmpty).
func Empty(path, format string, args ...any) *FieldError {
	return newf(CodeEmpty, path, fmt.Sprintf(format, args...))
}

// TooLarge is a file over its size or item cap (CodeTooLarge).
func TooLarge(path, format string, args ...any) *FieldError {
	return newf(CodeTooLarge, path, fmt.Sprintf(format, args...))
}

// NotText is invalid UTF-8 or a NUL byte (CodeNotText).
func NotText(path, format string, args ...any) *FieldError {
	return newf(CodeNotText, path, fmt.Sprintf(format, args...))
}

// MultiDoc is a second YAML document (CodeMultiDoc).
func MultiDoc(path, format string, args ...any) *FieldError {
	return newf(CodeMultiDoc, path, fmt.Sprintf(format, args...))
}

// Alias is a YAML alias (CodeYAMLAlias).
func Alias(path, format string, args ...any) *FieldError {
	return newf(CodeYAMLAlias, path, fmt.Sprintf(format, args...))
}

// NotAMapping is a top level that is not a mapping (CodeNotAMapping).
func NotAMapping(path, format string, args ...any) *FieldError {
	return newf(CodeNotAMapping, path, fmt.Sprintf(format, args...))
}

// UnknownField is a key the type does not have (CodeUnknownField).
func UnknownField(path, format string, args ...any) *FieldError {
	return newf(CodeUnknownField, path, fmt.Sprintf(format, args...))
}

// DuplicateKey is a key given twice in one mapping (CodeDuplicateKey).
func DuplicateKey(path, format string, args ...any) *FieldError {
	return newf(CodeDuplicateKey, path, fmt.Sprintf(format, args...))
}

// WrongType is a node of the wrong kind (a list where a string belongs, …) (CodeWrongType).
func WrongType(path, format string, args ...any) *FieldError {
	return newf(CodeWrongType, path, fmt.Sprintf(format, args...))
}

// Required is a required field missing or empty (CodeRequired).
func Required(path, format string, args ...any) *FieldError {
	return newf(CodeRequired, path, fmt.Sprintf(format, args...))
}

// NotSupported is a value outside a fixed set (CodeUnsupported).
func NotSupported(path, format string, args ...any) *FieldError {
	return newf(CodeUnsupported, path, fmt.Sprintf(format, args...))
}

// InvalidValue is a value of the wrong form (Invalid, by contrast, marks any error as the input's) (CodeInvalid).
func InvalidValue(path, format string, args ...any) *FieldError {
	return newf(CodeInvalid, path, fmt.Sprintf(format, args...))
}

// InvalidDuration is not a Flux duration, or out of range (CodeDuration).
func InvalidDuration(path, format string, args ...any) *FieldError {
	return newf(CodeDuration, path, fmt.Sprintf(format, args...))
}

// Duplicate is a name or ID given twice (CodeDuplicate).
func Duplicate(path, format string, args ...any) *FieldError {
	return newf(CodeDuplicate, path, fmt.Sprintf(format, args...))
}

// NotFound is a name that names nothing (CodeUnknownRef).
func NotFound(path, format string, args ...any) *FieldError {
	return newf(CodeUnknownRef, path, fmt.Sprintf(format, args...))
}

// Cycle is dependsOn that loops (CodeCycle).
func Cycle(path, format string, args ...any) *FieldError {
	return newf(CodeCycle, path, fmt.Sprintf(format, args...))
}

// NotApplicable is a field or form the context does not use (CodeNotApplicable).
func NotApplicable(path, format string, args ...any) *FieldError {
	return newf(CodeNotApplicable, path, fmt.Sprintf(format, args...))
}

// Unreadable is a {file: …} that cannot be read (CodeUnreadable).
func Unreadable(path, format string, args ...any) *FieldError {
	return newf(CodeUnreadable, path, fmt.Sprintf(format, args...))
}

// UnsetEnv is an {env: …} that is not set (CodeUnsetEnv).
func UnsetEnv(path, format string, args ...any) *FieldError {
	return newf(CodeUnsetEnv, path, fmt.Sprintf(format, args...))
}

// MissingLabel is a ${label} a selected cluster lacks (CodeMissingLabel).
func MissingLabel(path, format string, args ...any) *FieldError {
	return newf(CodeMissingLabel, path, fmt.Sprintf(format, args...))
}

// Other is a rule no other code names (CodeOther).
func Other(path, format string, args ...any) *FieldError {
	return newf(CodeOther, path, fmt.Sprintf(format, args...))
}

// EmptyGroup is the warning for a ClusterGroup that holds no Fleet cluster (CodeEmptyGroup).
func EmptyGroup(path, format string, args ...any) *FieldError {
	return newf(CodeEmptyGroup, path, fmt.Sprintf(format, args...))
}

// UnmatchedTarget is the warning for a delivery target that reaches no cluster (CodeUnmatchedTarget).
func UnmatchedTarget(path, format string, args ...any) *FieldError {
	return newf(CodeUnmatchedTarget, path, fmt.Sprintf(format, args...))
}

// EmptySelection is the warning for a manager (spec.argocd, spec.kubefleet, spec.sveltos, spec.ocm) or a layer selector that selects no cluster (CodeEmptySelection).
func EmptySelection(path, format string, args ...any) *FieldError {
	return newf(CodeEmptySelection, path, fmt.Sprintf(format, args...))
}

// EmptyShard is the warning for a declared shard that receives nothing (CodeEmptyShard).
func EmptyShard(path, format string, args ...any) *FieldError {
	return newf(CodeEmptyShard, path, fmt.Sprintf(format, args...))
}

// ShardLoad is the warning for a shard that carries more than 1.5 times the mean (CodeShardLoad).
func ShardLoad(path, format string, args ...any) *FieldError {
	return newf(CodeShardLoad, path, fmt.Sprintf(format, args...))
}

// StatusSize is the warning for a delivery whose GitRepo status would near etcd's request limit (CodeStatusSize).
func StatusSize(path, format string, args ...any) *FieldError {
	return newf(CodeStatusSize, path, fmt.Sprintf(format, args...))
}

// Unanchored is the warning for a keyless identity pattern without both
// anchors, which cosign matches anywhere in the subject (CodeUnanchored).
func Unanchored(path, format string, args ...any) *FieldError {
	return newf(CodeUnanchored, path, fmt.Sprintf(format, args...))
}

// NotEvaluated is the warning for an ApplicationSet generator or template the preview does not evaluate (CodeNotEvaluated).
func NotEvaluated(path, format string, args ...any) *FieldError {
	return newf(CodeNotEvaluated, path, fmt.Sprintf(format, args...))
}

// ApplicationSetRefused is the warning for an ApplicationSet Argo CD's controller would refuse (CodeApplicationSet).
func ApplicationSetRefused(path, format string, args ...any) *FieldError {
	return newf(CodeApplicationSet, path, fmt.Sprintf(format, args...))
}

// NotFollowed is the warning for what a cluster receives that the model
// cannot follow, and so the guard cannot check: a Kustomization of another
// source, variables from outside Git, a chart or bundle it does not render
// (CodeNotFollowed).
func NotFollowed(path, format string, args ...any) *FieldError {
	return newf(CodeNotFollowed, path, fmt.Sprintf(format, args...))
}

// UnpinnedBundleImage is the warning for an image of a bundle of a delivery
// from the fleet's own repository that is not written as the mirror
// reference by digest: Fleet has no image rewrite fleetgen could set, so the
// cluster pulls it as written (CodeUnpinnedBundle).
func UnpinnedBundleImage(path, format string, args ...any) *FieldError {
	return newf(CodeUnpinnedBundle, path, fmt.Sprintf(format, args...))
}

func newf(code, path, msg string) *FieldError {
	return &FieldError{Path: path, Msg: strings.NewReplacer("\r", " ", "\n", " ").Replace(msg), code: code}
}
