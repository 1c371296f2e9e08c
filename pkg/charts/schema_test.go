package charts

import (
	"context"
	"strings"
	"testing"

	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
)

const schema = `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
 "properties": {"replicas": {"type": "integer"}, "mode": {"enum": ["a", "b"]}, "sub": {"type": "object"}},
 "required": ["replicas"]}`

// TestSchema checks values against the chart's values.schema.json as
// Helm's ValidateAgainstSchema does (the oracle), without quoting values,
// and leaves out, with a note and no request, a schema that refers outside
// the chart.
func TestSchema(t *testing.T) {
	t.Parallel()
	load := func(schema string) *Chart {
		c, err := Load("", pack(t, "s", map[string]string{
			"Chart.yaml":         "apiVersion: v2\nname: s\nversion: 0.1.0\n",
			"values.yaml":        "replicas: 1\n",
			"values.schema.json": schema,
			"templates/x.yaml":   "kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n",
		}), DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	rel := release(t, webRelease)
	for name, tc := range map[string]struct {
		values map[string]any
		ok     bool
	}{
		"valid":        {map[string]any{"replicas": 2, "mode": "a"}, true},
		"wrong type":   {map[string]any{"replicas": "s3cret-value"}, false},
		"not in enum":  {map[string]any{"mode": "s3cret-value"}, false},
		"null removes": {map[string]any{"replicas": nil}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := load(schema)
			_, err := Render(context.Background(), c, Input{Release: rel, Values: tc.values}, DefaultLimits())
			ch, _ := c.load()
			vals, _ := copyValues(tc.values)
			_, oracle := commonutil.ToRenderValuesWithSchemaValidation(ch, vals, commonRelease(), nil, false)
			if (err == nil) != tc.ok || (oracle == nil) != tc.ok {
				t.Fatalf("ours %v, Helm's %v: want ok %v from both", err, oracle, tc.ok)
			}
			if err != nil && (strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "values do not meet the schema")) {
				t.Errorf("err %q: want a schema error without the value", err)
			}
		})
	}
	remote := load(`{"$ref": "https://schemas.example.invalid/values.json"}`)
	res, err := Render(context.Background(), remote, Input{Release: rel}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notes) != 1 || res.Notes[0].Reason != NoteSchema {
		t.Errorf("notes %v: want the schema left out", res.Notes)
	}
	local := load(`{"$ref": "file:///etc/passwd"}`)
	if res, err := Render(context.Background(), local, Input{Release: rel}, DefaultLimits()); err != nil || len(res.Notes) != 1 {
		t.Errorf("a schema referring to a local file: %v, %v: want it left out", res, err)
	}
	off := release(t, webRelease)
	off.Spec.Install = &Install{DisableSchemaValidation: true}
	if _, err := Render(context.Background(), load(schema), Input{Release: off, Values: map[string]any{"replicas": "x"}}, DefaultLimits()); err != nil {
		t.Errorf("disableSchemaValidation: %v", err)
	}
}
