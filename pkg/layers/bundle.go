package layers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/fleetmatch"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// The bundles of deliveries from the fleet's own source (SPEC §5 item 4),
// as rancher/fleet v0.16 makes and deploys them:
//
//   - which folders are bundles: a driven scan (bundles) takes each base with
//     its options file; a classic scan (paths) expands each glob and walks
//     each folder it matches (internal/cmd/cli/apply CreateBundles): the
//     folder is a bundle when it holds a fleet.yaml, or holds resources in a
//     folder without one (shouldCreateBundleForThisPath), and every folder
//     below it with a fleet.yaml is a bundle of its own;
//   - what a bundle holds: every file below its folder but hidden ones, those
//     a .fleetignore names and the options file (bundlereader GetContent);
//   - which clusters it reaches: the delivery's targets, or the options
//     file's overrideTargets, matched as Fleet matches (pkg/fleetmatch); per
//     cluster, the first targetCustomization that matches (or, with
//     targetCustomizationMode AllMatches, all of them merged in order) adds
//     its options, and one with doNotDeploy skips the cluster
//     (internal/cmd/controller/target Builder, options.Merge);
//   - what the agent makes of it (internal/helmdeployer/render and
//     postrender): a Helm chart of the bundle's own files (a Chart.yaml, or
//     helm.chart naming a folder of the bundle) is installed with Helm
//     (bundlehelm.go: Options.BundleCharts renders it per cluster), one from
//     helm.repo or a URL is downloaded by `fleet apply` and not rendered (a
//     warning names it); a kustomization.yaml at kustomize.dir is built with
//     kustomize over the bundle's files only (load restrictions root-only,
//     plugins off); otherwise every .yaml, .yml and .json file outside
//     folders with their own fleet.yaml or Chart.yaml is a raw manifest,
//     after the cluster's yaml.overlays replace or patch files (files under
//     templates/ are Helm templates: a warning names them). The delivery's
//     targetNamespace, else the options' namespace, is set on every object.
//
// A bundle's strategic merge patch of an overlay (a _patch. file of a
// built-in kind) is applied as a JSON merge patch: lists are replaced, not
// merged by key.

// Delivery is a delivery from the fleet's own source, as the model renders
// its bundles (DeliveriesOf makes them from fleet.yaml).
type Delivery struct {
	Name string
	// Paths is a classic scan (globs), Bundles a driven scan.
	Paths   []string
	Bundles []schema.DeliveryBundle
	// Targets are the GitRepo's targets, in order.
	Targets []fleetmatch.Target
	// TargetNamespace is the GitRepo's spec.targetNamespace.
	TargetNamespace string
}

// FleetCluster is a cluster registered with Fleet, as bundles match it.
type FleetCluster struct {
	Name string
	// Namespace is the Fleet workspace its Cluster object is in.
	Namespace string
	Labels    map[string]string
	// Live are the labels of its Cluster object as Fleet reads them:
	// Labels, its shard's and the ones of the Flux Kustomization that
	// applies it (layout.FluxApplied). Fleet's values templating sees these
	// (preprocess); nil reads Labels.
	Live   map[string]string
	Groups []fleetmatch.Group
}

// live returns c.Live, or c.Labels when it has none.
func (c FleetCluster) live() map[string]string {
	if c.Live != nil {
		return c.Live
	}
	return c.Labels
}

// DeliveriesOf returns f's deliveries from its own source (spec.source.kind
// git and repo the same repository as spec.source.url, schema.SameRepo) and
// the clusters registered with Fleet, with the groups each is in.
func DeliveriesOf(f *schema.Fleet) ([]Delivery, []FleetCluster) {
	var ds []Delivery
	for i := range f.Spec.Deliveries {
		d := &f.Spec.Deliveries[i]
		if !f.OwnRepo(d.Repo) {
			continue
		}
		nd := Delivery{Name: d.Name, Paths: d.Paths, Bundles: d.Bundles, TargetNamespace: d.TargetNamespace}
		for j := range d.Targets {
			nd.Targets = append(nd.Targets, d.Targets[j].Match())
		}
		ds = append(ds, nd)
	}
	if len(ds) == 0 {
		return nil, nil
	}
	groups := f.FleetGroups()
	var cs []FleetCluster
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		if m := c.ModeOf(); m == nil || !m.Fleet {
			continue
		}
		fc := fleetmatch.Cluster{Name: c.Name, Labels: c.Labels}
		cs = append(cs, FleetCluster{Name: c.Name, Namespace: f.Spec.Manager.Namespace, Labels: c.Labels, Groups: fleetmatch.GroupsOf(fc, groups)})
	}
	return ds, cs
}

// bundleOptions is what the model reads of a bundle's options file
// (rancher/fleet FleetYAML: BundleDeploymentOptions inline, then the
// targets).
type bundleOptions struct {
	deployOptions
	// Name is the bundle's name (fleet.yaml name).
	Name                    string         `json:"name,omitempty"`
	TargetCustomizations    []bundleTarget `json:"targetCustomizations,omitempty"`
	OverrideTargets         []bundleTarget `json:"overrideTargets,omitempty"`
	TargetCustomizationMode string         `json:"targetCustomizationMode,omitempty"`
}

// deployOptions are the BundleDeploymentOptions that change what a bundle
// renders.
type deployOptions struct {
	DefaultNamespace string `json:"defaultNamespace,omitempty"`
	TargetNamespace  string `json:"namespace,omitempty"`
	Kustomize        *struct {
		Dir string `json:"dir,omitempty"`
	} `json:"kustomize,omitempty"`
	Helm *helmOptions `json:"helm,omitempty"`
	YAML *struct {
		Overlays []string `json:"overlays,omitempty"`
	} `json:"yaml,omitempty"`
}

// bundleTarget is a fleet.yaml targetCustomization or overrideTarget
// (rancher/fleet BundleTarget).
type bundleTarget struct {
	deployOptions
	Name                 string         `json:"name,omitempty"`
	ClusterName          string         `json:"clusterName,omitempty"`
	ClusterSelector      *labelSelector `json:"clusterSelector,omitempty"`
	ClusterGroup         string         `json:"clusterGroup,omitempty"`
	ClusterGroupSelector *labelSelector `json:"clusterGroupSelector,omitempty"`
	DoNotDeploy          bool           `json:"doNotDeploy,omitempty"`
}

// labelSelector is a metav1.LabelSelector.
type labelSelector struct {
	MatchLabels      map[string]string        `json:"matchLabels,omitempty"`
	MatchExpressions []fleetmatch.Requirement `json:"matchExpressions,omitempty"`
}

func (t *bundleTarget) match() fleetmatch.Target {
	out := fleetmatch.Target{Name: t.Name, ClusterName: t.ClusterName, ClusterGroup: t.ClusterGroup}
	if s := t.ClusterSelector; s != nil {
		out.ClusterSelector, out.ClusterExpressions = nonNil(s.MatchLabels), s.MatchExpressions
	}
	if s := t.ClusterGroupSelector; s != nil {
		out.ClusterGroupSelector, out.ClusterGroupExpressions = nonNil(s.MatchLabels), s.MatchExpressions
	}
	return out
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// merge is options.Merge for the fields the model reads.
func (o deployOptions) merge(c deployOptions) deployOptions {
	if c.DefaultNamespace != "" {
		o.DefaultNamespace = c.DefaultNamespace
	}
	if c.TargetNamespace != "" {
		o.TargetNamespace = c.TargetNamespace
	}
	if c.Kustomize != nil && c.Kustomize.Dir != "" {
		o.Kustomize = c.Kustomize
	}
	o.Helm = mergeHelm(o.Helm, c.Helm)
	if c.YAML != nil {
		var ov []string
		if o.YAML != nil {
			ov = o.YAML.Overlays
		}
		o.YAML = &struct {
			Overlays []string `json:"overlays,omitempty"`
		}{Overlays: append(slices.Clone(ov), c.YAML.Overlays...)}
	}
	return o
}

// bundle is one bundle folder's content: its files (path relative to the
// bundle's folder) and options.
type bundle struct {
	dir string // relative to the root
	// optionsFile is a driven scan's options file, "" for fleet.yaml.
	optionsFile string
	files       map[string][]byte
	opts        bundleOptions
	err         error    // the options file does not decode, or a file cannot be read
	read        []string // every file read, relative to the root
}

// bundles renders every delivery's bundles for each cluster it reaches.
func (m *Model) bundles(b *builder, ds []Delivery) error {
	for _, d := range ds {
		dirs, err := m.bundleDirs(b, d)
		if err != nil {
			return err
		}
		for _, bd := range dirs {
			bn, err := m.readBundle(b, bd.dir, bd.options)
			if err != nil {
				return err
			}
			if err := m.deliver(b, d, bn); err != nil {
				return err
			}
		}
	}
	return nil
}

type bundleDir struct{ dir, options string }

// bundleDirs returns d's bundle folders (relative to the root) and options
// files (relative to the folder; "" for fleet.yaml or fleet.yml, if any).
func (m *Model) bundleDirs(b *builder, d Delivery) ([]bundleDir, error) {
	var out []bundleDir
	for _, bb := range d.Bundles {
		out = append(out, bundleDir{dir: cleanPath(bb.Base), options: bb.Options})
	}
	seen := map[string]bool{}
	for _, glob := range d.Paths {
		glob = strings.TrimLeft(glob, "/")
		matches, err := b.fs.Glob(filepath.Join(b.root, filepath.FromSlash(glob)))
		if err != nil {
			m.note(note{delivery: d.Name, msg: fmt.Sprintf("delivery %s: path %s is not a valid glob", d.Name, inert.Quote(glob))}, "")
			continue
		}
		sort.Strings(matches)
		if !slices.ContainsFunc(matches, b.fs.IsDir) {
			m.note(note{delivery: d.Name, msg: fmt.Sprintf("delivery %s: path %s matches no folder in the fleet's source (repo is spec.source.url): want a folder inside the folder of fleet.yaml", d.Name, inert.Quote(glob))}, "")
			continue
		}
		for _, abs := range matches {
			if !b.fs.IsDir(abs) {
				continue
			}
			err := b.fs.Walk(abs, func(p string, info os.FileInfo, err error) error {
				if err != nil {
					return err
				}
				if info.IsDir() && info.Name() == ".git" {
					return filepath.SkipDir
				}
				if !info.IsDir() {
					return nil
				}
				if p == abs && !hasFleetYAML(b.fs, p) && !resourcesWithoutFleetYAML(b.fs, p) {
					return nil
				}
				if p != abs && !hasFleetYAML(b.fs, p) {
					return nil
				}
				if rel := relTo(b.root, p); !seen[rel] {
					seen[rel] = true
					out = append(out, bundleDir{dir: rel})
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func hasFleetYAML(fs filesys.FileSystem, dir string) bool {
	for _, n := range []string{"fleet.yaml", "fleet.yml"} {
		if p := filepath.Join(dir, n); fs.Exists(p) && !fs.IsDir(p) {
			return true
		}
	}
	return false
}

// resourcesWithoutFleetYAML is Fleet's hasSubDirectoryWithResourcesAndWithoutFleetYaml.
func resourcesWithoutFleetYAML(fs filesys.FileSystem, dir string) bool {
	if hasFleetYAML(fs, dir) {
		return false
	}
	entries, err := fs.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		p := filepath.Join(dir, e)
		if !fs.IsDir(p) {
			if ext := filepath.Ext(e); ext == ".yaml" || ext == ".yml" {
				return true
			}
		} else if resourcesWithoutFleetYAML(fs, p) {
			return true
		}
	}
	return false
}

// readBundle reads the bundle in folder dir with options file options.
func (m *Model) readBundle(b *builder, dir, options string) (bn *bundle, err error) {
	bn = &bundle{dir: dir, optionsFile: options, files: map[string][]byte{}}
	b.guard.take()
	defer func() {
		if bn != nil {
			bn.read = b.guard.take()
		}
	}()
	abs := filepath.Join(b.root, filepath.FromSlash(dir))
	if !b.fs.IsDir(abs) {
		bn.err = errNoFolder
		return bn, nil
	}
	optFile := ""
	switch {
	case options != "":
		optFile = path.Clean(options)
	case b.fs.Exists(filepath.Join(abs, "fleet.yaml")):
		optFile = "fleet.yaml"
	case b.fs.Exists(filepath.Join(abs, "fleet.yml")):
		optFile = "fleet.yml"
	}
	if optFile != "" {
		data, err := b.fs.ReadFile(filepath.Join(abs, filepath.FromSlash(optFile)))
		if err == nil {
			err = sigsyaml.Unmarshal(data, &bn.opts)
		}
		if err != nil && options != "" || err != nil && !errors.Is(err, os.ErrNotExist) {
			bn.err = fmt.Errorf("options file %s: %w", path.Join(dir, optFile), err)
			return bn, nil
		}
	}
	ignored := map[string][]string{} // folder → its .fleetignore's patterns
	err = b.fs.Walk(abs, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(abs, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			ignored["."] = fleetIgnore(b.fs, p)
			return nil
		}
		if strings.HasPrefix(info.Name(), ".") || isIgnored(ignored, rel, info.IsDir()) {
			if info.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if info.IsDir() {
			ignored[rel] = fleetIgnore(b.fs, p)
			return nil
		}
		if rel == optFile {
			return nil
		}
		data, err := b.fs.ReadFile(p)
		if err != nil {
			if refused, failed := b.guard.reset(); refused != nil || failed != nil {
				if failed != nil {
					return &Failure{failed}
				}
				return refused
			}
			return err
		}
		bn.files[rel] = data
		return nil
	})
	var fail *Failure
	var lim *LimitError
	switch {
	case errors.As(err, &fail), errors.As(err, &lim):
		return nil, err
	case err != nil:
		bn.err = err
		return bn, nil
	}
	// The values files `fleet apply` merges into the options' values: the
	// options' own only with helm.chart or helm.repo set, a
	// targetCustomization's always (bundlereader readResources).
	read := func(f string) ([]byte, error) {
		p := filepath.Join(abs, filepath.FromSlash(f))
		if rel := relTo(b.root, p); rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, errors.New("outside the fleet's folder")
		}
		data, err := b.fs.ReadFile(p)
		if err != nil {
			if refused, failed := b.guard.reset(); refused != nil || failed != nil {
				if failed != nil {
					return nil, &Failure{failed}
				}
				return nil, refused
			}
			return nil, errors.New("cannot be read")
		}
		return data, nil
	}
	if h := bn.opts.Helm; h != nil && (h.Chart != "" || h.Repo != "") {
		h2 := *h
		err = valuesFiles(&h2, read)
		bn.opts.Helm = &h2
	}
	for i := range bn.opts.TargetCustomizations {
		if err != nil {
			break
		}
		if h := bn.opts.TargetCustomizations[i].Helm; h != nil {
			h2 := *h
			err = valuesFiles(&h2, read)
			bn.opts.TargetCustomizations[i].Helm = &h2
		}
	}
	switch {
	case errors.As(err, &fail), errors.As(err, &lim):
		return nil, err
	case err != nil:
		bn.err = err
	}
	return bn, nil
}

// fleetIgnore returns the patterns of dir's .fleetignore.
func fleetIgnore(fs filesys.FileSystem, dir string) []string {
	data, err := fs.ReadFile(filepath.Join(dir, ".fleetignore"))
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := trailingSpace.ReplaceAllString(sc.Text(), "$1")
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

var trailingSpace = regexp.MustCompile(`([^\\])\s+$`)

// isIgnored reports whether the entry rel (slash path below the bundle) is
// named by a .fleetignore of its folder or one above: a pattern matches its
// base name, "dir/*" a folder named dir.
func isIgnored(ignored map[string][]string, rel string, dir bool) bool {
	base := path.Base(rel)
	for d := path.Dir(rel); ; d = path.Dir(d) {
		for _, p := range ignored[d] {
			if name, ok := strings.CutSuffix(p, "/*"); ok && name != "" {
				if dir && name == base {
					return true
				}
				continue
			}
			if ok, _ := path.Match(p, base); ok {
				return true
			}
		}
		if d == "." {
			return false
		}
	}
}

// deliver renders bundle bn of d for every Fleet cluster it reaches.
func (m *Model) deliver(b *builder, d Delivery, bn *bundle) error {
	at := note{delivery: d.Name, chain: "bundle " + inert.Quote(bn.dir), file: bn.dir}
	if bn.err != nil {
		at.msg = fmt.Sprintf("delivery %s: bundle %s cannot be read: %v", d.Name, inert.Quote(bn.dir), bn.err)
		if bn.err == errNoFolder {
			at.msg = fmt.Sprintf("delivery %s: bundle folder %s does not exist in the fleet's source: want a folder inside the folder of fleet.yaml", d.Name, inert.Quote(bn.dir))
		}
		m.note(at, "")
		return nil
	}
	targets := d.Targets
	if bn.opts.OverrideTargets != nil {
		targets = nil
		for i := range bn.opts.OverrideTargets {
			targets = append(targets, bn.opts.OverrideTargets[i].match())
		}
	}
	custom := make([]fleetmatch.Target, len(bn.opts.TargetCustomizations))
	for i := range bn.opts.TargetCustomizations {
		custom[i] = bn.opts.TargetCustomizations[i].match()
	}
	for _, c := range m.opts.Clusters {
		// The bundle's own options (its fleet.yaml in the repository, which
		// fleet.yaml's reserved labels do not bind) match the live Cluster.
		fc := fleetmatch.Cluster{Name: c.Name, Labels: c.live()}
		if fleetmatch.First(targets, fc, c.Groups) < 0 {
			continue
		}
		opts := bn.opts.deployOptions
		skip := false
		for i, t := range custom {
			if !t.Matches(fc, c.Groups) {
				continue
			}
			tc := &bn.opts.TargetCustomizations[i]
			if tc.DoNotDeploy {
				skip = true
				break
			}
			if bn.opts.TargetCustomizationMode != "AllMatches" {
				opts = bn.opts.deployOptions.merge(tc.deployOptions)
				break
			}
			opts = opts.merge(tc.deployOptions)
		}
		if skip {
			continue
		}
		if d.TargetNamespace != "" {
			opts.TargetNamespace = d.TargetNamespace
		}
		s, err := m.bundleSet(b, d, bn, opts, c)
		if err != nil {
			return err
		}
		if s == nil {
			continue
		}
		s.addUnit(Unit{Cluster: c.Name, Delivery: d.Name, Path: bn.dir})
		m.delivered[c.Name] = append(m.delivered[c.Name], s)
	}
	return nil
}

// bundleSet returns the set bn renders with opts, made once per bundle and
// options; nil (with a note for cluster) when it cannot be rendered.
func (m *Model) bundleSet(b *builder, d Delivery, bn *bundle, opts deployOptions, c FleetCluster) (*Set, error) {
	cluster := c.Name
	if dir, remote, why, ok := chartFolder(bn, opts); ok && why == "" {
		if m.opts.BundleCharts == nil {
			at := note{delivery: d.Name, chain: "bundle " + inert.Quote(bn.dir), file: bn.dir, warn: true}
			at.msg = fmt.Sprintf("delivery %s: bundle %s is a Helm chart, which this model does not render without a chart renderer: what it deploys is not checked", d.Name, inert.Quote(bn.dir))
			m.note(at, cluster)
			return nil, nil
		}
		return m.helmBundleSet(b, d, bn, opts, dir, remote, c)
	}
	ok, _ := json.Marshal(opts)
	key := "bundle\x00" + d.Name + "\x00" + bn.dir + "\x00" + string(ok)
	if s, done := m.sets[key]; done {
		return s, nil
	}
	at := note{delivery: d.Name, chain: "bundle " + inert.Quote(bn.dir), file: bn.dir}
	objs, why, err := renderBundle(b, bn, opts)
	if err != nil {
		var fail *Failure
		var lim *LimitError
		if errors.As(err, &fail) || errors.As(err, &lim) {
			return nil, err
		}
		at.msg = fmt.Sprintf("delivery %s: bundle %s does not render as Fleet's agent renders it: %v", d.Name, inert.Quote(bn.dir), err)
		m.note(at, cluster)
		m.sets[key] = nil
		return nil, nil
	}
	if why != "" {
		at.warn, at.msg = true, fmt.Sprintf("delivery %s: bundle %s %s, which this model does not render: what it deploys is not checked", d.Name, inert.Quote(bn.dir), why)
		m.note(at, cluster)
		m.sets[key] = nil
		return nil, nil
	}
	s := &Set{Path: bn.dir, Origin: bn.dir, Delivery: d.Name, Objects: objs, build: &Build{Path: bn.dir, files: bn.read}}
	m.sets[key] = s
	m.Sets = append(m.Sets, s)
	return s, nil
}
