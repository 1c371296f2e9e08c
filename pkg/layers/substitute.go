package layers

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"

	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/envsubst/parse"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// Flux's post-build substitution, as kustomize-controller v1.9 (Flux 2.9)
// runs it on every object of a build when the Kustomization has
// spec.postBuild (fleetgen's always have: cluster and the labels), with the
// feature gate StrictPostBuildSubstitutions on, its default since Flux 2.9
// (fluxcd/pkg/kustomize SubstituteVariables and varSubstitution):
//
//   - an object labelled or annotated kustomize.toolkit.fluxcd.io/substitute:
//     disabled is left as it is;
//   - every variable name must match ^[_[:alpha:]][_[:alpha:][:digit:]]*$;
//     newlines are removed from every value;
//   - the object's YAML (resource.AsYAML) goes through envsubst (the same
//     engine, github.com/fluxcd/pkg/envsubst) with a strict mapping: a
//     variable that is not defined fails, unless an operator that supplies
//     its own value holds it (${var:=default}, ${var:-default}, …); $${var}
//     is an escape for ${var};
//   - the result is decoded again (sigs.k8s.io/yaml YAMLToJSON, then
//     resource.UnmarshalJSON), which is where a substituted "kind: Secret"
//     becomes a Secret.
const (
	substituteKey = "kustomize.toolkit.fluxcd.io/substitute"
	disabledValue = "disabled"
)

// varNameRE is Flux's varsubRegex.
var varNameRE = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// template is an object's YAML parsed for substitution once per build; each
// cluster is then an Execute with its variables.
type template struct {
	// text is the YAML, kept only when it holds a '$' (substitution reads
	// it); n is its length.
	text string
	n    int
	// t is nil when the text holds no '$' (envsubst leaves it as it is and
	// Flux decodes it unchanged) or does not parse (err).
	t   *envsubst.Template
	err error
	// refs are the variables the text refers to, sorted; required those
	// among them without an operator that supplies a value for an unset
	// variable: a strict substitution fails without them.
	refs, required []string
	// uses counts the references to each variable.
	uses map[string]int
	// plain is true when every reference is a plain ${var}, without an
	// operator: the fast way (slots) may take it.
	plain bool
	fast  slotState
}

// newTemplate parses an object's YAML text for substitution.
func newTemplate(text string) *template {
	tp := &template{n: len(text)}
	if !strings.Contains(text, "$") {
		return tp
	}
	tp.text = text
	t, err := envsubst.Parse(text)
	if err != nil {
		tp.err = fmt.Errorf("variable substitution failed: %w", err)
		return tp
	}
	tree, err := parse.Parse(text)
	if err != nil { // not reached: envsubst.Parse is parse.Parse
		tp.err = err
		return tp
	}
	tp.t = t
	tp.uses = map[string]int{}
	required := map[string]bool{}
	tp.plain = walkVars(tree.Root, tp.uses, required)
	for v := range tp.uses {
		tp.refs = append(tp.refs, v)
	}
	sort.Strings(tp.refs)
	tp.required = keys(required)
	return tp
}

// walkVars records every variable a parse tree refers to, and those a strict
// substitution requires: every reference whose operator reads the value
// (${var}, ${#var}, ${var^^}, …), not those that supply a value for an unset
// variable (-, :-, =, :=, +, :+, ?, :?). A function's arguments are evaluated
// before the variable is looked up, so their references count whatever the
// operator. It reports whether every reference is a plain ${var}.
func walkVars(n parse.Node, uses map[string]int, required map[string]bool) bool {
	plain := true
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			plain = walkVars(c, uses, required) && plain
		}
	case *parse.FuncNode:
		uses[n.Param]++
		if !defaultOp(n.Name) {
			required[n.Param] = true
		}
		plain = n.Name == "" && len(n.Args) == 0
		for _, a := range n.Args {
			walkVars(a, uses, required)
		}
	}
	return plain
}

// defaultOp is envsubst's isDefaultOp.
func defaultOp(name string) bool {
	switch name {
	case "-", "+", "=", "?", ":-", ":+", ":=", ":?":
		return true
	}
	return false
}

// missing returns the required variables vars does not define, sorted.
func (tp *template) missing(vars map[string]string) []string {
	var out []string
	for _, v := range tp.required {
		if _, ok := vars[v]; !ok {
			out = append(out, v)
		}
	}
	return out
}

// size bounds what substituting vars into the text can give: the text, plus
// each variable's value once per reference (no operator makes a value
// longer, and a default is text of the template).
func (tp *template) size(vars map[string]string) int {
	n := tp.n
	for v, k := range tp.uses {
		n += len(vars[v]) * k
	}
	return n
}

// substitute returns what Flux makes of an object whose YAML is tp with
// vars, as plain values, or nil when it stays as it is: it opts out, holds no
// '$', or its substituted text is its own.
func substitute(tp *template, optOut bool, vars map[string]string) (map[string]any, error) {
	if optOut {
		return nil, nil
	}
	if err := checkVarNames(vars); err != nil {
		return nil, err // Flux's message says envsubst, too
	}
	return substituteChecked(tp, vars)
}

// substituteChecked is substitute for an object that does not opt out,
// with variable names checkVarNames accepted.
func substituteChecked(tp *template, vars map[string]string) (map[string]any, error) {
	if tp.err != nil {
		return nil, fmt.Errorf("envsubst error: %w", tp.err)
	}
	if tp.t == nil {
		return nil, nil
	}
	out, err := tp.t.Execute(func(s string) (string, bool) {
		v, ok := vars[s]
		return strings.ReplaceAll(v, "\n", ""), ok
	})
	if err != nil {
		return nil, fmt.Errorf("envsubst error: variable substitution failed: %w", err)
	}
	if out == tp.text {
		return nil, nil
	}
	if m, ok := fromYAML(out); ok {
		return m, nil
	}
	// The slow way, for its exact error: Flux's own (sigs.k8s.io/yaml).
	data, err := yaml.YAMLToJSON([]byte(out))
	if err != nil {
		return nil, fmt.Errorf("envsubst error: YAMLToJSON: %w", err)
	}
	m, err := decodeJSON(data)
	if err != nil {
		return nil, fmt.Errorf("UnmarshalJSON: %w", err)
	}
	return m, nil
}

// fromYAML is what sigs.k8s.io/yaml.YAMLToJSON and decodeJSON make of a
// substituted object's YAML, in one pass: yaml.v2 decodes it (as YAMLToJSON
// does), keys become strings as YAMLToJSON makes them, and every number is
// what its JSON encoding decodes to (an integral float64 prints without a
// fraction, and so becomes an int). ok is false for anything that is not
// plainly that (a YAML error, a key or value JSON cannot hold, a document
// that is not a mapping): the caller goes the slow way then, for Flux's
// exact error. TestFromYAML holds it to the slow way.
func fromYAML(text string) (map[string]any, bool) {
	var v any
	if err := yamlv2.Unmarshal([]byte(text), &v); err != nil {
		return nil, false
	}
	out, ok := jsonable(v)
	m, isMap := out.(map[string]any)
	return m, ok && isMap
}

func jsonable(v any) (any, bool) {
	switch v := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			var key string
			switch k := k.(type) {
			case string:
				key = k
			case int:
				key = strconv.Itoa(k)
			case int64:
				key = strconv.FormatInt(k, 10)
			case bool:
				key = strconv.FormatBool(k)
			default:
				return nil, false // float keys and the rest: the slow way
			}
			if _, dup := out[key]; dup {
				return nil, false // which one JSON keeps is the slow way's
			}
			ev, ok := jsonable(e)
			if !ok {
				return nil, false
			}
			out[key] = ev
		}
		return out, true
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			ev, ok := jsonable(e)
			if !ok {
				return nil, false
			}
			out[i] = ev
		}
		return out, true
	case string, bool, nil, int:
		return v, true
	case int64:
		return int(v), true
	case uint64:
		if v <= math.MaxInt64 {
			return int(v), true
		}
		return v, true
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
		if v == math.Trunc(v) && math.Abs(v) < 1e21 {
			// encoding/json prints it without a fraction.
			return numbers(json.Number(strconv.FormatFloat(v, 'f', -1, 64))), true
		}
		return v, true
	}
	return nil, false
}

// checkVarNames is Flux's check of the variable names, before any
// substitution.
func checkVarNames(vars map[string]string) error {
	var bad []string
	for k := range vars {
		if !schema.IsVarName(k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("envsubst error: '%s' var name is invalid, must match '%s'", bad[0], varNameRE)
}

// optsOut reports whether res carries Flux's opt-out label or annotation.
func optsOut(res *resource.Resource) bool {
	return res.GetLabels()[substituteKey] == disabledValue || res.GetAnnotations()[substituteKey] == disabledValue
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
