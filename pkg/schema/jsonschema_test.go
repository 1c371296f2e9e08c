package schema

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// committedSchema is the schema in the repository, for editors to point at.
var committedSchema = filepath.Join("..", "..", "schema", "fleet.schema.json")

// TestJSONSchemaCommitted keeps schema/fleet.schema.json what JSONSchema
// generates; -update rewrites it.
func TestJSONSchemaCommitted(t *testing.T) {
	t.Parallel()
	got, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(committedSchema, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(committedSchema)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("schema/fleet.schema.json is stale (go test ./pkg/schema -run TestJSONSchemaCommitted -update) (-committed +generated):\n%s", d)
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(JSONSchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(JSONSchemaID)
	if err != nil {
		t.Fatalf("compile the generated schema: %v", err)
	}
	return s
}

func validateYAML(s *jsonschema.Schema, data []byte) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// TestJSONSchemaAcceptsValidFleets: every fleet.yaml that Load accepts in the
// examples and golden cases is valid against the schema.
func TestJSONSchemaAcceptsValidFleets(t *testing.T) {
	t.Parallel()
	s := compileSchema(t)
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*", "fleet.yaml"))
	if len(files) < 5 {
		t.Fatalf("found %d examples", len(files))
	}
	for _, dir := range goldenCases(t) {
		if _, err := os.Stat(filepath.Join(dir, "want", "fleet.json")); err == nil {
			files = append(files, filepath.Join(dir, "fleet.yaml"))
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := validateYAML(s, b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestJSONSchemaRejects: unknown fields, values outside an enum or pattern,
// missing required fields and wrong reference forms are invalid.
func TestJSONSchemaRejects(t *testing.T) {
	t.Parallel()
	s := compileSchema(t)
	const base = `apiVersion: fleetgen.dev/v1alpha1
kind: Fleet
metadata: {name: demo}
spec:
  registry: {host: registry.example}
  source: {kind: git, url: https://git.example/fleet.git}
  clusters:
    - name: c1
      registration: {mode: capi}
`
	if err := validateYAML(s, []byte(base)); err != nil {
		t.Fatalf("base fleet: %v", err)
	}
	for name, tc := range map[string]struct{ old, new, want string }{
		"unknown field":       {"registry: {host:", "registry: {hots: x, host:", "hots"},
		"unknown top field":   {"kind: Fleet\n", "kind: Fleet\nextra: 1\n", "extra"},
		"mode":                {"mode: capi", "mode: pull", "/spec/clusters/0/registration/mode"},
		"name":                {"name: c1", "name: C_1", "/spec/clusters/0/name"},
		"kind":                {"kind: Fleet", "kind: Flet", "/kind"},
		"scp url":             {"url: https://git.example/fleet.git", "url: git@git.example:fleet.git", "/spec/source/url"},
		"oci url for git":     {"kind: git", "kind: oci", "/spec/source/url"},
		"missing clusters":    {"  clusters:\n    - name: c1\n      registration: {mode: capi}\n", "", "clusters"},
		"duration":            {"registration: {mode: capi}", "registration: {mode: agent, tokenTTL: 1d}", "tokenTTL"},
		"kubeconfig by value": {"registration: {mode: capi}", "registration: {mode: manager, kubeconfig: {value: x}}", "kubeconfig"},
		"two forms":           {"registration: {mode: capi}", "registration: {mode: manager, kubeconfig: {file: a, env: B}}", "kubeconfig"},
		"string for bool":     {"host: registry.example}", "host: registry.example, insecure: \"yes\"}", "insecure"},
	} {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(base, tc.old) {
				t.Fatalf("base lacks %q", tc.old)
			}
			err := validateYAML(s, []byte(strings.Replace(base, tc.old, tc.new, 1)))
			if err == nil {
				t.Fatal("valid against the schema; want invalid")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not mention %q:\n%v", tc.want, err)
			}
		})
	}
}
