package appset

import (
	"encoding/json"
	"errors"
	"fmt"
)

// clusterParams is Argo CD's ClusterGenerator.GenerateParams: one parameter
// set per cluster Secret that the selector (plus the secret-type label)
// selects, with its values rendered; then, when the selector is empty and
// no Secret is the in-cluster one, the cluster Argo CD runs on. flatList
// makes one set holding them all.
func (r *renderer) clusterParams(gen map[string]any, clusters []Cluster) ([]map[string]any, error) {
	sel, err := parseSelector(gen["selector"])
	if err != nil {
		return nil, err
	}
	withType := sel.with(SecretTypeLabel, "cluster") // metav1.AddLabelToSelector
	if err := withType.validate(); err != nil {
		return nil, fmt.Errorf("error getting cluster secrets: error converting label selector: %w", err)
	}
	values := stringMap(gen["values"])
	byName := map[string]Cluster{} // Argo CD keys the Secrets by data.name: the last one wins
	var names []string
	for _, c := range clusters {
		if !withType.matches(c.Labels) {
			continue
		}
		if _, ok := byName[c.Name]; !ok {
			names = append(names, c.Name)
		}
		byName[c.Name] = c
	}
	var out []map[string]any
	inCluster := false
	for _, n := range names {
		c := byName[n]
		inCluster = inCluster || c.Server == InClusterServer
		params := map[string]any{"name": c.Name, "nameNormalized": sanitizeName(c.Name), "server": c.Server, "project": c.Project}
		if r.goTemplate {
			meta := map[string]any{}
			if len(c.Annotations) > 0 {
				meta["annotations"] = c.Annotations
			}
			if len(c.Labels) > 0 {
				meta["labels"] = c.Labels
			}
			params["metadata"] = meta
		} else {
			for k, v := range c.Annotations {
				params["metadata.annotations."+k] = v
			}
			for k, v := range c.Labels {
				params["metadata.labels."+k] = v
			}
		}
		if err := r.appendValues(values, params); err != nil {
			return nil, fmt.Errorf("error appending templated values for cluster: %w", err)
		}
		out = append(out, params)
	}
	if sel.empty() && !inCluster {
		params := map[string]any{"name": InClusterName, "nameNormalized": InClusterName, "server": InClusterServer, "project": ""}
		if err := r.appendValues(values, params); err != nil {
			return nil, fmt.Errorf("error appending templated values for local cluster: %w", err)
		}
		out = append(out, params)
	}
	if flat, _ := gen["flatList"].(bool); flat {
		all := make([]any, len(out))
		for i, p := range out {
			all[i] = p
		}
		out = []map[string]any{{"clusters": all}}
	}
	return out, nil
}

// appendValues is Argo CD's appendTemplatedValues: each value rendered with
// params as they are (values cannot refer to each other), then added as
// values.<key> (fasttemplate) or under values (Go templates).
func (r *renderer) appendValues(values map[string]string, params map[string]any) error {
	if len(values) == 0 {
		return nil
	}
	rendered := map[string]string{}
	for k, v := range values {
		s, err := r.replace(v, params)
		if err != nil {
			return fmt.Errorf("failed to replace templated string: %w", err)
		}
		rendered[k] = s
	}
	if r.goTemplate {
		params["values"] = rendered
		return nil
	}
	for k, v := range rendered {
		params["values."+k] = v
	}
	return nil
}

// listParams is Argo CD's ListGenerator.GenerateParams: each element as
// it is (Go templates), or its string values and values.<key> entries
// (fasttemplate), which must all be strings. elementsYaml is not
// evaluated.
func (r *renderer) listParams(gen map[string]any) ([]map[string]any, error) {
	if y, ok := gen["elementsYaml"]; ok && y != nil && y != "" {
		return nil, notEvaluated{"a list generator with elementsYaml, which fleetgen does not evaluate: its Applications are not shown"}
	}
	elements := list(gen["elements"])
	out := make([]map[string]any, len(elements))
	for i, e := range elements {
		// Argo CD decodes each element from its JSON: a copy, so that
		// rendering never shares values with the ApplicationSet.
		raw, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("error unmarshling list element %w", err)
		}
		var element map[string]any
		if err := json.Unmarshal(raw, &element); err != nil {
			return nil, fmt.Errorf("error unmarshling list element %w", err)
		}
		if r.goTemplate {
			out[i] = element
			continue
		}
		var params map[string]any // stays nil for an empty element, as Argo CD's does
		for key, value := range element {
			if params == nil {
				params = map[string]any{}
			}
			if key == "values" {
				values, ok := value.(map[string]any)
				if !ok {
					return nil, errors.New("error parsing values map")
				}
				for k, v := range values {
					s, ok := v.(string)
					if !ok {
						return nil, errors.New("error parsing value as string")
					}
					params["values."+k] = s
				}
				continue
			}
			s, ok := value.(string)
			if !ok {
				return nil, errors.New("error parsing value as string")
			}
			params[key] = s
		}
		out[i] = params
	}
	return out, nil
}

// mergeTemplate is generator_spec_processor's mergeGeneratorTemplate on
// plain values: the generator's own template (dest) with every field it
// leaves empty taken from the ApplicationSet's (mergo.Merge without
// override: non-empty values and map keys of dest win, structs and maps
// merge field by field).
func mergeTemplate(dest any, src map[string]any) map[string]any {
	d, _ := deepCopy(dest).(map[string]any)
	if d == nil {
		d = map[string]any{}
	}
	merge(d, src)
	return d
}

func merge(dest, src map[string]any) {
	for k, sv := range src {
		dv, ok := dest[k]
		if dm, isMap := dv.(map[string]any); isMap {
			if sm, ok := sv.(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		if !ok || zero(dv) {
			dest[k] = deepCopy(sv)
		}
	}
}

func zero(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case bool:
		return !t
	case float64:
		return t == 0
	case int64:
		return t == 0
	case int:
		return t == 0
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = deepCopy(x)
		}
		return out
	}
	return v
}
