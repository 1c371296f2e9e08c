// Package generate turns a validated Fleet and its lock into the output tree.
// It is pure: no file system, clock, randomness, environment or network.
package generate

import (
	"fmt"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Options tunes Render.
type Options struct {
	// LayerImages maps each layer path, as expanded for a cluster and cleaned
	// (slash-separated, relative to the source root, no leading "./"), to the
	// image references its kustomize build uses, exactly as written there.
	// Render gives every Kustomization of that path spec.images entries that
	// rewrite each of them to its locked mirror by digest. nil: no rewriting.
	LayerImages map[string][]string
	// LayerDecryption reports whether what cluster receives from layer holds
	// SOPS-encrypted content (layers.Model.Decrypts): only then, and when
	// spec.encryption is set, does its Kustomization get decryption (SPEC
	// §3); the manager's entry point always does. nil: no layer does.
	LayerDecryption func(cluster, layer string) bool
	// HelmReleases returns the HelmReleases what cluster receives from
	// layer applies, each with its chart source on the mirror and the images
	// its chart renders pinned (SPEC §3): the layer's Kustomization patches
	// them. nil: no HelmRelease is patched.
	HelmReleases func(cluster, layer string) []HelmRelease
	// Nested returns the Flux Kustomizations what cluster receives from
	// layer applies and the model follows, with the images each build names
	// (SPEC §3): the layer's Kustomization patches them to pin those images
	// (nested.go). Clusters that receive the same ones should get the same
	// slice: its patches are made once. nil: none is patched.
	Nested func(cluster, layer string) []Nested
	// Workers is how many clusters are rendered at once; 0 means GOMAXPROCS.
	// The output does not depend on it.
	Workers int
}

// DefaultOptions returns the options Render uses when given no others.
func DefaultOptions() Options { return Options{} }

// Render returns the whole output tree for f (loaded, defaulted and validated)
// and l, sorted by Path. Every mode agent cluster whose clientID is auto must
// already have a client ID in l (lock.AssignClientIDs). Input problems (an image
// a layer uses that l lacks, …) are problem.Errors or *problem.InvalidError.
//
// The tree is SPEC §3's; every path is built by package layout.
func Render(f *schema.Fleet, l *lock.Lock, opts Options) ([]layout.File, error) {
	if l == nil {
		l = lock.New()
	}
	r, err := newRenderer(f, l, opts)
	if err != nil {
		return nil, err
	}
	return r.render()
}

// renderer holds what every cluster shares, computed once.
type renderer struct {
	f    *schema.Fleet
	l    *lock.Lock
	opts Options

	sourceRef     sourceRef // what every Kustomization reads
	sourceDoc     []byte    // clusters/<name>/source.yaml (bootstrap none), the same for every cluster
	decrypt       *decryption
	agentImage    *agentImage                 // the fleet-agent image pinned to the mirror
	agentImageErr *problem.FieldError         // why agentImage is nil; reported once, when an agent cluster needs it
	layerIndex    map[string]int              // layer name → index in spec.layers
	images        map[string]*layerPathImages // cleaned layer path → spec.images
	// hosted are, per cluster of the fleet that runs a manager, the files
	// of its Flux folder that register clusters with it (registrations).
	hosted map[string][]string

	encodeMu  sync.Mutex
	encodeErr error    // the first object that could not be encoded
	patches   sync.Map // *HelmRelease (a list's first) → its Kustomization patches

	nestedMemo sync.Map // *Nested (a list's first) → its *nestedPatches (nested.go)

	shardOnce sync.Once
	declared  map[string]bool // spec.shards.fleet (shards.go)
}

// layerPathImages is what one cleaned layer path's images rewrite to.
type layerPathImages struct {
	entries []kustomizeImage
	missing []string // images as written that the lock lacks, sorted
	clash   []string // names that would need two different rewrites, sorted
}

func newRenderer(f *schema.Fleet, l *lock.Lock, opts Options) (*renderer, error) {
	r := &renderer{f: f, l: l, opts: opts, layerIndex: map[string]int{}}
	for i, ly := range f.Spec.Layers {
		r.layerIndex[ly.Name] = i
	}
	r.sourceDoc = r.sourceObject()
	if s := f.Spec.Encryption; s != nil && s.SOPS != nil {
		r.decrypt = &decryption{Provider: "sops", SecretRef: &localObjectRef{Name: s.SOPS.SecretRef}}
	}
	r.agentImage, r.agentImageErr = r.fleetAgentImage()
	r.images = r.layerImages()
	return r, nil
}

func (r *renderer) render() ([]layout.File, error) {
	f := r.f
	// Clusters in name order: the output does not depend on input order.
	order := make([]int, len(f.Spec.Clusters))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		return f.Spec.Clusters[order[a]].Name < f.Spec.Clusters[order[b]].Name
	})

	registrations, hosted := r.registrations()
	r.hosted = hosted
	results := make([]clusterResult, len(order))
	workers := r.opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Chunks of clusters, at most workers at once; each result lands at its
	// cluster's position, so the output does not depend on scheduling.
	const chunk = 64
	var g errgroup.Group
	g.SetLimit(workers)
	for start := 0; start < len(order); start += chunk {
		g.Go(func() error {
			for k := start; k < min(start+chunk, len(order)); k++ {
				results[k] = r.cluster(order[k])
			}
			return nil
		})
	}
	_ = g.Wait() // the chunks return no error: each cluster's problems are in its result

	var files []layout.File
	n := 16
	for _, res := range results {
		n += len(res.files)
	}
	files = make([]layout.File, 0, n)
	var errs problem.Errors
	var managerRes []string
	for _, res := range results {
		files = append(files, res.files...)
		errs = append(errs, res.errs...)
	}
	errs = append(errs, r.layerErrors(results)...)
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, dedupe(errs)
	}

	files = append(files, r.managerFiles()...)
	files = append(files, registrations...)
	for _, fl := range files {
		if rel, ok := strings.CutPrefix(fl.Path, layout.ManagerDir+"/"); ok {
			managerRes = append(managerRes, rel)
		}
	}
	files = append(files, r.file(layout.ManagerKustomization.Path(), r.kustomizeFile(managerRes), false))
	if r.encodeErr != nil {
		return nil, r.encodeErr
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	// Validate rejects what would collide (duplicate cluster or group names,
	// a cluster named like the manager); this keeps an unvalidated Fleet
	// from silently losing files.
	for i := 1; i < len(files); i++ {
		if files[i].Path == files[i-1].Path {
			return nil, problem.Invalid(fmt.Errorf("two objects render to %s: cluster, group and manager names must be unique", files[i].Path))
		}
	}
	return files, nil
}

// clusterResult is what one cluster contributes.
type clusterResult struct {
	files []layout.File
	errs  problem.Errors
	// uses records (layer index, cleaned path) pairs for image errors.
	uses []layerUse
}

type layerUse struct {
	layer int
	path  string
}

// cluster renders everything that belongs to spec.clusters[i].
func (r *renderer) cluster(i int) clusterResult {
	f := r.f
	c := &f.Spec.Clusters[i]
	var res clusterResult
	if mode, ok := modes[c.Registration.Mode]; ok {
		files, err := mode.render(r, i, c)
		res.files = append(res.files, files...)
		if err != nil {
			res.errs = append(res.errs, err)
		}
	} else {
		// Validate reports an unknown mode; Render takes a validated Fleet.
		res.errs = append(res.errs, r.f.At(problem.Required(fmt.Sprintf("spec.clusters[%d].registration.mode", i), "no such registration mode (Render takes a validated Fleet)")))
	}

	// The cluster's own Flux entry point.
	var resources []string
	if r.ownSource() {
		src := layout.ClusterSource.Path(c.Name)
		resources = append(resources, path.Base(src))
		res.files = append(res.files, layout.File{Path: src, Data: r.sourceDoc})
	}
	for _, ly := range f.SelectedLayers(c) {
		li := r.layerIndex[ly.Name]
		expanded := schema.ExpandPath(ly.Path, c)
		key := schema.CleanPath(expanded)
		k := r.layerKustomization(ly, c, key)
		if img := r.images[key]; img != nil {
			k.Spec.Images = img.entries
			if len(img.missing) > 0 || len(img.clash) > 0 {
				res.uses = append(res.uses, layerUse{layer: li, path: key})
			}
		}
		if r.opts.HelmReleases != nil {
			if rels := r.opts.HelmReleases(c.Name, ly.Name); len(rels) > 0 {
				k.Spec.Patches = r.helmPatches(rels)
			}
		}
		if r.opts.Nested != nil {
			if ns := r.opts.Nested(c.Name, ly.Name); len(ns) > 0 {
				np := r.nested(ns)
				if n := len(k.Spec.Patches); n > 0 && len(np.patches) > 0 {
					// A copy: the HelmReleases' list is shared by clusters.
					k.Spec.Patches = append(k.Spec.Patches[:n:n], np.patches...)
					sortPatches(k.Spec.Patches)
				} else if n == 0 {
					k.Spec.Patches = np.patches
				}
				for _, msg := range np.problems {
					res.errs = append(res.errs, r.f.At(problem.Other(fmt.Sprintf("spec.layers[%d]", li), "layer %s: %s", ly.Name, msg)))
				}
			}
		}
		p := layout.Layer.Path(c.Name, ly.Name)
		res.files = append(res.files, r.file(p, k, false))
		resources = append(resources, path.Base(p))
	}
	if r.ownSource() {
		resources = append(resources, r.hosted[c.Name]...) // read-only here: the clusters render at once
		res.files = append(res.files, r.file(layout.ClusterKustomization.Path(c.Name), r.kustomizeFile(resources), false))
	}
	return res
}

// ownSource reports whether fleetgen writes each cluster's Flux source and
// kustomization.yaml (bootstrap none). With bootstrap flux it writes neither:
// Flux generates a kustomization.yaml for clusters/<name>/ that takes in
// every file, flux-system/ included, whereas one listing only fleetgen's
// files would make Flux's own Kustomization prune Flux.
func (r *renderer) ownSource() bool {
	return r.f.Spec.Source.Bootstrap == schema.BootstrapNone
}

// layerKustomization is the Flux Kustomization of layer ly for cluster c.
func (r *renderer) layerKustomization(ly *schema.Layer, c *schema.Cluster, key string) *kustomization {
	subst := ly.Variables(c)
	k := &kustomization{
		APIVersion: kustomizeAPIVersion, Kind: "Kustomization",
		Metadata: objectMeta{Name: ly.Name, Namespace: fluxNamespace},
		Spec: kustomizationSpec{
			Interval:  ly.Interval,
			Path:      "./" + key,
			Prune:     ly.Prune == nil || *ly.Prune,
			Wait:      ly.Wait,
			Timeout:   ly.Timeout,
			SourceRef: r.sourceRef,
			PostBuild: &postBuild{Substitute: subst},
		},
	}
	if r.opts.LayerDecryption != nil && r.opts.LayerDecryption(c.Name, ly.Name) {
		k.Spec.Decryption = r.decrypt
	}
	if key == "." {
		k.Spec.Path = "./"
	}
	for _, d := range ly.DependsOn {
		k.Spec.DependsOn = append(k.Spec.DependsOn, dependency{Name: d})
	}
	return k
}

// managerFiles renders what the management cluster applies besides the
// per-cluster Fleet objects: namespaces, groups, the Verrazzano admin
// ConfigMap and its own Flux entry point.
func (r *renderer) managerFiles() []layout.File {
	f := r.f
	var files []layout.File
	// Declare each namespace the fleet's modes put objects in (groups go in
	// the Fleet workspace, as does everything when nothing else would), and
	// render what a mode needs once.
	set := map[string]bool{}
	if len(f.Spec.Groups) > 0 {
		set[f.Spec.Manager.Namespace] = true
	}
	used := map[string]bool{}
	for i := range f.Spec.Clusters {
		if m := f.Spec.Clusters[i].ModeOf(); m != nil {
			set[m.Namespace(f)] = true
			used[m.Name] = true
		}
	}
	if len(set) == 0 {
		set[f.Spec.Manager.Namespace] = true
	}
	for i := range schema.Registrars {
		reg := &schema.Registrars[i]
		if ns := reg.Namespace; reg.Used(f) && reg.OnManager(f) && len(reg.Clusters(f)) > 0 && ns(&f.Spec) != "" {
			set[ns(&f.Spec)] = true // Argo CD's, Sveltos's: the registrations need it
		}
	}
	namespaces := make([]string, 0, len(set))
	for ns := range set {
		namespaces = append(namespaces, ns)
	}
	for name, m := range modes {
		if used[name] && m.shared != nil {
			files = append(files, m.shared(r)...)
		}
	}
	sort.Strings(namespaces)
	var ns []byte
	ns = append(ns, layout.Header...)
	for i, name := range namespaces {
		if i > 0 {
			ns = append(ns, "---\n"...)
		}
		ns = r.encode(ns, &namespace{
			APIVersion: "v1", Kind: "Namespace",
			Metadata: objectMeta{Name: name, Annotations: map[string]string{pruneAnnotation: pruneDisabled}},
		})
	}
	files = append(files, layout.File{Path: layout.Namespaces.Path(), Data: ns})

	groups := f.FleetGroups()
	for i, g := range f.Spec.Groups {
		files = append(files, r.file(layout.FleetGroup.Path(g.Name), &clusterGroup{
			APIVersion: fleetAPIVersion, Kind: "ClusterGroup",
			Metadata: objectMeta{Name: g.Name, Namespace: f.Spec.Manager.Namespace, Labels: r.groupLabels(groups[i])},
			Spec:     clusterGroupSpec{Selector: labelSelector{MatchLabels: g.Selector}},
		}, false))
	}

	files = append(files, r.deliveries()...)

	entry, src := layout.ManagerEntry.Path(f.Spec.Manager.Name), layout.ClusterSource.Path(f.Spec.Manager.Name)
	files = append(files,
		r.file(entry, &kustomization{
			APIVersion: kustomizeAPIVersion, Kind: "Kustomization",
			Metadata: objectMeta{Name: managerEntryName, Namespace: fluxNamespace},
			Spec: kustomizationSpec{
				Interval:   "10m",
				Path:       "./" + schema.CleanPath(path.Join(f.Spec.Source.Path, layout.ManagerDir)),
				Prune:      true,
				SourceRef:  r.sourceRef,
				Decryption: r.decrypt,
			},
		}, false),
	)
	if r.ownSource() {
		files = append(files,
			layout.File{Path: src, Data: r.sourceDoc},
			r.file(layout.ClusterKustomization.Path(f.Spec.Manager.Name), r.kustomizeFile([]string{path.Base(entry), path.Base(src)}), false),
		)
	}
	return files
}

// sourceObject sets the source every Kustomization reads and, for bootstrap
// none, renders it: the same clusters/<name>/source.yaml for every cluster.
// With bootstrap flux the source is the one bootstrap made, flux-system
// (`flux bootstrap` and a FluxInstance sync both name it so), and nil is
// returned.
func (r *renderer) sourceObject() []byte {
	s := r.f.Spec.Source
	kind := "GitRepository"
	if s.Kind == schema.SourceOCI {
		kind = "OCIRepository"
	}
	if !r.ownSource() {
		r.sourceRef = sourceRef{Kind: kind, Name: fluxSystem, Namespace: fluxNamespace}
		return nil
	}
	r.sourceRef = sourceRef{Kind: kind, Name: r.f.Metadata.Name}
	meta := objectMeta{Name: r.f.Metadata.Name, Namespace: fluxNamespace}
	var secretRef *localObjectRef
	if s.SecretRef != "" {
		secretRef = &localObjectRef{Name: s.SecretRef}
	}
	var obj any
	if s.Kind == schema.SourceOCI {
		obj = &ociRepository{
			APIVersion: sourceAPIVersion, Kind: kind, Metadata: meta,
			Spec: ociRepositorySpec{Interval: s.Interval, URL: s.URL, Ref: ociRef{Tag: s.Ref}, SecretRef: secretRef, Insecure: s.Insecure},
		}
	} else {
		obj = &gitRepository{
			APIVersion: sourceAPIVersion, Kind: kind, Metadata: meta,
			Spec: gitRepositorySpec{Interval: s.Interval, URL: s.URL, Ref: gitRef{Branch: s.Ref}, SecretRef: secretRef},
		}
	}
	return r.encode([]byte(layout.Header), obj)
}

func (r *renderer) kustomizeFile(resources []string) *kustomizeFile {
	sort.Strings(resources)
	return &kustomizeFile{APIVersion: kustomizeConfigAPI, Kind: "Kustomization", Resources: resources}
}

// scratch holds encoding buffers, so that each File gets an exactly sized
// copy and no growth garbage.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// file encodes obj under Header.
func (r *renderer) file(p string, obj any, secret bool) layout.File {
	bp := scratch.Get().(*[]byte)
	buf := append((*bp)[:0], layout.Header...)
	buf = r.encode(buf, obj)
	data := make([]byte, len(buf))
	copy(data, buf)
	*bp = buf
	scratch.Put(bp)
	return layout.File{Path: p, Data: data, Secret: secret}
}

// encode is encode that records the first failure for render to return:
// the objects are fleetgen's own types, so one is a programming error.
func (r *renderer) encode(buf []byte, obj any) []byte {
	out, err := encode(buf, obj)
	if err != nil {
		r.failed(err)
	}
	return out
}

// failed records err, the first for render to return.
func (r *renderer) failed(err error) {
	r.encodeMu.Lock()
	if r.encodeErr == nil {
		r.encodeErr = fmt.Errorf("render: %w", err)
	}
	r.encodeMu.Unlock()
}

// sortErrors orders errors by field path (document order for equal
// prefixes, spec.clusters[10] after spec.clusters[9]) and message.
func sortErrors(errs problem.Errors) {
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := pathKey(errs[i].Path), pathKey(errs[j].Path)
		if a != b {
			return a < b
		}
		return errs[i].Msg < errs[j].Msg
	})
}

// pathKey zero-pads indexes so that string order is document order.
func pathKey(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '[' {
			j := strings.IndexByte(p[i:], ']')
			if j > 0 {
				fmt.Fprintf(&b, "[%010s]", p[i+1:i+j])
				i += j
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

func dedupe(errs problem.Errors) problem.Errors {
	out := errs[:0]
	for i, e := range errs {
		if i > 0 && e.Path == errs[i-1].Path && e.Msg == errs[i-1].Msg {
			continue
		}
		out = append(out, e)
	}
	return out
}
