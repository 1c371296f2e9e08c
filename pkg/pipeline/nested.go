package pipeline

import (
	"sort"
	"strconv"
	"strings"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// nestedOf returns generate.Options.Nested for f and m: per cluster and
// layer, the Flux Kustomizations the model followed from the layer's build,
// each with the images its own build names and what it applies in turn,
// computed before Render calls it from its workers. Clusters whose trees
// are equal (names, whether spec.images and spec.patches are set, images, all
// the way down) get the same slice, so that Render makes their patches once. nil when the
// model follows no Kustomization.
func nestedOf(f *schema.Fleet, m *layers.Model, found *images.Result, releases map[nestedKey]nestedReleases) func(cluster, layer string) []generate.Nested {
	followed := false
	for _, s := range m.Sets {
		if s.Followed() {
			followed = true
			break
		}
	}
	if !followed {
		return nil
	}
	t := &nestedTrees{m: m, written: found.Written, releases: releases, kusts: map[*layers.Set][]*layers.Object{}, refs: map[*layers.Set]setRefs{},
		byRefs: map[string][]string{}, memo: map[string][]generate.Nested{}}
	out := map[[2]string][]generate.Nested{}
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		for _, ly := range f.SelectedLayers(c) {
			s := m.Received(c.Name, ly.Name)
			if s == nil {
				continue
			}
			if ns, _ := t.tree(c.Name, s, map[*layers.Set]bool{s: true}); len(ns) > 0 {
				out[[2]string{c.Name, ly.Name}] = ns
			}
		}
	}
	return func(cluster, layer string) []generate.Nested { return out[[2]string{cluster, layer}] }
}

// nestedTrees makes the trees of nestedOf, each distinct one once.
type nestedTrees struct {
	m *layers.Model
	// written is images.Result.Written: the images of each followed set,
	// found before the model was made compact (Model.Compact), so that they
	// are not made again to be read.
	written map[*layers.Set][]string
	// releases are the pinned HelmReleases of each followed set
	// (Loaded.chartPatches).
	releases map[nestedKey]nestedReleases
	kusts    map[*layers.Set][]*layers.Object // a set's Kustomization objects
	refs     map[*layers.Set]setRefs          // a set's images, as written
	byRefs   map[string][]string              // one slice per list of images
	memo     map[string][]generate.Nested     // by key
}

// tree returns the Kustomizations the model followed from s in cluster,
// sorted by namespace and name, and a key that identifies them (what their
// patches are made of, all the way down). path holds the sets above:
// a Kustomization that leads back to one is not followed again.
func (t *nestedTrees) tree(cluster string, s *layers.Set, path map[*layers.Set]bool) ([]generate.Nested, string) {
	var out []generate.Nested
	var key strings.Builder
	for _, o := range t.kustsOf(s) {
		c := t.m.Applies(cluster, o)
		if c == nil || c.Objects == nil || path[c] || len(path) > layers.MaxDepth {
			continue
		}
		path[c] = true
		sub, subKey := t.tree(cluster, c, path)
		delete(path, c)
		imgs, patches := o.Has("spec", "images"), o.Has("spec", "patches")
		refs, refsKey := t.refsOf(c)
		rels := t.releases[nestedKey{cluster, c}]
		// The key is what the patches are made of, not which objects: sets
		// of clusters that differ in what the patches do not read share one.
		key.WriteString(o.Namespace + "\x00" + o.Name + "\x00" + strconv.FormatBool(imgs) + strconv.FormatBool(patches) + "\x00" + refsKey + "\x00" + rels.key + "\x00(" + subKey + ")")
		out = append(out, generate.Nested{Namespace: o.Namespace, Name: o.Name, Images: imgs, Patches: patches, Refs: refs, Nested: sub, HelmReleases: rels.list})
	}
	if len(out) == 0 {
		return nil, ""
	}
	k := key.String()
	if ns, ok := t.memo[k]; ok {
		return ns, k
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	t.memo[k] = out
	return out, k
}

// kustsOf returns the objects of s that may be Flux Kustomizations, once
// per set.
func (t *nestedTrees) kustsOf(s *layers.Set) []*layers.Object {
	if ks, ok := t.kusts[s]; ok {
		return ks
	}
	var ks []*layers.Object
	for _, o := range s.Objects {
		if o.Kind == "Kustomization" && strings.HasPrefix(o.APIVersion, "kustomize.toolkit.fluxcd.io/") {
			ks = append(ks, o)
		}
	}
	t.kusts[s] = ks
	return ks
}

// refsOf returns the container images s's objects name, once per set and
// one slice per list, with the list as a key.
func (t *nestedTrees) refsOf(s *layers.Set) ([]string, string) {
	if r, ok := t.refs[s]; ok {
		return r.refs, r.key
	}
	r, ok := t.written[s]
	if !ok && s.Objects != nil {
		// Every followed set of the model with objects is in written:
		// this one is not the model's.
		r = images.Written(s.Objects)
	}
	k := strings.Join(r, "\x00")
	if same, ok := t.byRefs[k]; ok {
		r = same
	} else {
		t.byRefs[k] = r
	}
	t.refs[s] = setRefs{r, k}
	return r, k
}

type setRefs struct {
	refs []string
	key  string
}
