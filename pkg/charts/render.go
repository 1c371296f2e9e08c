package charts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/internal/inert"
)

// DefaultKubeVersion is the Kubernetes version a chart renders against
// (.Capabilities.KubeVersion) when the cluster names none: the version the
// Kubernetes libraries fleetgen and the pinned helm-controller link serve
// (k8s.io/client-go v0.36, so 1.36), which is also what `helm template`
// built with them assumes.
const DefaultKubeVersion = "v1.36.0"

// Input is what one render of a chart depends on, besides the chart.
type Input struct {
	// Release is the HelmRelease.
	Release *Release
	// Values are the values to install with (Release.Values).
	Values map[string]any
	// KubeVersion is the cluster's Kubernetes version; "" is
	// DefaultKubeVersion.
	KubeVersion string
	// APIVersions are API versions the cluster serves beyond the built-in
	// ones (.Capabilities.APIVersions): the CRDs it receives, as
	// "group/version" and "group/version/Kind".
	APIVersions []string
}

// Result is a rendered chart: what the cluster receives from a HelmRelease.
type Result struct {
	// Chart names the chart: its Label.
	Chart string
	// Objects are the rendered objects in Helm's install order: the chart's
	// CRDs, its manifests, then its hooks.
	Objects []*Object
	// Notes say what the render left out or stood in for, sorted.
	Notes []Note
}

// Object is one rendered object.
type Object struct {
	// Template is the file it came from, as Helm names it
	// (podinfo/templates/deployment.yaml, podinfo/charts/redis/templates/…,
	// podinfo/crds/crd.yaml).
	Template string
	// Hook is set for a Helm hook (helm.sh/hook), which helm-controller runs
	// (unless disabled) but does not keep.
	Hook bool
	// CRD is set for a file of the chart's crds/ folder.
	CRD bool
	// PostRendered is set when the HelmRelease's post-renderers, fleetgen's
	// included, apply to it: false for CRDs, and for hooks with
	// spec.postRenderStrategy nohooks.
	PostRendered bool
	// Map is the object as plain JSON values. Do not change it: results are
	// shared (Memo).
	Map map[string]any
}

// Describe names the object without quoting any of its values: kind and
// namespace/name.
func (o *Object) Describe() string {
	kind, _ := o.Map["kind"].(string)
	meta, _ := o.Map["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	if ns != "" {
		ns += "/"
	}
	return kind + " " + ns + name
}

// Render renders chart c for in as helm-controller v1.6.4 installs it: the
// chart's valuesFiles (spec.chart.spec.valuesFiles, as source-controller
// packages them), dependency conditions, tags and import-values, the values
// schema (unless spec.install.disableSchemaValidation), Helm's engine with
// release name and namespace as helm-controller sets them, revision 1 as a
// first install, .Capabilities from in.KubeVersion, then the HelmRelease's
// post-renderers (kustomize patches and images, commonMetadata, the origin
// labels) by spec.postRenderStrategy. Offline: see funcs for what stands in.
// A chart that does not render is an *Error naming the chart.
func Render(ctx context.Context, c *Chart, in Input, lim Limits) (*Result, error) {
	res, err := render(ctx, c, in, lim)
	if err != nil {
		return nil, &Error{Chart: c.Label, Err: err}
	}
	return res, nil
}

func render(ctx context.Context, c *Chart, in Input, lim Limits) (*Result, error) {
	if in.Release == nil {
		return nil, errors.New("no HelmRelease to render for")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rel := in.Release
	ch, err := c.load()
	if err != nil {
		return nil, err
	}
	if t := rel.Spec.Chart; t != nil && len(t.Spec.ValuesFiles) > 0 {
		if err := useValuesFiles(ch, t.Spec.ValuesFiles, t.Spec.IgnoreMissingValuesFiles); err != nil {
			return nil, err
		}
	}
	kv := in.KubeVersion
	if kv == "" {
		kv = DefaultKubeVersion
	}
	caps, err := capabilities(kv, in.APIVersions)
	if err != nil {
		return nil, err
	}
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("the chart requires kubeVersion %s, which Kubernetes %s is not", inert.Quote(ch.Metadata.KubeVersion), caps.KubeVersion.Version)
	}
	values := in.Values
	if values == nil {
		values = map[string]any{}
	}
	// Helm changes the values it is given (import-values); the caller's are
	// shared.
	values, err = copyValues(values)
	if err != nil {
		return nil, err
	}
	if err := guard(func() error { return chartutil.ProcessDependencies(ch, values) }); err != nil {
		return nil, fmt.Errorf("dependencies: %s", inert.Prose(err.Error()))
	}
	opts := common.ReleaseOptions{Name: rel.HelmName(), Namespace: rel.HelmNamespace(), Revision: 1, IsInstall: true}
	var top common.Values
	if err := guard(func() (err error) {
		top, err = commonutil.ToRenderValuesWithSchemaValidation(ch, values, opts, caps, true)
		return err
	}); err != nil {
		return nil, fmt.Errorf("values: %s", inert.Prose(err.Error()))
	}
	rec := &recorder{}
	if rel.Spec.Install == nil || !rel.Spec.Install.DisableSchemaValidation {
		vals, _ := top["Values"].(common.Values)
		notes, err := validateSchema(ch, vals)
		if err != nil {
			return nil, err
		}
		for _, n := range notes {
			rec.add(NoteSchema, n)
		}
	}
	files, err := renderTemplates(ctx, ch, top, rec, lim)
	if err != nil {
		return nil, err
	}
	objs, err := postRender(files, rel)
	if err != nil {
		return nil, err
	}
	res := &Result{Chart: c.Label}
	for _, crd := range ch.CRDObjects() {
		docs, err := parseDocs(crd.Filename, string(crd.File.Data))
		if err != nil {
			return nil, err
		}
		for _, m := range docs {
			res.Objects = append(res.Objects, &Object{Template: crd.Filename, CRD: true, Map: m})
		}
	}
	res.Objects = append(res.Objects, objs...)
	res.Notes = append(rec.notes(), schemaNotes(rec)...)
	return res, nil
}

// renderTemplates runs Helm's engine within lim.RenderTime and
// lim.OutputBytes and drops NOTES.txt, as Helm's install does. A template
// that runs past the time is abandoned (text/template cannot be stopped):
// the error returns, the goroutine ends when the template does.
func renderTemplates(ctx context.Context, ch *chart.Chart, top common.Values, rec *recorder, lim Limits) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, lim.RenderTime)
	defer cancel()
	type out struct {
		files map[string]string
		err   error
	}
	done := make(chan out, 1)
	go func() {
		e := engine.Engine{CustomTemplateFuncs: rec.funcs()}
		var o out
		o.err = guard(func() (err error) {
			o.files, err = e.Render(ch, top)
			return err
		})
		done <- o
	}()
	var o out
	select {
	case o = <-done:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("rendering took more than %s: %w", lim.RenderTime, ErrLimit)
		}
		return nil, ctx.Err()
	}
	if o.err != nil {
		return nil, fmt.Errorf("render: %s", inert.Prose(o.err.Error()))
	}
	var total int64
	for name, s := range o.files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(o.files, name)
			continue
		}
		if total += int64(len(s)); total > lim.OutputBytes {
			return nil, fmt.Errorf("rendered more than %d bytes: %w", lim.OutputBytes, ErrLimit)
		}
	}
	return o.files, nil
}

// builtinAPIVersions is what a cluster's discovery lists for the built-in
// APIs, as Helm's GetVersionSet reads it: each group/version of the
// Kubernetes libraries (Helm's DefaultVersionSet) and each group/version/Kind,
// so that a chart's `.Capabilities.APIVersions.Has "batch/v1/CronJob"`
// answers as a cluster does.
var builtinAPIVersions = sync.OnceValue(func() []string {
	set := map[string]bool{}
	for _, gv := range common.DefaultVersionSet {
		set[gv] = true
	}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		set[gvk.GroupVersion().String()+"/"+gvk.Kind] = true
	}
	return slices.Sorted(maps.Keys(set))
})

// capabilities returns Helm's capabilities for Kubernetes version kv: the
// built-in API versions (builtinAPIVersions) plus extra, and a fixed HelmVersion (no Go version,
// which would differ between machines).
func capabilities(kv string, extra []string) (*common.Capabilities, error) {
	v, err := common.ParseKubeVersion(kv)
	if err != nil {
		return nil, fmt.Errorf("kubernetes version %s: want e.g. 1.33 or v1.33.4", inert.Quote(kv))
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *v
	caps.APIVersions = append(append(common.VersionSet{}, builtinAPIVersions()...), extra...)
	caps.HelmVersion.GoVersion = ""
	caps.HelmVersion.KubeClientVersion = "v1.36"
	return caps, nil
}

// useValuesFiles replaces the chart's values with its valuesFiles merged in
// order, as source-controller packages a HelmChart that lists them.
func useValuesFiles(ch *chart.Chart, files []string, ignoreMissing bool) error {
	merged := map[string]any{}
	for _, f := range files {
		var vals map[string]any
		if f == "values.yaml" {
			vals = ch.Values
		} else {
			var found bool
			for _, raw := range ch.Raw {
				if raw.Name == path.Clean(f) {
					v, err := common.ReadValues(raw.Data)
					if err != nil {
						return fmt.Errorf("valuesFiles %s: %s", inert.Quote(f), inert.Prose(err.Error()))
					}
					vals, found = v, true
				}
			}
			if !found {
				if ignoreMissing {
					continue
				}
				return fmt.Errorf("valuesFiles %s: no such file in the chart", inert.Quote(f))
			}
		}
		merged = mergeMaps(merged, vals)
	}
	ch.Values = merged
	return nil
}

// parseDocs splits a rendered file into objects, as Helm's manifest
// splitter does; empty documents are dropped.
func parseDocs(name, content string) ([]map[string]any, error) {
	docs := releaseutil.SplitManifests(content)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sortSplit(keys)
	var out []map[string]any
	for _, k := range keys {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(docs[k]), &m); err != nil {
			return nil, fmt.Errorf("%s: not YAML: %s", inert.Quote(name), inert.Prose(err.Error()))
		}
		if len(m) > 0 {
			out = append(out, m)
		}
	}
	return out, nil
}

func sortSplit(keys []string) {
	b := releaseutil.BySplitManifestsOrder(keys)
	for i := 1; i < len(b); i++ {
		for j := i; j > 0 && b.Less(j, j-1); j-- {
			b.Swap(j, j-1)
		}
	}
}

// copyValues deep-copies values through JSON, as Helm's own copy does.
func copyValues(v map[string]any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	return out, nil
}

// guard runs f, turning a panic of Helm's code on untrusted input into an
// error.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}
