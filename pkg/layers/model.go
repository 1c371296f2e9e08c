// Package layers builds the one model of what each cluster receives (SPEC
// §5): the closure of
//
//  1. every layer it selects, as Flux's kustomize-controller applies it: the
//     kustomize build of the layer's folder (confined to the fleet's folder,
//     fetching nothing), then post-build substitution with that cluster's
//     variables;
//  2. every Flux Kustomization found in (1) or (2) whose source fleetgen
//     publishes, built the same way with its own spec (closure.go), to a
//     depth of MaxDepth;
//  3. every HelmRelease in (1) or (2), its chart rendered by
//     Options.Charts when one is given;
//  4. for the clusters they target, the bundles of every delivery from the
//     fleet's own source, rendered as Fleet's agent renders them (bundle.go).
//
// Image discovery (pkg/images), the plaintext guard and the
// strict-substitution check (Check), the per-layer decryption (Decrypts),
// diff's per-cluster comparison of objects and targets all read it. The
// public surface is small: Sets and the accessors Received, Closure and
// Delivered, Warnings and Files.
//
// Clusters that receive the same thing share it: a folder is built once per
// spec, and the objects post-build substitution leaves as they are are shared
// by every cluster; clusters whose variables agree on every variable a build
// refers to share one Set. What substitution makes is bounded (Options).
// Once every check has read the objects, Compact lets each object the fast
// way of substitution made hold only its cluster's strings: it is made again
// when read.
//
// The model leaves out the image rewrite of fleetgen's own layer
// Kustomizations (spec.images, the mirror references): diff reports image
// changes per image, and no rewrite can make a Secret of an object. A
// followed Kustomization's own spec.images are modelled.
package layers

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/secrets"
)

// Unit is one cluster's Flux Kustomization of one layer: the layer's folder,
// built and substituted with the cluster's variables. In a Set's Units it is
// also a cluster that receives a followed Kustomization's set through Layer,
// or a delivery's bundle (Delivery set, Layer empty).
type Unit struct {
	Cluster string
	Layer   string
	// Delivery names the delivery of a bundle's unit ("" for a layer's).
	Delivery string
	// Path is the folder, as schema.CleanPath makes it: slash-separated,
	// relative to the root.
	Path string
	// Vars are the Kustomization's spec.postBuild.substitute.
	Vars map[string]string
}

// Build is one folder's kustomize build (with a followed Kustomization's
// spec): the objects before substitution.
type Build struct {
	Path    string
	Objects []*Object
	// Err is why the folder did not build: ErrNoFolder, a file the build
	// may not read, or kustomize's error. Objects is nil then.
	Err error
	// refs are the variables any object that does not opt out refers to,
	// sorted: the values that decide what a cluster receives.
	refs  []string
	ov    *overlay
	ovKey string // ov as a key
	// files are the files the build read (relative to the root, sorted).
	files []string
	// encrypted: an object holds SOPS-encrypted content (Model.Decrypts).
	encrypted bool
}

// Set is what one Kustomization (a layer's own, or one followed from it)
// or one bundle of a delivery applies for the units that receive it: one
// build with the same values of every variable it refers to.
type Set struct {
	Path string
	// Kustomization is the followed Flux Kustomization that applies the set,
	// "namespace/name"; "" for a layer's own set (fleetgen's Kustomization)
	// and for a bundle or a chart.
	Kustomization string
	// Origin is the file the followed Kustomization, or the HelmRelease whose
	// chart this is, was read from; for a bundle, its folder.
	Origin string
	// Release is the HelmRelease ("namespace/name") whose chart Objects are.
	Release string
	// Delivery is the delivery whose bundle this is ("" otherwise).
	Delivery string
	// ChartOCI is, for a bundle whose chart `fleet apply` downloads from an
	// OCI registry, that chart as fleet.lock.yaml keys it (lock.Normalize):
	// mirror copies it like an image.
	ChartOCI string
	// Chain names what leads from the layer to the set, the first way it was
	// reached: "Kustomization apps/sub (apps/sub.yaml)", one entry per
	// Kustomization followed; empty for a layer's own set and a bundle.
	Chain []string
	// Units receive it, in the order New was given them (for a followed
	// set, the units of the layers it is reached from).
	Units []Unit
	// Objects are the objects the units receive, in build order; those
	// substitution leaves as they are are the build's own. Nil when Missing
	// or Err is set: Flux fails the reconcile.
	Objects []*Object
	// Missing are the variables the build requires and the units do not
	// define (Flux substitutes strictly), sorted.
	Missing []string
	// Err is a substitution failure other than a missing variable (a bad
	// substitution, a value that breaks the YAML, an object without
	// apiVersion, kind or name), naming the object.
	Err error

	build *Build
	vars  map[string]string // the first unit's
	// subst is whether post-build substitution runs (a layer's always do).
	subst bool
	// kusts are the Flux Kustomizations and HelmReleases in Objects
	// (Model.founds, closure.go).
	kusts []*found
	found bool
}

// Followed reports whether s is applied by a Kustomization followed from a
// layer, not by the layer's own.
func (s *Set) Followed() bool { return s.Kustomization != "" }

// Model is what every unit of a fleet receives.
type Model struct {
	// Builds are the distinct builds: by path for a layer's, by path and
	// spec for a followed Kustomization's.
	Builds map[string]*Build
	// Sets are the distinct sets received, in the order of their first unit:
	// the layers' own, then the followed Kustomizations', charts' and
	// bundles'.
	Sets []*Set

	byUnit    map[unitKey]*Set
	closure   map[unitKey][]*Set
	delivered map[string][]*Set
	sets      map[string]*Set // by build key and values
	notes     []note
	noted     map[note][]string // the clusters of each note
	files     map[string]bool
	// chartTemplates are the template files of the bundles' Helm charts the
	// model rendered (ChartTemplate).
	chartTemplates map[string]bool

	substituted int64
	memo        map[memoKey]substituted
	decoded     map[*Object]*found  // the Kustomizations and HelmReleases found
	applies     map[appliedKey]*Set // what each followed Kustomization applies (nested.go)
	opts        Options
}

type unitKey struct{ cluster, layer string }

// Bounds of New's work: untrusted input (a pull request, the output folder)
// decides how much a build reads and how much substitution makes, and both
// are held in memory.
const (
	// DefaultMaxRead bounds the bytes the builds of one model read.
	DefaultMaxRead = 512 << 20
	// DefaultMaxSubstituted bounds the bytes of the objects post-build
	// substitution makes for all clusters together.
	DefaultMaxSubstituted = 256 << 20
	// MaxObjectSize bounds one object after substitution, as schema.MaxFileSize
	// bounds a file.
	MaxObjectSize = schema.MaxFileSize
	// MaxDepth bounds how deep Kustomizations nest below a layer's (SPEC §5):
	// a Kustomization found at a depth past it is an input error naming the
	// chain.
	MaxDepth = 8
)

// Options bound New and say what it follows.
type Options struct {
	// MaxRead is DefaultMaxRead when 0.
	MaxRead int64
	// MaxSubstituted is DefaultMaxSubstituted when 0.
	MaxSubstituted int64
	// Source is the source fleetgen publishes (SourceOf): the Flux
	// Kustomizations in what a unit receives that read it are followed. Nil
	// follows none.
	Source *Source
	// Deliveries are the deliveries from the fleet's own source, whose
	// bundles are rendered for each of Clusters they reach (DeliveriesOf).
	Deliveries []Delivery
	Clusters   []FleetCluster
	// Charts renders the chart of each HelmRelease a unit receives; nil
	// renders none, and Warnings names each HelmRelease not rendered.
	Charts ChartRenderer
	// BundleCharts renders the bundles of Deliveries that are Helm charts
	// (BundleChart); nil renders none, and Warnings names each.
	BundleCharts BundleChartRenderer
}

// DefaultOptions returns the options New uses when given none.
func DefaultOptions() Options {
	return Options{MaxRead: DefaultMaxRead, MaxSubstituted: DefaultMaxSubstituted}
}

// ErrNoFolder is a Build's Err when its folder does not exist.
var ErrNoFolder = errNoFolder

// LimitError is New's error when the input makes it read or substitute past
// a bound: an input error whose message names the bound.
type LimitError struct{ msg string }

func (e *LimitError) Error() string { return e.msg }

// New builds every distinct folder of units with kustomize, confined to
// root, substitutes each unit's variables, follows the Kustomizations of
// opts.Source (to MaxDepth) and renders opts.Bundles. A folder that does not
// build is that Build's Err, not New's, and what cannot be followed is a note
// of the model (Check, Warnings); New fails on an I/O failure of the file
// system or a panic in kustomize (*Failure), and on a bound (*LimitError).
// Paths that still hold "${" are skipped (schema.Validate reports them).
// New sets each unit's Vars to nil once it has substituted them.
func New(root string, units []Unit, opts Options) (*Model, error) {
	if opts.MaxRead == 0 {
		opts.MaxRead = DefaultMaxRead
	}
	if opts.MaxSubstituted == 0 {
		opts.MaxSubstituted = DefaultMaxSubstituted
	}
	b, err := newBuilder(root)
	if err != nil {
		return nil, err
	}
	b.guard.budget = opts.MaxRead
	m := &Model{Builds: map[string]*Build{}, byUnit: map[unitKey]*Set{}, closure: map[unitKey][]*Set{},
		delivered: map[string][]*Set{}, sets: map[string]*Set{}, opts: opts}
	var paths []string
	for _, u := range units {
		if _, ok := m.Builds[u.Path]; !ok && !strings.Contains(u.Path, "${") {
			m.Builds[u.Path] = nil
			paths = append(paths, u.Path)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		bd, err := m.newBuild(b, p, p, nil)
		if err != nil {
			return nil, err
		}
		m.Builds[p] = bd
	}
	for i, u := range units {
		// A unit's variables count only here: a large fleet does not hold a
		// map per cluster and layer while it follows.
		units[i].Vars = nil
		bd := m.Builds[u.Path]
		if bd == nil || bd.Err != nil {
			continue
		}
		s, err := m.set(bd, u.Vars, true, nil)
		if err != nil {
			return nil, err
		}
		s.addUnit(Unit{Cluster: u.Cluster, Layer: u.Layer, Path: u.Path})
		k := unitKey{u.Cluster, u.Layer}
		m.byUnit[k] = s
		m.closure[k] = []*Set{s}
	}
	if err := m.follow(b, units); err != nil {
		return nil, err
	}
	if err := m.bundles(b, opts.Deliveries); err != nil {
		return nil, err
	}
	m.files = b.guard.files
	// What only building needed goes: the model lives as long as the
	// command does, beside the render.
	m.memo, m.decoded, m.sets = nil, nil, nil
	for _, s := range m.Sets {
		s.kusts, s.found = nil, false
	}
	return m, nil
}

// newBuild builds folder p with ov (nil for a layer's) under Builds key key.
func (m *Model) newBuild(b *builder, key, p string, ov *overlay) (*Build, error) {
	b.guard.take()
	objs, err := b.build(p, ov)
	files := b.guard.take()
	var fail *Failure
	if errors.As(err, &fail) {
		return nil, fmt.Errorf("folder %s: %w", p, fail.err)
	}
	var lim *LimitError
	if errors.As(err, &lim) {
		return nil, lim
	}
	bd := &Build{Path: p, Objects: objs, Err: err, ov: ov, files: files}
	if ov != nil {
		bd.ovKey = ov.key()
	}
	if err == nil {
		bd.parse()
	}
	m.Builds[key] = bd
	return bd, nil
}

// addUnit adds u to s's units, once per cluster and layer (or delivery) in
// a row.
func (s *Set) addUnit(u Unit) {
	if n := len(s.Units); n > 0 {
		l := s.Units[n-1]
		if l.Cluster == u.Cluster && l.Layer == u.Layer && l.Delivery == u.Delivery {
			return
		}
	}
	s.Units = append(s.Units, u)
}

// set returns the set bd gives with vars (substituted when subst), made
// once per build and values: a new one is substituted and added to Sets.
// meta is the followed Kustomization's commonMetadata (nil for none).
func (m *Model) set(bd *Build, vars map[string]string, subst bool, meta *commonMetadata) (*Set, error) {
	k := bd.key(vars, subst, meta)
	if s := m.sets[k]; s != nil {
		return s, nil
	}
	s := &Set{Path: bd.Path, build: bd, vars: vars, subst: subst}
	if err := m.receive(s, meta); err != nil {
		return nil, err
	}
	if len(s.Missing) == 0 {
		s.vars = nil // Check reads them only to name what is missing
	}
	m.sets[k] = s
	m.Sets = append(m.Sets, s)
	return s, nil
}

// parse prepares every object of b for substitution (buildObject parsed its
// YAML once) and collects the variables they refer to.
func (b *Build) parse() {
	refs := map[string]bool{}
	for _, o := range b.Objects {
		b.encrypted = b.encrypted || secrets.Encrypted(o.Map())
		if !o.optOut {
			for _, r := range o.tp.refs {
				refs[r] = true
			}
		}
	}
	b.refs = keys(refs)
}

// key identifies what a unit with vars receives from b: the build (its path
// and spec), whether it is substituted, the value of every variable b refers
// to (or that it is not set) and the commonMetadata applied.
func (b *Build) key(vars map[string]string, subst bool, meta *commonMetadata) string {
	var k strings.Builder
	k.WriteString(b.Path)
	if b.ov != nil {
		k.WriteString("\x00ov")
		k.WriteString(b.ovKey)
	}
	if meta != nil {
		k.WriteString("\x00cm")
		k.WriteString(meta.k)
	}
	if !subst {
		k.WriteString("\x00nosubst")
		return k.String()
	}
	for _, r := range b.refs {
		v, ok := vars[r]
		if !ok {
			k.WriteString("\x00-")
			continue
		}
		k.WriteString("\x00=")
		k.WriteString(strconv.Itoa(len(v)))
		k.WriteString(":")
		k.WriteString(v)
	}
	// Flux refuses every variable name it cannot substitute, used or not.
	for n := range vars {
		if !schema.IsVarName(n) {
			k.WriteString("\x00!")
			break
		}
	}
	return k.String()
}

// receive substitutes s's variables into its build's objects, then sets
// meta on every object (kustomize-controller's apply sets commonMetadata
// after the build and substitution).
func (m *Model) receive(s *Set, meta *commonMetadata) error {
	b := s.build
	if s.subst {
		missing := map[string]bool{}
		for _, o := range b.Objects {
			if o.optOut {
				continue
			}
			for _, v := range o.tp.missing(s.vars) {
				missing[v] = true
			}
		}
		if len(missing) > 0 {
			s.Missing = keys(missing)
			return nil
		}
	}
	var badVars error
	if s.subst {
		badVars = checkVarNames(s.vars)
	}
	objs := make([]*Object, 0, len(b.Objects))
	for _, o := range b.Objects {
		if !s.subst || o.optOut {
			objs = append(objs, o)
			continue
		}
		if badVars != nil {
			s.Err = fmt.Errorf("%s (%s): post-build substitution fails: %w", o.Origin, o.Describe(), badVars)
			return nil
		}
		n, err := m.substitute(o, s.vars)
		if err != nil {
			var lim *LimitError
			if errors.As(err, &lim) {
				return &LimitError{fmt.Sprintf("%s (folder %s, %s)", lim.msg, s.Path, o.Origin)}
			}
			s.Err = err
			return nil
		}
		objs = append(objs, n)
	}
	if meta != nil {
		for i, o := range objs {
			objs[i] = meta.set(o)
		}
	}
	s.Objects = objs
	return nil
}

// substituted is one object's substitution with some values.
type substituted struct {
	obj *Object
	err error
}

// memoKey identifies what substituting an object's template gives: the
// template and the value of every variable it refers to.
type memoKey struct {
	tp   *template
	vals string
}

// substitute returns o substituted with vars (o itself when substitution
// leaves it as it is), made once per object and values of the variables it
// refers to: clusters that agree on those share the result, whatever else
// their variables say. An error names the object.
func (m *Model) substitute(o *Object, vars map[string]string) (*Object, error) {
	tp := o.tp
	if tp.t == nil && tp.err == nil {
		return o, nil // no '$': Flux decodes it unchanged
	}
	var vals strings.Builder
	for _, r := range tp.refs {
		if v, ok := vars[r]; ok {
			vals.WriteString(strconv.Itoa(len(v)))
			vals.WriteByte(':')
			vals.WriteString(v)
		} else {
			vals.WriteByte('-')
		}
	}
	k := memoKey{tp, vals.String()}
	if r, ok := m.memo[k]; ok {
		return r.obj, r.err
	}
	r := m.substituteNew(o, vars)
	if r.err == nil && r.obj != o {
		m.substituted += int64(tp.size(vars)) // what it can hold, at most
		if m.substituted > m.opts.MaxSubstituted {
			return nil, &LimitError{fmt.Sprintf("post-build substitution makes more than %d MiB of objects for all clusters together: want fewer or smaller substituted objects or values",
				m.opts.MaxSubstituted>>20)}
		}
	}
	if m.memo == nil {
		m.memo = map[memoKey]substituted{}
	}
	m.memo[k] = r
	return r.obj, r.err
}

func (m *Model) substituteNew(o *Object, vars map[string]string) substituted {
	if o.tp.t != nil && o.tp.size(vars) > MaxObjectSize {
		return substituted{err: fmt.Errorf("%s (%s): post-build substitution makes it larger than %d MiB", o.Origin, o.Describe(), MaxObjectSize>>20)}
	}
	refused := func(err error) substituted {
		return substituted{err: fmt.Errorf("%s (%s): %v after post-build substitution, which kustomize-controller refuses", o.Origin, o.Describe(), err)}
	}
	if d, ok := o.tp.fastSubstitute(o.Map(), vars); ok {
		// The fast way shares all of the object but the paths to the
		// cluster's strings, which it can make again (Compact).
		n, err := NewObject(d.value(), o.Origin)
		if err != nil {
			return refused(err)
		}
		n.made = d
		return substituted{obj: n}
	}
	res, err := substituteChecked(o.tp, vars)
	if err != nil {
		return substituted{err: fmt.Errorf("%s (%s): post-build substitution fails: %w", o.Origin, o.Describe(), err)}
	}
	if res == nil {
		return substituted{obj: o}
	}
	// Keep what substitution left as it was the build object's own: clusters
	// then share all of an object but the fields their values changed.
	shared, _ := share(res, o.Map())
	n, err := NewObject(shared.(map[string]any), o.Origin)
	if err != nil {
		return refused(err)
	}
	return substituted{obj: n}
}

// Compact lets go of the values of every object that post-build
// substitution made the fast way: Object.Map makes them again on each call,
// from the build object and the cluster's strings. At 10,000 clusters that
// is a fifth of the model, and a render holds the model beside the tree it
// makes (docs/performance.md). Call it once the readers of every object are
// done and a few remain (a render's, diff's), never beside a reader.
func (m *Model) Compact() {
	for _, s := range m.Sets {
		for _, o := range s.Objects {
			if o.made.s != nil {
				o.value = nil
			}
		}
	}
}

// Received returns the set cluster receives from layer's own Kustomization,
// or nil when the cluster does not select the layer or its folder did not
// build.
func (m *Model) Received(cluster, layer string) *Set {
	return m.byUnit[unitKey{cluster, layer}]
}

// Closure returns every set cluster receives through layer: Received first,
// then the sets of the Kustomizations followed from it and of the charts
// rendered, breadth first (each Kustomization once per cluster). Nil when
// the cluster does not select the layer or its folder did not build.
func (m *Model) Closure(cluster, layer string) []*Set {
	return m.closure[unitKey{cluster, layer}]
}

// Delivered returns the sets cluster receives from the bundles of deliveries
// from the fleet's own source, in spec.deliveries order and, within one,
// by bundle folder.
func (m *Model) Delivered(cluster string) []*Set {
	return m.delivered[cluster]
}

// Files returns every file the model read (the builds, followed
// Kustomizations and bundles), slash-separated, relative to the root,
// sorted: what a publish must copy for Flux and Fleet to build what was
// validated (SPEC §6).
func (m *Model) Files() []string {
	return keys(m.files)
}

// ChartTemplate reports whether p (slash-separated, relative to the root)
// is a template of a bundle's Helm chart that the model rendered for a
// cluster: Go templates, not YAML, whose renders the model checks (a
// Secret's plaintext included) for every cluster that receives them.
func (m *Model) ChartTemplate(p string) bool { return m.chartTemplates[p] }

// FromFleet returns the units of f: every cluster with every layer it
// selects, in spec order, each with its expanded path and variables
// (schema.Layer.Variables).
func FromFleet(f *schema.Fleet) []Unit {
	var out []Unit
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		for _, l := range f.SelectedLayers(c) {
			out = append(out, Unit{Cluster: c.Name, Layer: l.Name, Path: schema.CleanPath(schema.ExpandPath(l.Path, c)), Vars: l.Variables(c)})
		}
	}
	return out
}
