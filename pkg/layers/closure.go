package layers

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/secrets"
)

// The closure (SPEC §5 item 2): every Flux Kustomization in what a unit
// receives whose source fleetgen publishes is built and applied as
// kustomize-controller v1.9.5 reconciles it
// (internal/controller/kustomization_controller.go, reconcile):
//
//  1. the source artifact's root is the fleet's folder, and spec.path is
//     joined to it with securejoin.SecureJoin: "..", "/" and symlinks stay
//     inside it (cleanPath); a path that does not exist fails the reconcile;
//  2. generate: fluxcd/pkg/kustomize's Generator writes the folder's
//     kustomization with the spec's targetNamespace, namePrefix, nameSuffix,
//     patches, components, images and buildMetadata (kustomizationFor);
//  3. build: a confined kustomize build (build.go); for each object, SOPS
//     decryption (fleetgen holds no key: encrypted objects stay encrypted)
//     and then, when spec.postBuild is set, post-build substitution with the
//     variables of spec.postBuild.substituteFrom (ConfigMaps and Secrets of
//     the Kustomization's namespace, in order, each key's value without
//     newlines) overridden by spec.postBuild.substitute, run only when there
//     is a variable or spec.postBuild.substituteStrategy is Always
//     (fluxcd/pkg/kustomize SubstituteVariables, strict since Flux 2.9);
//  4. apply: spec.commonMetadata's labels and annotations are set on every
//     object (ssautil.SetCommonMetadata), then server-side apply.
//
// The ConfigMaps and Secrets a substituteFrom names are looked up in what
// the cluster receives (every layer's closure), as Flux finds them in the
// cluster once applied. One that is not there (made in the cluster by other
// means) and not optional, or a Secret that is SOPS-encrypted (fleetgen holds
// no key: the values are unknown), stops the model from following that
// Kustomization: a warning says so (Warnings), never silence. So does a
// Kustomization whose source is not one fleetgen publishes.

// Source is the source fleetgen publishes (spec.source), which the Flux
// Kustomizations in what a cluster receives may read.
type Source struct {
	// Kind is the source object's kind: GitRepository (spec.source.kind git)
	// or OCIRepository (oci).
	Kind string
	// Namespace and Name are those of the source object every cluster's Flux
	// has: flux-system/flux-system with bootstrap flux, flux-system/<fleet
	// name> with bootstrap none (pkg/generate writes it).
	Namespace, Name string
	// URL and Ref are spec.source.url and ref: a source object in what the
	// cluster receives of the same repository (schema.SameRepo) and ref reads
	// the same content, and counts too.
	URL, Ref string
}

const (
	fluxNamespace      = "flux-system"
	gitRepositoryKind  = "GitRepository"
	ociRepositoryKind  = "OCIRepository"
	kustomizationKind  = "Kustomization"
	helmReleaseKind    = "HelmRelease"
	kustomizeFluxGroup = "kustomize.toolkit.fluxcd.io"
	helmFluxGroup      = "helm.toolkit.fluxcd.io"
	sourceFluxGroup    = "source.toolkit.fluxcd.io"
)

// SourceOf returns the source f publishes (f loaded and defaulted).
func SourceOf(f *schema.Fleet) *Source {
	s := &Source{Kind: gitRepositoryKind, Namespace: fluxNamespace, Name: fluxNamespace, URL: f.Spec.Source.URL, Ref: f.Spec.Source.Ref}
	if f.Spec.Source.Kind == schema.SourceOCI {
		s.Kind = ociRepositoryKind
	}
	if f.Spec.Source.Bootstrap == schema.BootstrapNone {
		s.Name = f.Metadata.Name
	}
	return s
}

// fluxKustomization is what the model reads of a Flux Kustomization
// (kustomize.toolkit.fluxcd.io/v1 field names; TestKustomizationDecodesStrictly
// holds them to the upstream type).
type fluxKustomization struct {
	Spec kustomizationSpec `json:"spec"`
}

type kustomizationSpec struct {
	overlay
	Path           string          `json:"path,omitempty"`
	SourceRef      sourceRef       `json:"sourceRef"`
	CommonMetadata *commonMetadata `json:"commonMetadata,omitempty"`
	PostBuild      *postBuild      `json:"postBuild,omitempty"`
}

type sourceRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
}

type postBuild struct {
	Substitute         map[string]string `json:"substitute,omitempty"`
	SubstituteFrom     []substituteRef   `json:"substituteFrom,omitempty"`
	SubstituteStrategy string            `json:"substituteStrategy,omitempty"`
}

type substituteRef struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Optional bool   `json:"optional,omitempty"`
}

// commonMetadata is a Kustomization's spec.commonMetadata.
type commonMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	k           string            // as a key (founds sets it)
}

// set returns o with c's labels and annotations set, as
// ssautil.SetCommonMetadata does; o itself is shared and not changed.
func (c *commonMetadata) set(o *Object) *Object {
	if len(c.Labels) == 0 && len(c.Annotations) == 0 {
		return o
	}
	m := maps.Clone(o.Map())
	md, _ := m["metadata"].(map[string]any)
	md = maps.Clone(md)
	if md == nil {
		md = map[string]any{}
	}
	for field, add := range map[string]map[string]string{"labels": c.Labels, "annotations": c.Annotations} {
		if len(add) == 0 {
			continue
		}
		cur, _ := md[field].(map[string]any)
		cur = maps.Clone(cur)
		if cur == nil {
			cur = map[string]any{}
		}
		for k, v := range add {
			cur[k] = v
		}
		md[field] = cur
	}
	m["metadata"] = md
	n := *o
	n.value, n.made, n.tp = m, made{}, nil
	return &n
}

func (ov *overlay) key() string {
	b, _ := json.Marshal(ov)
	return string(b)
}

// found is a Flux Kustomization or HelmRelease in a set's objects.
type found struct {
	obj *Object
	k   *fluxKustomization // nil for a HelmRelease
	err error              // the Kustomization does not decode
	// path is the Kustomization's folder, key its Builds key, link how a
	// chain names it.
	path, key, link string
}

// founds returns the Flux Kustomizations and HelmReleases in s's objects,
// found once per set and decoded once per object (sets share objects).
func (m *Model) founds(s *Set) []*found {
	if s.found {
		return s.kusts
	}
	s.found = true
	for _, o := range s.Objects {
		if f, ok := m.decoded[o]; ok {
			if f != nil {
				s.kusts = append(s.kusts, f)
			}
			continue
		}
		var f *found
		switch {
		case o.Kind == kustomizationKind && group(o.APIVersion) == kustomizeFluxGroup:
			f = &found{obj: o, k: &fluxKustomization{}}
			b, err := json.Marshal(o.Map())
			if err == nil {
				err = json.Unmarshal(b, f.k)
			}
			f.err = err
			if err == nil {
				spec := &f.k.Spec
				f.path = cleanPath(spec.Path)
				f.key = f.path + "\x00" + spec.overlay.key()
				f.link = "Kustomization " + qualifiedName(o) + " (" + inert.Quote(o.Origin) + ")"
				if cm := spec.CommonMetadata; cm != nil {
					b, _ := json.Marshal(cm)
					cm.k = string(b)
				}
			}
		case o.IsHelmRelease():
			f = &found{obj: o}
		}
		if m.decoded == nil {
			m.decoded = map[*Object]*found{}
		}
		m.decoded[o] = f
		if f != nil {
			s.kusts = append(s.kusts, f)
		}
	}
	return s.kusts
}

func group(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// cleanPath is where securejoin.SecureJoin puts spec.path below the
// source's root: every ".." stops at the root. Symlinks are the confined
// file system's to resolve.
func cleanPath(p string) string {
	return schema.CleanPath(path.Clean("/" + strings.ReplaceAll(p, `\`, "/")))
}

// walk is one cluster's closure being followed.
type walk struct {
	m       *Model
	b       *builder
	cluster string
	seen    map[*Object]bool
	// index holds what the cluster receives by kind, namespace and name,
	// made when a substituteFrom or a source object is looked up; it holds
	// the objects of sets[:indexed].
	index   map[string]*Object
	sets    []*Set
	indexed int
	// in are the sets of the closure, by layer: a set is received once.
	in map[setLayer]bool
}

type setLayer struct {
	s     *Set
	layer string
}

// item is a set of a cluster's closure to look into, reached through layer
// at depth (0: the layer's own) by chain.
type item struct {
	set   *Set
	layer string
	depth int
	chain []string
}

// waiting is a Kustomization whose variables or source wait for an object
// of the closure.
type waiting struct {
	it item
	f  *found
}

// follow adds to every unit's closure the Kustomizations it leads to and
// the charts of its HelmReleases, cluster by cluster, breadth first.
func (m *Model) follow(b *builder, units []Unit) error {
	if m.opts.Source == nil && m.opts.Charts == nil {
		return nil
	}
	var clusters []string
	layersOf := map[string][]string{}
	for _, u := range units {
		if _, ok := layersOf[u.Cluster]; !ok {
			clusters = append(clusters, u.Cluster)
		}
		layersOf[u.Cluster] = append(layersOf[u.Cluster], u.Layer)
	}
	for _, c := range clusters {
		w := &walk{m: m, b: b, cluster: c, seen: map[*Object]bool{}}
		var queue []item
		var deferred []waiting
		for _, l := range layersOf[c] {
			if s := m.byUnit[unitKey{c, l}]; s != nil {
				queue = append(queue, item{set: s, layer: l})
				w.sets = append(w.sets, s)
				if w.in == nil {
					w.in = map[setLayer]bool{}
				}
				w.in[setLayer{s, l}] = true
			}
		}
		for len(queue) > 0 || len(deferred) > 0 {
			if len(queue) == 0 {
				// What waits for an object of the closure is tried again with
				// everything found so far; when none of it moves, it is
				// followed as far as it can be (final).
				final := true
				for _, d := range deferred {
					if !w.lacks(d) {
						final = false
						break
					}
				}
				retry := deferred
				deferred = nil
				for _, d := range retry {
					next, wait, err := w.visit(d.it, d.f, final)
					if err != nil {
						return err
					}
					if wait {
						deferred = append(deferred, d)
					}
					queue = append(queue, next...)
				}
				continue
			}
			it := queue[0]
			queue = queue[1:]
			for _, f := range m.founds(it.set) {
				if w.seen[f.obj] {
					continue // applied once in the cluster
				}
				w.seen[f.obj] = true
				next, wait, err := w.visit(it, f, false)
				if err != nil {
					return err
				}
				if wait {
					deferred = append(deferred, waiting{it, f})
				}
				queue = append(queue, next...)
			}
		}
	}
	return nil
}

// lacks reports whether d still waits with everything found so far.
func (w *walk) lacks(d waiting) bool {
	_, wait := w.inputs(d.f, false)
	return wait
}

// visit follows f, found in it.set: a Kustomization's set, or a
// HelmRelease's chart, joins the cluster's closure and is returned to look
// into. wait is set when f needs an object of the closure not found yet (and
// final is false); with final, what is still missing is a warning.
func (w *walk) visit(it item, f *found, final bool) (next []item, wait bool, err error) {
	m, o := w.m, f.obj
	at := note{layer: it.layer, chain: strings.Join(it.chain, " → "), file: o.Origin}
	name := qualifiedName(o)
	if f.k == nil {
		return w.chart(it, f)
	}
	if f.err != nil {
		at.msg = fmt.Sprintf("Flux Kustomization %s does not decode as kustomize.toolkit.fluxcd.io/v1 (the API server refuses it): want the fields of its spec as the CRD has them", name)
		m.note(at, w.cluster)
		return nil, false, nil
	}
	chain := append(it.chain[:len(it.chain):len(it.chain)], f.link)
	if it.depth+1 > MaxDepth {
		at.msg = fmt.Sprintf("Flux Kustomizations nest deeper than %d below the layer (%s): want at most %d Kustomizations in a chain", MaxDepth, strings.Join(chain, " → "), MaxDepth)
		m.note(at, w.cluster)
		return nil, false, nil
	}
	in, wait := w.inputs(f, final)
	if wait {
		return nil, true, nil
	}
	if in.warn != "" {
		at.warn, at.msg = true, fmt.Sprintf("Flux Kustomization %s %s: fleetgen does not follow it, so what it applies is not checked", name, in.warn)
		m.note(at, w.cluster)
		return nil, false, nil
	}
	spec := &f.k.Spec
	p := f.path
	bd, ok := m.Builds[f.key]
	if !ok {
		if bd, err = m.newBuild(w.b, f.key, p, &spec.overlay); err != nil {
			return nil, false, err
		}
	}
	if bd.Err != nil {
		at.msg = fmt.Sprintf("Flux Kustomization %s: folder %s does not build with kustomize: %v", name, inert.Quote(p), bd.Err)
		if bd.Err == errNoFolder {
			at.msg = fmt.Sprintf("Flux Kustomization %s: folder %s does not exist in the fleet's source, and kustomize-controller fails the reconcile: want spec.path a folder inside the folder of fleet.yaml", name, inert.Quote(p))
		}
		m.note(at, w.cluster)
		return nil, false, nil
	}
	subst := spec.PostBuild != nil && (len(in.vars) > 0 || spec.PostBuild.SubstituteStrategy == "Always")
	s, err := m.set(bd, in.vars, subst, spec.CommonMetadata)
	if err != nil {
		return nil, false, err
	}
	if s.Kustomization == "" {
		s.Kustomization, s.Origin, s.Chain = qualified(o.Namespace, o.Name), o.Origin, chain
	}
	m.applied(w.cluster, o, s)
	if !w.add(it.layer, s) {
		return nil, false, nil // applied already: the same objects again
	}
	return []item{{set: s, layer: it.layer, depth: it.depth + 1, chain: chain}}, false, nil
}

// add adds s to the cluster's closure through layer, once; false when it is
// there already.
func (w *walk) add(layer string, s *Set) bool {
	if w.in == nil {
		w.in = map[setLayer]bool{}
	}
	if w.in[setLayer{s, layer}] {
		return false
	}
	w.in[setLayer{s, layer}] = true
	m := w.m
	k := unitKey{w.cluster, layer}
	m.closure[k] = append(m.closure[k], s)
	s.addUnit(Unit{Cluster: w.cluster, Layer: layer, Path: s.Path})
	w.sets = append(w.sets, s)
	return true
}

// inputs are what following a Kustomization takes from the closure: its
// post-build variables, or why it cannot be followed (warn).
type inputs struct {
	vars map[string]string
	warn string
}

// inputs returns f's variables when its source is fleetgen's and every
// object its substituteFrom names is known; wait when one is not found yet
// and final is false.
func (w *walk) inputs(f *found, final bool) (in inputs, wait bool) {
	spec, ns := &f.k.Spec, f.obj.Namespace
	src := spec.SourceRef
	srcNS := src.Namespace
	if srcNS == "" {
		srcNS = ns
	}
	if why, wait := w.ours(src, srcNS, final); wait {
		return in, true
	} else if why != "" {
		return inputs{warn: why}, false
	}
	if spec.PostBuild == nil {
		return in, false
	}
	in.vars = map[string]string{}
	for _, r := range spec.PostBuild.SubstituteFrom {
		o := w.lookup(r.Kind, ns, r.Name)
		switch {
		case o == nil && r.Optional:
			continue
		case o == nil && !final:
			return in, true
		case o == nil:
			return inputs{warn: fmt.Sprintf("takes its variables from %s %s, which is not in what the cluster receives (made in the cluster by other means?): fleetgen cannot know their values", inert.Quote(r.Kind), inert.Quote(qualified(ns, r.Name)))}, false
		}
		om := o.Map()
		switch r.Kind {
		case "ConfigMap":
			data, _ := om["data"].(map[string]any)
			for k, v := range data {
				if s, ok := v.(string); ok {
					in.vars[k] = strings.ReplaceAll(s, "\n", "")
				}
			}
		case "Secret":
			if secrets.Encrypted(om) {
				return inputs{warn: fmt.Sprintf("takes its variables from Secret %s, which is SOPS-encrypted (fleetgen holds no key, so their values are unknown)", inert.Quote(qualified(ns, r.Name)))}, false
			}
			data, _ := om["data"].(map[string]any)
			for k, v := range data {
				if s, ok := v.(string); ok {
					if b, err := base64.StdEncoding.DecodeString(s); err == nil {
						in.vars[k] = strings.ReplaceAll(string(b), "\n", "")
					}
				}
			}
			// The API server merges stringData into data.
			sd, _ := om["stringData"].(map[string]any)
			for k, v := range sd {
				if s, ok := v.(string); ok {
					in.vars[k] = strings.ReplaceAll(s, "\n", "")
				}
			}
		}
	}
	for k, v := range spec.PostBuild.Substitute {
		in.vars[k] = strings.ReplaceAll(v, "\n", "")
	}
	return in, false
}

// ours says why the source src (in namespace ns) is not one fleetgen
// publishes ("" when it is), or wait for a source object of the closure not
// found yet.
func (w *walk) ours(src sourceRef, ns string, final bool) (why string, wait bool) {
	s := w.m.opts.Source
	desc := inert.Quote(src.Kind) + " " + inert.Quote(qualified(ns, src.Name))
	if s == nil {
		return "reads " + desc + ", and this model follows no source", false
	}
	if src.Kind == s.Kind && src.Name == s.Name && (ns == s.Namespace || ns == "") {
		return "", false
	}
	if src.Kind != gitRepositoryKind && src.Kind != ociRepositoryKind || src.Kind != s.Kind {
		return "reads " + desc + ", which is not the source fleetgen publishes (" + s.Kind + " " + s.Namespace + "/" + s.Name + ")", false
	}
	o := w.lookup(src.Kind, ns, src.Name)
	if o == nil {
		if !final {
			return "", true
		}
		return "reads " + desc + ", which is neither the source fleetgen publishes (" + s.Kind + " " + s.Namespace + "/" + s.Name + ") nor an object in what the cluster receives", false
	}
	spec, _ := o.Map()["spec"].(map[string]any)
	url, _ := spec["url"].(string)
	ref, _ := spec["ref"].(map[string]any)
	if group(o.APIVersion) == sourceFluxGroup && sameSource(s, url, ref) {
		return "", false
	}
	return "reads " + desc + ", which does not read the fleet's own repository (spec.source.url) at spec.source.ref", false
}

// sameSource reports whether a source object with url and spec.ref reads
// what s publishes: the same repository and, for Git, the branch s.Ref (a
// GitRepository without a ref follows master), for OCI the tag s.Ref.
func sameSource(s *Source, url string, ref map[string]any) bool {
	if s.Kind == ociRepositoryKind {
		tag, _ := ref["tag"].(string)
		if tag == "" && len(ref) == 0 {
			tag = "latest"
		}
		return len(ref) <= 1 && tag == s.Ref && strings.EqualFold(strings.TrimSuffix(url, "/"), strings.TrimSuffix(s.URL, "/"))
	}
	branch, _ := ref["branch"].(string)
	if len(ref) == 0 {
		branch = "master"
	}
	return len(ref) == 1 && branch == s.Ref && schema.SameRepo(url, s.URL)
}

// lookup returns the object of kind, namespace and name the cluster
// receives (so far), nil when there is none.
func (w *walk) lookup(kind, ns, name string) *Object {
	if w.index == nil {
		w.index = map[string]*Object{}
	}
	for ; w.indexed < len(w.sets); w.indexed++ {
		for _, o := range w.sets[w.indexed].Objects {
			k := o.Kind + "\x00" + o.Namespace + "\x00" + o.Name
			if _, ok := w.index[k]; !ok {
				w.index[k] = o
			}
		}
	}
	return w.index[kind+"\x00"+ns+"\x00"+name]
}

// qualifiedName is o's namespace/name (name alone without a namespace),
// quoted when it is not a plain token (inert.Quote): a layer writes it.
func qualifiedName(o *Object) string { return inert.Quote(qualified(o.Namespace, o.Name)) }

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
