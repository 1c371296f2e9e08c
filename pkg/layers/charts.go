package layers

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// ChartRenderer renders the chart of a HelmRelease a cluster receives (SPEC
// §5 item 3) for Options.Charts; the pipeline implements it with pkg/charts.
// release is the HelmRelease as cluster receives it (post-build substitution
// done); received is every other object cluster receives through the same
// layer, in build order, where its valuesFrom ConfigMaps and Secrets and its
// chart's source (HelmRepository, OCIRepository) are found. It returns the
// chart's objects (made with NewObject, Origin the chart's template), or nil
// objects and a nil error when it does not render this release (Warnings
// names the release then); an error is an input problem (Check reports it,
// naming the layer, the HelmRelease and the clusters, so it must not quote
// values). It is called once per cluster and HelmRelease; a renderer that
// memoizes (charts.Memo) returns the same []*Object for equal inputs, and the
// model then shares one Set among those clusters.
type ChartRenderer func(cluster string, release *Object, received []*Object) ([]*Object, error)

// NewObject makes an Object of m, the object as plain JSON values (a chart
// renderer's output), from origin. m is kept, not copied: the caller must not
// change it afterwards. It fails when m lacks apiVersion, kind or
// metadata.name, which no applier takes.
func NewObject(m map[string]any, origin string) (*Object, error) {
	o := &Object{Origin: origin, Map: m}
	o.APIVersion, _ = m["apiVersion"].(string)
	o.Kind, _ = m["kind"].(string)
	if md, ok := m["metadata"].(map[string]any); ok {
		o.Namespace, _ = md["namespace"].(string)
		o.Name, _ = md["name"].(string)
	}
	if o.APIVersion == "" || o.Kind == "" || o.Name == "" {
		return nil, errors.New("an object without apiVersion, kind or metadata.name")
	}
	return o, nil
}

// IsHelmRelease reports whether o is a Flux HelmRelease.
func (o *Object) IsHelmRelease() bool {
	return o.Kind == "HelmRelease" && strings.HasPrefix(o.APIVersion, "helm.toolkit.fluxcd.io/")
}

// chartNote is what the model says about one HelmRelease of a layer: an
// input problem (Check) or, with warn, what it could not check (Warnings).
type chartNote struct {
	layer, file, release string
	warn                 bool
	msg                  string
}

// charts renders the chart of every HelmRelease each unit receives from its
// layer (Options.Charts) and adds the chart's Set to the unit's closure.
func (m *Model) charts(units []Unit) {
	r := m.opts.Charts
	if r == nil {
		return
	}
	type setKey struct {
		release *Object
		first   *Object
		n       int
	}
	sets := map[setKey]*Set{}
	for _, u := range units {
		k := unitKey{u.Cluster, u.Layer}
		s := m.byUnit[k]
		if s == nil || s.Objects == nil {
			continue
		}
		for i, o := range s.Objects {
			if !o.IsHelmRelease() {
				continue
			}
			received := make([]*Object, 0, len(s.Objects)-1)
			received = append(append(received, s.Objects[:i]...), s.Objects[i+1:]...)
			name := qualifiedName(o)
			objs, err := r(u.Cluster, o, received)
			switch {
			case err != nil:
				m.note(chartNote{layer: u.Layer, file: o.Origin, release: name, msg: err.Error()}, u.Cluster)
				continue
			case objs == nil:
				m.note(chartNote{layer: u.Layer, file: o.Origin, release: name, warn: true, msg: "its chart is not rendered, so what it installs is not checked"}, u.Cluster)
				continue
			}
			sk := setKey{release: o, n: len(objs)}
			if len(objs) > 0 {
				sk.first = objs[0]
			}
			cs := sets[sk]
			if cs == nil {
				cs = &Set{Path: s.Path, Origin: o.Origin, Release: name, Objects: objs}
				sets[sk] = cs
				m.Sets = append(m.Sets, cs)
			}
			cs.Units = append(cs.Units, Unit{Cluster: u.Cluster, Layer: u.Layer, Path: u.Path})
			if len(m.closure[k]) == 0 {
				m.closure[k] = []*Set{s}
			}
			m.closure[k] = append(m.closure[k], cs)
		}
	}
}

// note records n for cluster, once per cluster.
func (m *Model) note(n chartNote, cluster string) {
	if m.noted == nil {
		m.noted = map[chartNote][]string{}
	}
	cs, ok := m.noted[n]
	if !ok {
		m.notes = append(m.notes, n)
	}
	if len(cs) == 0 || cs[len(cs)-1] != cluster {
		m.noted[n] = append(cs, cluster)
	}
}

// Closure returns every Set cluster receives through layer: the layer's own
// (Received), then the charts of its HelmReleases, in build order; nil when
// the cluster does not select the layer or its folder did not build.
func (m *Model) Closure(cluster, layer string) []*Set {
	k := unitKey{cluster, layer}
	if s := m.byUnit[k]; s != nil && len(m.closure[k]) == 0 {
		return []*Set{s}
	}
	return m.closure[k]
}

// Chart reports whether s is a chart's: the objects a HelmRelease's chart
// renders (Release names it).
func (s *Set) Chart() bool { return s.Release != "" }

// chartErrors are the HelmReleases whose chart did not render, located at
// the layer in f, naming the file, the HelmRelease and the clusters.
func (m *Model) chartErrors(f *schema.Fleet, warn bool) problem.Errors {
	idx := layerIndex(f)
	var errs problem.Errors
	for _, n := range m.notes {
		if n.warn != warn {
			continue
		}
		errs = append(errs, f.At(problem.Other(fmt.Sprintf("spec.layers[%d]", idx[n.layer]), "layer %s: %s: HelmRelease %s: %s (%s)",
			n.layer, inert.Quote(n.file), inert.Quote(n.release), n.msg, problem.Clusters(m.noted[n], ""))))
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

// Warnings returns what the model could not check, located at the layer it
// comes through (SPEC §5: never silence): a HelmRelease whose chart is not
// rendered, naming it and the clusters.
func (m *Model) Warnings(f *schema.Fleet) problem.Errors { return m.chartErrors(f, true) }

// qualifiedName is namespace/name, or name when the object has no namespace.
func qualifiedName(o *Object) string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}
