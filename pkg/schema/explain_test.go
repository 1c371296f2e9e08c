package schema

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"fleetgen.dev/fleetgen/pkg/problem"
)

// whereDocs says where a field's description and example are written, for
// the failure messages of the tests below (and so for whoever adds a field).
const whereDocs = "add desc: and example: to the field's fieldDoc in pkg/schema: fieldDocs (jsonschema.go), managerDocs (jsonschema_managers.go) or the init() beside the field's type (sourcemirrors.go, validate_verify.go, …); fields of the Kubernetes types under agent are described by name in kubeDocs and kubeExamples"

// TestExplainEveryField walks every field of the schema and explains it:
// each has a description, a type and an example, and every example the
// schema states is valid against that field's own schema.
func TestExplainEveryField(t *testing.T) {
	t.Parallel()
	c := jsonschema.NewCompiler()
	doc, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := jsonschema.UnmarshalJSON(strings.NewReader(string(doc)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource(JSONSchemaID, parsed); err != nil {
		t.Fatal(err)
	}
	root := schemaFor("", reflect.TypeOf(Fleet{}))
	n := 0
	walkNodes(root, func(nd *node) {
		n++
		f, err := Explain(nd.path)
		if err != nil {
			t.Errorf("explain %s: %v", nd.path, err)
			return
		}
		if f.Path != nd.path {
			t.Errorf("explain %s: path %q", nd.path, f.Path)
		}
		for what, v := range map[string]string{"description": f.Description, "type": f.Type, "example": f.Example} {
			if v == "" {
				t.Errorf("%s has no %s: %s", nd.path, what, whereDocs)
			}
		}
		ex, ok := nd.schema["examples"].([]any)
		if !ok {
			return
		}
		s, err := c.Compile(JSONSchemaID + "#" + pointer(root, nd.path))
		if err != nil {
			t.Errorf("%s: compile its schema: %v", nd.path, err)
			return
		}
		for _, e := range ex {
			if err := s.Validate(jsonValue(e)); err != nil {
				t.Errorf("%s: example %#v is not valid: %v (%s)", nd.path, e, err, whereDocs)
			}
		}
	})
	t.Logf("%d fields explained", n)
	if n < 200 {
		t.Errorf("walked %d fields: the walk misses most of the schema", n)
	}
}

// pointer is the JSON pointer of the field at path in the schema.
func pointer(root *node, path string) string {
	var b strings.Builder
	n := root
	for _, seg := range strings.Split(path, ".") {
		for n.items != nil {
			n = n.items
			b.WriteString("/items")
		}
		name := strings.ReplaceAll(seg, "[]", "")
		b.WriteString("/properties/" + name)
		n = n.props[name]
	}
	return b.String()
}

// jsonValue turns a Go example into what the validator takes (JSON's
// types: float64 numbers, []any, map[string]any).
func jsonValue(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	case map[string]string:
		out := map[string]any{}
		for k, e := range x {
			out[k] = e
		}
		return out
	}
	return v
}

func TestExplain(t *testing.T) {
	t.Parallel()
	f, err := Explain("spec.clusters[3].registration.mode")
	if err != nil {
		t.Fatal(err)
	}
	want := &Field{
		Path:        "spec.clusters[].registration.mode",
		Type:        "string",
		Description: fieldDocs["spec.clusters[].registration.mode"].desc,
		Enum:        []string{"agent", "manager", "capi", "verrazzano"},
		Example:     "spec:\n  clusters:\n    - registration:\n        mode: manager\n",
	}
	if d := cmp.Diff(want, f); d != "" {
		t.Errorf("explain spec.clusters[3].registration.mode (-want +got):\n%s", d)
	}
	// The same field without indexes, and with [].
	for _, p := range []string{"spec.clusters.registration.mode", "spec.clusters[].registration.mode", "spec.clusters[*].registration.mode"} {
		g, err := Explain(p)
		if err != nil || g.Path != want.Path {
			t.Errorf("explain %s: %v, %v", p, g, err)
		}
	}
	spec, err := Explain("spec")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range spec.Fields {
		names = append(names, c.Name)
	}
	if !strings.HasPrefix(strings.Join(names, " "), "manager registry source") || !spec.Required || spec.Type != "Object" {
		t.Errorf("explain spec: %+v", spec)
	}
}

func TestExplainUnknown(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"spec.clusters.registraton.mode": `explain "spec.clusters.registraton.mode": spec.clusters[] has no field "registraton" (did you mean "registration"?); its fields: name, labels, registration,`,
		"mode":                           `explain "mode": fleet.yaml has no field "mode" (a field of that name: spec.clusters[].registration.mode); its fields: apiVersion, kind, metadata, spec`,
		"spec.registry.host.name":        `explain "spec.registry.host.name": spec.registry.host is a string, not an object: it has no field "name"`,
		"spec..registry":                 `explain "spec..registry": want a field path`,
	} {
		_, err := Explain(path)
		var ie *problem.InvalidError
		if err == nil || !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("explain %s: %v\nwant an input error starting %s", path, err, want)
		}
	}
}
