package layers

import (
	"fmt"
	"strings"
)

// ChartRenderer renders the chart of a HelmRelease a cluster receives (SPEC
// §5 item 3) for Options.Charts; pkg/charts implements it. release is the
// HelmRelease as cluster receives it (post-build substitution done);
// received is every other object the model has found cluster receiving so
// far (every layer's own set, then the closure breadth first), where its
// valuesFrom ConfigMaps and Secrets and its chart's source (HelmRepository,
// OCIRepository, HelmChart) are found.
// It returns the chart's objects (made with NewObject, Origin the template),
// or nil objects and a nil error when it does not render this release
// (Warnings names the release then); an error is an input problem (Check
// reports it, naming the layer, the HelmRelease and the clusters, so it must
// not quote values). It is called once per cluster and HelmRelease; a
// renderer that memoizes (charts.Memo) returns the same []*Object for equal
// inputs, and the model then shares one Set among those clusters.
type ChartRenderer func(cluster string, release *Object, received []*Object) ([]*Object, error)

// chart adds the chart of the HelmRelease f to the cluster's closure, or a
// warning when there is no renderer or it does not render it.
func (w *walk) chart(it item, f *found) ([]item, bool, error) {
	m, o := w.m, f.obj
	at := note{layer: it.layer, chain: strings.Join(it.chain, " → "), file: o.Origin}
	name := qualifiedName(o)
	if m.opts.Charts == nil {
		at.warn, at.msg = true, fmt.Sprintf("HelmRelease %s: its chart is not rendered, so what it installs is not checked", name)
		m.note(at, w.cluster)
		return nil, false, nil
	}
	var received []*Object
	for _, s := range w.sets {
		for _, r := range s.Objects {
			if r != o {
				received = append(received, r)
			}
		}
	}
	objs, err := m.opts.Charts(w.cluster, o, received)
	if err != nil {
		at.msg = fmt.Sprintf("HelmRelease %s: %v", name, err)
		m.note(at, w.cluster)
		return nil, false, nil
	}
	if objs == nil {
		at.warn, at.msg = true, fmt.Sprintf("HelmRelease %s: its chart is not rendered, so what it installs is not checked", name)
		m.note(at, w.cluster)
		return nil, false, nil
	}
	key := fmt.Sprintf("chart\x00%p\x00%d", o, len(objs))
	if len(objs) > 0 {
		key = fmt.Sprintf("chart\x00%p\x00%p\x00%d", o, objs[0], len(objs))
	}
	s := m.sets[key]
	if s == nil {
		s = &Set{Path: it.set.Path, Origin: o.Origin, Release: name, Objects: objs, Chain: it.chain}
		m.sets[key] = s
		m.Sets = append(m.Sets, s)
	}
	w.add(it.layer, s)
	return nil, false, nil
}
