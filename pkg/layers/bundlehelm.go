package layers

import (
	"crypto/md5" //nolint:gosec // Fleet's names, not a security use
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	texttemplate "text/template"

	"github.com/Masterminds/sprig/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/internal/sprigbound"
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

// bundleName is the name `fleet apply` gives bn of the GitRepo delivery:
// the options' name, else names.HelmReleaseName of the GitRepo's name
// joined with the folder (and, for a driven scan's options file, its name
// without extension).
func bundleName(delivery string, bn *bundle) string {
	if bn.opts.Name != "" {
		return bn.opts.Name
	}
	id := filepath.ToSlash(filepath.Join(delivery, bn.dir))
	if bn.optionsFile != "" {
		id = filepath.ToSlash(filepath.Join(id, strings.TrimSuffix(bn.optionsFile, path.Ext(bn.optionsFile))))
	}
	return helmReleaseName(id)
}

var (
	disallowedChars = regexp.MustCompile(`[^a-zA-Z0-9-]+`)
	helmReleaseRE   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dnsLabelSafe    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	multiDash       = regexp.MustCompile("-+")
)

// helmReleaseName is Fleet's names.HelmReleaseName: a name valid as a Helm
// release and a DNS label, at most 53 characters.
func helmReleaseName(s string) string {
	bak := s
	s = strings.ReplaceAll(s, "/", "-")
	if s != strings.ToLower(s) || disallowedChars.MatchString(s) {
		s = s + "-" + md5Hex(s, 8)
	}
	s = strings.ToLower(s)
	s = disallowedChars.ReplaceAllLiteralString(s, "-")
	s = multiDash.ReplaceAllString(s, "-")
	s = strings.Trim(s, "-")
	if helmReleaseRE.MatchString(s) && dnsLabelSafe.MatchString(s) {
		return limitName(s, 53)
	}
	return md5Hex(bak, 24)
}

// limitName is Fleet's names.Limit.
func limitName(s string, count int) string {
	if len(s) <= count {
		return s
	}
	const hexLen = 5
	sep := "-"
	if count <= hexLen+len(sep) {
		return s[:count]
	}
	n := count - hexLen - len(sep)
	if s[n-1] == '-' {
		sep = ""
	}
	return s[:n] + sep + md5Hex(s, hexLen)
}

func md5Hex(s string, n int) string {
	h := md5.Sum([]byte(s)) //nolint:gosec // Fleet's names
	return hex.EncodeToString(h[:])[:n]
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
