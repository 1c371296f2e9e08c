// Package layers builds the one model of what each cluster receives from its
// layers, as Flux's kustomize-controller applies it: the kustomize build of
// the layer's folder (confined to the fleet's folder, fetching nothing, as
// kustomize-controller builds it), then Flux's post-build substitution with
// that cluster's variables; and the chart of every HelmRelease in it, as
// Options.Charts renders it (charts.go). Image discovery (pkg/images), the
// plaintext guard and the strict-substitution check (Check), the per-layer
// decryption (Decrypts) and diff's per-cluster comparison of objects all read
// it.
//
// Clusters that receive the same thing share it: a folder is built once, and
// the objects post-build substitution leaves as they are are shared by every
// cluster; clusters whose variables agree on every variable a build refers to
// share one Set. What substitution makes is bounded (Options).
//
// The model leaves out the image rewrite of the Kustomization's spec.images
// (fleetgen's mirror references): diff reports image changes per image, and
// no rewrite can make a Secret of an object.
package layers

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// Unit is one cluster's Flux Kustomization of one layer: the layer's folder,
// built and substituted with the cluster's variables.
type Unit struct {
	Cluster string
	Layer   string
	// Path is the folder, as schema.CleanPath makes it: slash-separated,
	// relative to the root.
	Path string
	// Vars are the Kustomization's spec.postBuild.substitute.
	Vars map[string]string
}

// Build is one folder's kustomize build: the objects before substitution.
type Build struct {
	Path    string
	Objects []*Object
	// Err is why the folder did not build: ErrNoFolder, a file the build
	// may not read, or kustomize's error. Objects is nil then.
	Err error
	// refs are the variables any object that does not opt out refers to,
	// sorted: the values that decide what a cluster receives.
	refs []string
}

// Set is what one or more units receive: one build with the same values of
// every variable it refers to.
type Set struct {
	Path string
	// Origin is the file the HelmRelease whose chart this is was read from
	// ("" for a layer's own set).
	Origin string
	// Release is the HelmRelease ("namespace/name") whose chart Objects are;
	// "" for a layer's own set.
	Release string
	// Units receive it, in the order New was given them.
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
}

// Model is what every unit of a fleet receives.
type Model struct {
	// Builds are the distinct folders, by path.
	Builds map[string]*Build
	// Sets are the distinct sets received, in the order of their first unit.
	Sets []*Set

	byUnit      map[unitKey]*Set
	closure     map[unitKey][]*Set
	notes       []chartNote
	noted       map[chartNote][]string // the clusters of each note
	substituted int64
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
)

// Options bound New.
type Options struct {
	// MaxRead is DefaultMaxRead when 0.
	MaxRead int64
	// MaxSubstituted is DefaultMaxSubstituted when 0.
	MaxSubstituted int64
	// Charts renders the chart of each HelmRelease a unit receives; nil
	// renders none.
	Charts ChartRenderer
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
// root, and substitutes each unit's variables. A folder that does not build
// is that Build's Err, not New's; New fails on an I/O failure of the file
// system or a panic in kustomize (*Failure), and on a bound (*LimitError).
// Paths that still hold "${" are skipped (schema.Validate reports them).
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
	m := &Model{Builds: map[string]*Build{}, byUnit: map[unitKey]*Set{}, closure: map[unitKey][]*Set{}, opts: opts}
	var paths []string
	for _, u := range units {
		if _, ok := m.Builds[u.Path]; !ok && !strings.Contains(u.Path, "${") {
			m.Builds[u.Path] = nil
			paths = append(paths, u.Path)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		objs, err := b.build(p)
		var fail *Failure
		if errors.As(err, &fail) {
			return nil, fmt.Errorf("folder %s: %w", p, fail.err)
		}
		var lim *LimitError
		if errors.As(err, &lim) {
			return nil, lim
		}
		bd := &Build{Path: p, Objects: objs, Err: err}
		if err == nil {
			if err := bd.parse(); err != nil {
				return nil, err
			}
		}
		m.Builds[p] = bd
	}
	sets := map[string]*Set{}
	for _, u := range units {
		bd := m.Builds[u.Path]
		if bd == nil || bd.Err != nil {
			continue
		}
		k := bd.key(u.Vars)
		s := sets[k]
		if s == nil {
			s = &Set{Path: u.Path, build: bd, vars: u.Vars}
			if err := m.receive(s); err != nil {
				return nil, err
			}
			sets[k] = s
			m.Sets = append(m.Sets, s)
		}
		s.Units = append(s.Units, Unit{Cluster: u.Cluster, Layer: u.Layer, Path: u.Path})
		m.byUnit[unitKey{u.Cluster, u.Layer}] = s
	}
	m.charts(units)
	return m, nil
}

// parse prepares every object of b for substitution: its YAML, as Flux
// substitutes it, parsed once.
func (b *Build) parse() error {
	refs := map[string]bool{}
	for _, o := range b.Objects {
		text, err := o.res.AsYAML()
		if err != nil {
			return fmt.Errorf("folder %s: %s: %w", b.Path, o.Describe(), err)
		}
		o.tp, o.optOut = newTemplate(string(text)), optsOut(o.res)
		if !o.optOut {
			for _, r := range o.tp.refs {
				refs[r] = true
			}
		}
	}
	b.refs = keys(refs)
	return nil
}

// key identifies what a unit with vars receives from b: its path and the
// value of every variable b refers to (or that it is not set).
func (b *Build) key(vars map[string]string) string {
	var k strings.Builder
	k.WriteString(b.Path)
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
		if !varNameRE.MatchString(n) {
			k.WriteString("\x00!")
			break
		}
	}
	return k.String()
}

// receive substitutes s's variables into its build's objects.
func (m *Model) receive(s *Set) error {
	b := s.build
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
	objs := make([]*Object, 0, len(b.Objects))
	for _, o := range b.Objects {
		if !o.optOut && o.tp.t != nil && o.tp.size(s.vars) > MaxObjectSize {
			s.Err = fmt.Errorf("%s (%s): post-build substitution makes it larger than %d MiB", o.Origin, o.Describe(), MaxObjectSize>>20)
			return nil
		}
		res, err := substitute(o.res, o.tp, o.optOut, s.vars)
		if err != nil {
			s.Err = fmt.Errorf("%s (%s): post-build substitution fails: %w", o.Origin, o.Describe(), err)
			return nil
		}
		if res == nil {
			objs = append(objs, o)
			continue
		}
		n, err := newObject(res, o.Origin)
		if err != nil {
			s.Err = fmt.Errorf("%s (%s): post-build substitution fails: %w", o.Origin, o.Describe(), err)
			return nil
		}
		m.substituted += int64(o.tp.size(s.vars)) // what it can hold, at most
		if m.substituted > m.opts.MaxSubstituted {
			return &LimitError{fmt.Sprintf("post-build substitution makes more than %d MiB of objects for all clusters together (layer folder %s, %s): want fewer or smaller substituted objects or values",
				m.opts.MaxSubstituted>>20, s.Path, o.Origin)}
		}
		objs = append(objs, n)
	}
	for _, o := range objs {
		if o.APIVersion == "" || o.Kind == "" || o.Name == "" {
			s.Err = fmt.Errorf("%s (%s): an object without apiVersion, kind or metadata.name, which kustomize-controller refuses", o.Origin, o.Describe())
			return nil
		}
	}
	s.Objects = objs
	return nil
}

// Received returns the set cluster receives from layer, or nil when the
// cluster does not select the layer or its folder did not build.
func (m *Model) Received(cluster, layer string) *Set {
	return m.byUnit[unitKey{cluster, layer}]
}

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
