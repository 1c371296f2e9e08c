package layers

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/charts"
	"fleetgen.dev/fleetgen/pkg/lock"
)

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// A bundle that is a Helm chart of its own folder is installed by Fleet's
// agent with Helm (Fleet v0.16 internal/helmdeployer), and the model renders
// it the same way for each cluster:
//
//   - the chart: the bundle's folder when it holds a Chart.yaml, or the
//     folder helm.chart names inside it; every file of the bundle but its
//     options file and the values files its options name (bundlereader
//     ignoreApplyConfigs). Or the chart `fleet apply` downloads (helm.repo
//     oci:// or http(s)://, helm.chart, helm.version: RemoteChart), which
//     the renderer reads as the lock pins it. A chart whose dependencies are
//     not in its charts/ folder needs `helm dependency update` (the
//     network), a version range is resolved when `fleet apply` runs, and a
//     chart at a URL is fetched from it: none is rendered (a warning);
//   - the values: helm.values, merged with the helm.valuesFiles (those of the
//     options only when helm.chart or helm.repo is set, as `fleet apply`
//     reads them; a targetCustomization's always), then the matching
//     targetCustomizations' helm.values (options.Merge, wrangler's
//     MergeMaps), then fleet-controller's pre-processing for the cluster:
//     a value "global.fleet.clusterLabels.<label>" becomes that label's
//     value, and the values and helm.templateValues are templated
//     (preprocess). helm.valuesFrom is read in the cluster: not modelled,
//     a warning;
//   - the release: helm.releaseName, else the bundle's name as `fleet apply`
//     makes it (names.HelmReleaseName of the GitRepo's name joined with the
//     folder); its namespace the options' namespace, else defaultNamespace,
//     else "default"; the cluster's Kubernetes version;
//   - after Helm, Fleet's post-renderer: kustomize over Helm's output when
//     the bundle holds a kustomization file and kustomize.dir a
//     kustomization.yaml (kustomizeHelm), then the options' namespace on
//     every object (a cluster-scoped one fails the deployment). Fleet's
//     bookkeeping labels and annotations (objectset.rio.cattle.io) are not
//     in the model.

// BundleChart is a bundle Fleet's agent installs as a Helm chart, as one
// cluster receives it: what Options.BundleCharts renders.
type BundleChart struct {
	// Label names the chart in messages: the bundle's folder and, with
	// helm.chart, the chart's folder inside it.
	Label string
	// Files are the chart's files, by path relative to the chart's folder.
	Files map[string][]byte
	// Release and Namespace are the Helm release's name and namespace.
	Release, Namespace string
	// Values are the values the chart is installed with.
	Values map[string]any
	// Remote is the chart `fleet apply` downloads (helm.repo, or helm.chart
	// oci://); Files is nil then.
	Remote *RemoteChart
	// Raw asks for the objects as Helm renders them, without the release's
	// namespace set: Fleet runs kustomize over them (kustomizeHelm).
	Raw bool
	// DependencyUpdate says `fleet apply` runs `helm dependency update` on
	// the chart (helm.disableDependencyUpdate unset): dependencies missing
	// from its charts/ folder are fetched, from the network, then.
	DependencyUpdate bool
}

// RemoteChart is a chart `fleet apply` downloads into a bundle: an OCI
// chart (Repo or Chart oci://host/path) or a chart of an HTTP repository's
// index (Repo, Chart), at Version.
type RemoteChart struct {
	Repo, Chart, Version string
}

// NotModelledError is a BundleChartRenderer's answer for a chart Fleet
// installs in a way the model does not follow: a warning, not an input error.
type NotModelledError struct{ Why string }

func (e *NotModelledError) Error() string { return e.Why }

// BundleChartRenderer renders c as Helm installs it on cluster (its
// Kubernetes version): the objects, namespaced ones in c.Namespace unless
// they name their own. The same c for clusters of one Kubernetes version
// gives the same slice.
type BundleChartRenderer func(cluster string, c BundleChart) ([]*Object, error)

// helmOptions are the HelmOptions of a bundle's options that change what
// the agent installs.
type helmOptions struct {
	Chart                   string            `json:"chart,omitempty"`
	Repo                    string            `json:"repo,omitempty"`
	Version                 string            `json:"version,omitempty"`
	ReleaseName             string            `json:"releaseName,omitempty"`
	Values                  map[string]any    `json:"values,omitempty"`
	ValuesFiles             []string          `json:"valuesFiles,omitempty"`
	ValuesFrom              []json.RawMessage `json:"valuesFrom,omitempty"`
	TemplateValues          map[string]string `json:"templateValues,omitempty"`
	DisablePreProcess       bool              `json:"disablePreProcess,omitempty"`
	DisableDependencyUpdate bool              `json:"disableDependencyUpdate,omitempty"`
}

// mergeHelm is options.Merge for the Helm options the model reads.
func mergeHelm(base, custom *helmOptions) *helmOptions {
	if custom == nil {
		return base
	}
	r := &helmOptions{}
	if base != nil {
		*r = *base
	}
	switch {
	case r.Values == nil:
		r.Values = custom.Values
	case custom.Values != nil:
		r.Values = mergeMaps(r.Values, custom.Values)
	}
	if len(custom.TemplateValues) > 0 {
		tv := map[string]string{}
		for k, v := range r.TemplateValues {
			tv[k] = v
		}
		for k, v := range custom.TemplateValues {
			tv[k] = v
		}
		r.TemplateValues = tv
	}
	if len(custom.ValuesFrom) > 0 {
		r.ValuesFrom = append(append([]json.RawMessage(nil), r.ValuesFrom...), custom.ValuesFrom...)
	}
	if custom.Repo != "" {
		r.Repo = custom.Repo
	}
	if custom.Chart != "" {
		r.Chart = custom.Chart
	}
	if custom.Version != "" {
		r.Version = custom.Version
	}
	if custom.ReleaseName != "" {
		r.ReleaseName = custom.ReleaseName
	}
	r.DisablePreProcess = r.DisablePreProcess || custom.DisablePreProcess
	r.DisableDependencyUpdate = r.DisableDependencyUpdate || custom.DisableDependencyUpdate
	return r
}

// mergeMaps is wrangler's data.MergeMaps: overlay's keys over base's, maps
// merged key by key, anything else replaced. Neither is changed.
func mergeMaps(base, overlay map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(overlay))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range overlay {
		if bm, ok := out[k].(map[string]any); ok {
			if om, ok := v.(map[string]any); ok {
				v = mergeMaps(bm, om)
			}
		}
		out[k] = v
	}
	return out
}

// valuesFiles merges the values files h names (relative to the bundle's
// folder) into h.Values, as bundlereader's generateValues does; read reads
// one.
func valuesFiles(h *helmOptions, read func(string) ([]byte, error)) error {
	if h == nil || len(h.ValuesFiles) == 0 {
		return nil
	}
	vals := h.Values
	for _, f := range h.ValuesFiles {
		data, err := read(f)
		if err != nil {
			return fmt.Errorf("values file %s: %w", inert.Quote(f), err)
		}
		var m map[string]any
		if err := sigsyaml.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("values file %s: not YAML of values", inert.Quote(f))
		}
		vals = mergeMaps(vals, m)
	}
	if len(vals) > 0 {
		h.Values = vals
	}
	return nil
}

// ignoredApplyConfigs are the files of a bundle that `fleet apply` leaves
// out of its resources, by path relative to the bundle's folder: the values
// files its options name, as written and by base name.
func ignoredApplyConfigs(opts bundleOptions) map[string]bool {
	out := map[string]bool{}
	add := func(h *helmOptions) {
		if h == nil {
			return
		}
		for _, f := range h.ValuesFiles {
			out[f] = true
			out[path.Base(f)] = true
		}
	}
	add(opts.Helm)
	for i := range opts.TargetCustomizations {
		add(opts.TargetCustomizations[i].Helm)
	}
	return out
}

// chartFolder returns the folder of bn's chart, relative to the bundle's
// folder, for opts: "." for a Chart.yaml at the top, the folder helm.chart
// names when it holds one; ok is false when bn is not a Helm chart of its
// own files. why says why a chart is not rendered.
func chartFolder(bn *bundle, opts deployOptions) (dir string, remote *RemoteChart, why string, ok bool) {
	h := opts.Helm
	if h != nil && (h.Repo != "" || strings.HasPrefix(h.Chart, "oci://")) {
		if h.Repo != "" && !strings.HasPrefix(h.Repo, "oci://") && !strings.HasPrefix(h.Repo, "https://") && !strings.HasPrefix(h.Repo, "http://") {
			return "", nil, "deploys the Helm chart of its options' helm.repo " + inert.Quote(h.Repo) + ", neither oci:// nor http(s)://", true
		}
		return "", &RemoteChart{Repo: h.Repo, Chart: h.Chart, Version: h.Version}, "", true
	}
	if h != nil && h.Chart != "" {
		c := strings.TrimPrefix(h.Chart, "./")
		if strings.Contains(c, "://") || strings.HasSuffix(c, ".tgz") || strings.HasPrefix(c, "/") {
			return "", nil, "deploys the Helm chart of its options' helm.chart " + inert.Quote(h.Chart) + " (downloaded by `fleet apply` from that URL)", true
		}
		c = path.Clean(c)
		if _, found := bn.files[path.Join(c, "Chart.yaml")]; !found || c == ".." || strings.HasPrefix(c, "../") {
			return "", nil, "deploys the Helm chart of its options' helm.chart " + inert.Quote(h.Chart) + ", which is not a folder of the bundle holding a Chart.yaml", true
		}
		return c, nil, "", true
	}
	if _, found := bn.files["Chart.yaml"]; found {
		return ".", nil, "", true
	}
	return "", nil, "", false
}

// helmBundleSet returns the set Fleet's agent installs on cluster c from
// bn, a Helm chart in folder dir of the bundle, with opts; nil, with a
// note, when the model cannot render it.
func (m *Model) helmBundleSet(b *builder, d Delivery, bn *bundle, opts deployOptions, dir string, remote *RemoteChart, c FleetCluster) (*Set, error) {
	at := note{delivery: d.Name, chain: "bundle " + inert.Quote(bn.dir), file: bn.dir}
	warn := func(why string) (*Set, error) {
		at.warn, at.msg = true, fmt.Sprintf("delivery %s: bundle %s %s, which this model does not render: what it deploys is not checked", d.Name, inert.Quote(bn.dir), why)
		m.note(at, c.Name)
		return nil, nil
	}
	h := opts.Helm
	if h == nil {
		h = &helmOptions{}
	}
	if len(h.ValuesFrom) > 0 {
		return warn("takes Helm values from helm.valuesFrom (read in the cluster)")
	}
	values, err := preprocess(h, c)
	var nm *NotModelledError
	switch {
	case errors.As(err, &nm):
		return warn(nm.Why)
	case err != nil:
		at.msg = fmt.Sprintf("delivery %s: bundle %s: fleet-controller cannot make its Helm values for the cluster, and deploys it nowhere there: %v", d.Name, inert.Quote(bn.dir), err)
		m.note(at, c.Name)
		return nil, nil
	}
	skip := ignoredApplyConfigs(bn.opts)
	// Fleet's post-renderer runs kustomize over Helm's output when the
	// bundle holds a kustomization file and kustomize.dir a
	// kustomization.yaml (helmdeployer postRender, kustomize.Process).
	kustomizable := false
	for p := range bn.files {
		if !skip[p] && (strings.HasSuffix(p, "kustomization.yaml") || strings.HasSuffix(p, "kustomization.yml") || strings.HasSuffix(p, "Kustomization")) {
			kustomizable = true
		}
	}
	kdir := "."
	if opts.Kustomize != nil && opts.Kustomize.Dir != "" {
		kdir = path.Clean(strings.TrimPrefix(opts.Kustomize.Dir, "/"))
	}
	_, hasK := bn.files[path.Join(kdir, "kustomization.yaml")]
	kust := kustomizable && hasK && !skip[path.Join(kdir, "kustomization.yaml")]
	var files map[string][]byte
	prefix := ""
	if dir != "." {
		prefix = dir + "/"
	}
	if remote == nil {
		files = map[string][]byte{}
		for p, data := range bn.files {
			if skip[p] || !strings.HasPrefix(p, prefix) {
				continue
			}
			files[strings.TrimPrefix(p, prefix)] = data
		}
	}
	label := bn.dir
	if dir != "." && remote == nil {
		label = path.Join(bn.dir, dir)
	}
	ns := opts.TargetNamespace
	if ns == "" {
		ns = opts.DefaultNamespace
	}
	if ns == "" {
		ns = "default"
	}
	release := h.ReleaseName
	if release == "" {
		release = helmReleaseName(bundleName(d.Name, bn))
	}
	objs, err := m.opts.BundleCharts(c.Name, BundleChart{Label: label, Files: files, Remote: remote, Release: release, Namespace: ns, Values: values, DependencyUpdate: !h.DisableDependencyUpdate, Raw: kust})
	if errors.As(err, &nm) {
		return warn(nm.Why)
	}
	if err != nil {
		at.msg = fmt.Sprintf("delivery %s: bundle %s does not install as Fleet's agent installs it: %v", d.Name, inert.Quote(bn.dir), err)
		m.note(at, c.Name)
		return nil, nil
	}
	if kust {
		if objs, err = kustomizeHelm(b, bn, skip, kdir, objs); err != nil {
			var fail *Failure
			var lim *LimitError
			if errors.As(err, &fail) || errors.As(err, &lim) {
				return nil, err
			}
			at.msg = fmt.Sprintf("delivery %s: bundle %s does not render as Fleet's agent renders it (kustomize over Helm's output): %v", d.Name, inert.Quote(bn.dir), err)
			m.note(at, c.Name)
			return nil, nil
		}
		objs = inNamespace(objs, ns)
	}
	if opts.TargetNamespace != "" {
		own := ownCRDs(objs)
		objs = slices.Clone(objs) // the renderer's are shared
		for i, o := range objs {
			if o.Namespace == "" && charts.ClusterScoped(o.APIVersion, o.Kind, own) {
				at.msg = fmt.Sprintf("delivery %s: bundle %s: %s %s is cluster-scoped, and the options' namespace %s makes Fleet's agent refuse it: want defaultNamespace instead", d.Name, inert.Quote(bn.dir), o.Kind, inert.Quote(o.Name), inert.Quote(opts.TargetNamespace))
				m.note(at, c.Name)
				return nil, nil
			}
			if o.Namespace != opts.TargetNamespace {
				mm := cloneMeta(o.Map())
				mm["metadata"].(map[string]any)["namespace"] = opts.TargetNamespace
				n := *o
				n.value, n.made, n.Namespace = mm, made{}, opts.TargetNamespace
				objs[i] = &n
			}
		}
	}
	if m.chartTemplates == nil {
		m.chartTemplates = map[string]bool{}
	}
	for p := range files {
		if strings.HasPrefix(p, "templates/") {
			m.chartTemplates[path.Join(bn.dir, prefix+p)] = true
		}
	}
	key := fmt.Sprintf("bundlechart\x00%s\x00%s\x00%d", d.Name, bn.dir, len(objs))
	if remote != nil {
		key += fmt.Sprintf("\x00%s\x00%s\x00%s", remote.Repo, remote.Chart, remote.Version)
	}
	if len(objs) > 0 {
		key = fmt.Sprintf("bundlechart\x00%s\x00%s\x00%p\x00%d", d.Name, bn.dir, objs[0], len(objs))
	}
	if opts.TargetNamespace != "" {
		key += "\x00" + opts.TargetNamespace
	}
	if s, ok := m.sets[key]; ok {
		return s, nil
	}
	s := &Set{Path: bn.dir, Origin: bn.dir, Delivery: d.Name, Release: release, Objects: objs, build: &Build{Path: bn.dir, files: bn.read}}
	if remote != nil {
		oci := cmpOr(remote.Repo, remote.Chart)
		if strings.HasPrefix(oci, "oci://") {
			if n, err := lock.Normalize(strings.TrimSuffix(strings.TrimPrefix(oci, "oci://"), "/") + ":" + remote.Version); err == nil {
				s.ChartOCI = n
			}
		}
	}
	m.sets[key] = s
	m.Sets = append(m.Sets, s)
	return s, nil
}

// kustomizeHelm is Fleet's kustomize.Process over Helm's output objs: the
// bundle's files (but those `fleet apply` leaves out, skip) in memory, objs
// written to <kdir>/fleet-manifests.yaml and put first in the resources of
// <kdir>/kustomization.yaml (when Helm rendered anything), built as
// kustomizeBundle builds a bundle's kustomization.
func kustomizeHelm(b *builder, bn *bundle, skip map[string]bool, kdir string, objs []*Object) ([]*Object, error) {
	files := make(map[string][]byte, len(bn.files)+1)
	for p, data := range bn.files {
		if !skip[p] {
			files[p] = data
		}
	}
	const manifests = "fleet-manifests.yaml"
	if len(objs) > 0 {
		var text []byte
		for _, o := range objs {
			y, err := sigsyaml.Marshal(o.Map())
			if err != nil {
				return nil, err
			}
			text = append(append(text, "---\n"...), y...)
		}
		files[path.Join(kdir, manifests)] = text
		kfile := path.Join(kdir, "kustomization.yaml")
		var k map[string]any
		if err := sigsyaml.Unmarshal(files[kfile], &k); err != nil {
			return nil, fmt.Errorf("%s: not YAML", path.Join(bn.dir, kfile))
		}
		if k == nil {
			k = map[string]any{}
		}
		var res []any
		if l, ok := k["resources"].([]any); ok {
			res = l
		}
		if !slices.Contains(res, any(manifests)) {
			k["resources"] = append([]any{manifests}, res...)
			out, err := sigsyaml.Marshal(k)
			if err != nil {
				return nil, err
			}
			files[kfile] = out
		}
	} else {
		files[path.Join(kdir, manifests)] = nil
	}
	return kustomizeBundle(b, &bundle{dir: bn.dir, files: files}, kdir)
}

// ownCRDs are the cluster-scoped kinds of the CustomResourceDefinitions
// among objs ("group/Kind"), as charts.ClusterScoped reads them.
func ownCRDs(objs []*Object) map[string]bool {
	own := map[string]bool{}
	for _, o := range objs {
		if o.Kind != "CustomResourceDefinition" {
			continue
		}
		spec, _ := o.Map()["spec"].(map[string]any)
		group, _ := spec["group"].(string)
		names, _ := spec["names"].(map[string]any)
		kind, _ := names["kind"].(string)
		scope, _ := spec["scope"].(string)
		own[group+"/"+kind] = scope == "Cluster"
	}
	return own
}

// inNamespace returns objs with each object of a namespaced kind that has
// no namespace in ns, as Helm's kube client applies it (charts'
// InReleaseNamespace, for objects kustomize made).
func inNamespace(objs []*Object, ns string) []*Object {
	own := ownCRDs(objs)
	out := make([]*Object, len(objs))
	for i, o := range objs {
		out[i] = o
		if o.Namespace != "" || charts.ClusterScoped(o.APIVersion, o.Kind, own) {
			continue
		}
		mm := cloneMeta(o.Map())
		mm["metadata"].(map[string]any)["namespace"] = ns
		n := *o
		n.value, n.made, n.Namespace = mm, made{}, ns
		out[i] = &n
	}
	return out
}
