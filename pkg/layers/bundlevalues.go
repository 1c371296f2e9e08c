package layers

import (
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	texttemplate "text/template"

	"github.com/Masterminds/sprig/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/internal/sprigbound"
)

// A bundle's Helm values as fleet-controller makes them for one cluster
// before the agent installs the chart: the cluster-label values, then the
// `${ }` templates (internal/cmd/controller/target).

// clusterLabelPrefix marks a value fleet-controller replaces with one of
// the cluster's labels (internal/cmd/controller/target).
const clusterLabelPrefix = "global.fleet.clusterLabels."

// cleanLabels are the labels fleet-controller's pre-processing reads
// (wrangler's CleanAnnotationsForExport, then the fleet.cattle.io/ and
// management.cattle.io/ ones back): with none, it changes nothing.
func cleanLabels(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if strings.HasPrefix(k, "kubectl.kubernetes.io/") {
			continue
		}
		if strings.Contains(k, "cattle.io/") && !strings.HasPrefix(k, "fleet.cattle.io/") && !strings.HasPrefix(k, "management.cattle.io/") {
			continue
		}
		out[k] = v
	}
	return out
}

// preprocessValues is fleet-controller's processLabelValues: each string
// value "global.fleet.clusterLabels.<label>" (in maps, and in maps in
// lists) becomes the cluster's label, "" when it has none. values is not
// changed.
func preprocessValues(values map[string]any, labels map[string]string) map[string]any {
	labels = cleanLabels(labels)
	if len(values) == 0 || len(labels) == 0 {
		return values
	}
	var walk func(m map[string]any) map[string]any
	walk = func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			switch x := v.(type) {
			case string:
				if l, ok := strings.CutPrefix(x, clusterLabelPrefix); ok {
					v = labels[l]
				}
			case map[string]any:
				v = walk(x)
			case []any:
				items := make([]any, len(x))
				for i, it := range x {
					if im, ok := it.(map[string]any); ok {
						items[i] = walk(im)
					} else {
						items[i] = it
					}
				}
				v = items
			}
			out[k] = v
		}
		return out
	}
	return walk(values)
}

// preprocess returns h's values for cluster c as fleet-controller makes them
// (internal/cmd/controller/target preprocessHelmValues): the cluster-label
// values, then, unless helm.disablePreProcess, the values and
// helm.templateValues as Go templates with `${ }` delimiters, missing keys
// an error, over the Cluster's name, namespace (its workspace), labels,
// annotations and template values. fleet-controller skips all of it for a
// Cluster without labels; fleetgen's Clusters always have some (Flux's own
// labels, once Flux applies them), so it always runs here. The labels are
// the live Cluster's (c.Live: fleet.yaml's, its shard's, Flux's); its
// annotations and template values are empty, as fleetgen renders none.
func preprocess(h *helmOptions, c FleetCluster) (map[string]any, error) {
	if len(h.TemplateValues) == 0 && len(h.Values) == 0 {
		return h.Values, nil
	}
	labels := cleanLabels(c.live())
	values := preprocessValues(h.Values, labels)
	if h.DisablePreProcess {
		return values, nil
	}
	tctx := map[string]any{
		"ClusterNamespace":   c.Namespace,
		"ClusterName":        c.Name,
		"ClusterLabels":      toDict(labels),
		"ClusterAnnotations": map[string]any{},
		"ClusterValues":      map[string]any{},
	}
	if values == nil {
		values = map[string]any{}
	}
	text, err := sigsyaml.Marshal(values)
	if err != nil {
		return nil, err
	}
	out, err := templateValue(string(text), tctx)
	if err != nil {
		return nil, err
	}
	var rendered map[string]any
	if err := sigsyaml.Unmarshal([]byte(out), &rendered); err != nil {
		return nil, fmt.Errorf("the templated values are not YAML of values")
	}
	if rendered == nil {
		rendered = map[string]any{}
	}
	keys := make([]string, 0, len(h.TemplateValues))
	for k := range h.TemplateValues {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out, err := templateValue(h.TemplateValues[k], tctx)
		if err != nil {
			return nil, fmt.Errorf("helm.templateValues %s: %w", inert.Quote(k), err)
		}
		var v any
		if err := sigsyaml.Unmarshal([]byte(out), &v); err != nil {
			return nil, fmt.Errorf("helm.templateValues %s: the templated value is not YAML", inert.Quote(k))
		}
		rendered[k] = v
	}
	return rendered, nil
}

func toDict(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// maxTemplated bounds what one values template makes, and what a function
// of it (repeat, until) may ask for: the values are as large as fleet.yaml
// may be.
const maxTemplated = 1 << 20

// templateValue runs text as fleet-controller's values templates run:
// text/template with `${ }` delimiters, missing keys an error, and Sprig's
// text functions but env, expandenv, include and tpl (tplFuncMap). Those
// whose result fleetgen cannot know (randomness, the clock, key and
// certificate generation, DNS) make a *NotModelledError; those whose size a
// template chooses are bounded (sprigbound), and so is the output.
func templateValue(text string, data map[string]any) (string, error) {
	funcs := sprig.TxtFuncMap()
	for _, fn := range []string{"env", "expandenv", "include", "tpl"} {
		delete(funcs, fn)
	}
	for _, fn := range []string{"now", "ago", "randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt", "uuidv4", "shuffle",
		"bcrypt", "htpasswd", "encryptAES", "decryptAES", "genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey", "buildCustomCert", "getHostByName"} {
		if _, ok := funcs[fn]; ok {
			name := fn
			funcs[fn] = func(...any) (any, error) {
				return nil, &NotModelledError{Why: "has Helm values whose `${ }` templates call " + name + ", whose result fleetgen cannot know"}
			}
		}
	}
	maps.Copy(funcs, sprigbound.Funcs(maxTemplated, maxTemplated))
	t, err := texttemplate.New("values").Funcs(funcs).Option("missingkey=error").Delims("${", "}").Parse(text)
	if err != nil {
		return "", fmt.Errorf("the values template does not parse: %s", inert.Prose(err.Error()))
	}
	var b strings.Builder
	err = t.Execute(&limitedWriter{w: &b, left: maxTemplated}, data)
	var nm *NotModelledError
	if errors.As(err, &nm) {
		return "", nm
	}
	if err != nil {
		return "", fmt.Errorf("the values template fails: %s", inert.Prose(err.Error()))
	}
	return b.String(), nil
}

// limitedWriter fails a write past left bytes.
type limitedWriter struct {
	w    *strings.Builder
	left int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if len(p) > l.left {
		return 0, fmt.Errorf("the templated values are larger than %d bytes", maxTemplated)
	}
	l.left -= len(p)
	return l.w.Write(p)
}
