package charts

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"fleetgen.dev/fleetgen/internal/inert"
)

// errOutside is what the schema loader answers for a schema outside the
// chart.
var errOutside = errors.New("outside the chart")

// refuse is a jsonschema loader that loads nothing: Helm's loads file:// and
// http(s):// references, which would read this machine's files or the
// network for an untrusted chart. It notes that it refused.
type refuse struct{ refused *bool }

func (r refuse) Load(string) (any, error) {
	*r.refused = true
	return nil, errOutside
}

// permissive is Helm's answer for an urn: reference it cannot resolve: a
// schema that admits everything.
type permissive struct{}

func (permissive) Load(string) (any, error) { return true, nil }

// validateSchema checks vals against the values.schema.json of ch and of each
// subchart that has values, as Helm's ValidateAgainstSchema does (same
// library, same compiler setup), except that a schema referring to a file or
// URL is not fetched: that chart's values are left unvalidated, and the
// returned notes say which. A violation is an error listing them, as Helm's.
func validateSchema(ch *chart.Chart, vals map[string]any) ([]string, error) {
	var sb strings.Builder
	var notes []string
	var walk func(c *chart.Chart, vals map[string]any)
	walk = func(c *chart.Chart, vals map[string]any) {
		if c.Schema != nil {
			if err := validateOne(vals, c.Schema); errors.Is(err, errOutside) {
				notes = append(notes, c.Name())
			} else if err != nil {
				fmt.Fprintf(&sb, "%s:\n%s\n", c.Name(), err.Error())
			}
		}
		for _, sub := range c.Dependencies() {
			raw, ok := vals[sub.Name()]
			if !ok || raw == nil {
				continue
			}
			subVals, ok := asMap(raw)
			if !ok {
				fmt.Fprintf(&sb, "%s:\ninvalid type for values: expected object (map), got %T\n", sub.Name(), raw)
				continue
			}
			walk(sub, subVals)
		}
	}
	walk(ch, vals)
	if sb.Len() > 0 {
		return nil, fmt.Errorf("values do not meet the schema of the chart:\n%s", inert.ProseLines(strings.TrimSuffix(sb.String(), "\n")))
	}
	return notes, nil
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case common.Values:
		return m, true
	}
	return nil, false
}

func validateOne(vals map[string]any, schemaJSON []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unable to validate schema: %v", r)
		}
	}()
	schema, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return err
	}
	c := jsonschema.NewCompiler()
	refused := false
	no := refuse{&refused}
	c.UseLoader(jsonschema.SchemeURLLoader{"file": no, "http": no, "https": no, "urn": permissive{}})
	if err := c.AddResource("file:///values.schema.json", schema); err != nil {
		return err
	}
	v, err := c.Compile("file:///values.schema.json")
	if err != nil {
		if refused {
			return errOutside
		}
		return err
	}
	if err := v.Validate(common.Values(vals).AsMap()); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errors.New(strings.Join(violations(ve, nil), "\n"))
		}
		return err
	}
	return nil
}

// violations lists where the values break the schema and which keyword
// they break ("- at /image/tag: type"), never the value: a pattern's or an
// enum's message would quote it.
func violations(ve *jsonschema.ValidationError, out []string) []string {
	if len(ve.Causes) == 0 {
		kw := "schema"
		if ve.ErrorKind != nil {
			if p := ve.ErrorKind.KeywordPath(); len(p) > 0 {
				kw = strings.Join(p, "/")
			}
		}
		return append(out, "- at /"+strings.Join(ve.InstanceLocation, "/")+": "+kw)
	}
	for _, c := range ve.Causes {
		out = violations(c, out)
	}
	return out
}

func schemaNotes(r *recorder) []Note {
	charts := slices.Sorted(maps.Keys(r.calls[NoteSchema]))
	if len(charts) == 0 {
		return nil
	}
	q := make([]string, len(charts))
	for i, c := range charts {
		q[i] = inert.Quote(c)
	}
	return []Note{{NoteSchema, "the values schema of " + strings.Join(q, ", ") + " refers to a schema outside the chart, which is not fetched: those values were not validated"}}
}
