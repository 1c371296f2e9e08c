package appset

import (
	"errors"
	"fmt"
	"sort"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// selector is a metav1.LabelSelector: matchLabels and matchExpressions,
// every one of which must hold.
type selector struct {
	matchLabels map[string]string
	exprs       []expression
}

type expression struct {
	key, operator string
	values        []string
}

// parseSelector reads a generator's selector; a shape the API server
// would refuse (a value that is not a string) is an error.
func parseSelector(v any) (selector, error) {
	var s selector
	if v == nil {
		return s, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return s, errors.New("selector is not a mapping")
	}
	if ml, ok := m["matchLabels"]; ok && ml != nil {
		mm, ok := ml.(map[string]any)
		if !ok {
			return s, errors.New("selector.matchLabels is not a mapping")
		}
		s.matchLabels = map[string]string{}
		for k, x := range mm {
			str, ok := x.(string)
			if !ok {
				return s, fmt.Errorf("selector.matchLabels[%s] is not a string", k)
			}
			s.matchLabels[k] = str
		}
	}
	for i, e := range list(m["matchExpressions"]) {
		em, ok := e.(map[string]any)
		if !ok {
			return s, fmt.Errorf("selector.matchExpressions[%d] is not a mapping", i)
		}
		var x expression
		x.key, _ = em["key"].(string)
		x.operator, _ = em["operator"].(string)
		for _, val := range list(em["values"]) {
			str, ok := val.(string)
			if !ok {
				return s, fmt.Errorf("selector.matchExpressions[%d].values holds a value that is not a string", i)
			}
			x.values = append(x.values, str)
		}
		s.exprs = append(s.exprs, x)
	}
	return s, nil
}

// empty reports whether s has neither matchLabels nor matchExpressions:
// the cluster generator then adds the in-cluster cluster.
func (s selector) empty() bool { return len(s.matchLabels) == 0 && len(s.exprs) == 0 }

// with returns s with matchLabels[key] = value (metav1.AddLabelToSelector).
func (s selector) with(key, value string) selector {
	out := selector{matchLabels: map[string]string{key: value}, exprs: s.exprs}
	for k, v := range s.matchLabels {
		if k != key {
			out.matchLabels[k] = v
		}
	}
	return out
}

// validate is what metav1.LabelSelectorAsSelector refuses: a key that is not
// a label key, a value that is not a label value, an unknown operator, In
// or NotIn without values, Exists or DoesNotExist with some.
func (s selector) validate() error {
	keys := make([]string, 0, len(s.matchLabels))
	for k := range s.matchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := requirement(k, "=", []string{s.matchLabels[k]}); err != nil {
			return err
		}
	}
	for _, e := range s.exprs {
		op := ""
		switch e.operator {
		case "In":
			op = "in"
		case "NotIn":
			op = "notin"
		case "Exists":
			op = "exists"
		case "DoesNotExist":
			op = "!"
		default:
			return fmt.Errorf("%q is not a valid label selector operator", e.operator)
		}
		if err := requirement(e.key, op, e.values); err != nil {
			return err
		}
	}
	return nil
}

// requirement is labels.NewRequirement's validation.
func requirement(key, op string, values []string) error {
	if why := schema.LabelKeyProblem(key); why != "" {
		return fmt.Errorf("key: Invalid value: %q: %s", key, why)
	}
	switch op {
	case "in", "notin":
		if len(values) == 0 {
			return errors.New("values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty")
		}
	case "=":
		if len(values) != 1 {
			return errors.New("values: Invalid value: exact-match compatibility requires one single value")
		}
	case "exists", "!":
		if len(values) != 0 {
			return errors.New("values: Invalid value: values set must be empty for exists and does not exist")
		}
	}
	for _, v := range values {
		if !schema.ValidLabelValue(v) {
			return fmt.Errorf("values[0][%s]: Invalid value: %q: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", key, v)
		}
	}
	return nil
}

// matches reports whether labels satisfy s (a validated selector).
func (s selector) matches(labels map[string]string) bool {
	for k, v := range s.matchLabels {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	for _, e := range s.exprs {
		lv, ok := labels[e.key]
		in := false
		for _, v := range e.values {
			in = in || (ok && lv == v)
		}
		switch e.operator {
		case "In":
			if !in {
				return false
			}
		case "NotIn":
			if in {
				return false
			}
		case "Exists":
			if !ok {
				return false
			}
		case "DoesNotExist":
			if ok {
				return false
			}
		}
	}
	return true
}
