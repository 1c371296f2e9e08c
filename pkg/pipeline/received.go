package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/review"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/tree"
)

// pinned is one spec.images rewrite of an old Kustomization: the name the
// layer writes and the mirror reference pinned by digest it became.
type pinned struct{ name, ref string }

// receivedChanges compares what each cluster receives through its layers
// now (ld.Model's closure: each layer's set, the Kustomizations it leads to
// and the charts of its HelmReleases) with what it received when DIR was
// published (SPEC §7): the
// layer Kustomizations of DIR's render (had: DIR's fleetgen files) built from
// the layer folders DIR holds, as a checkout of the published tree does.
// When DIR holds none of those folders (a previous render, not a checkout),
// it returns nil: there is nothing to compare with.
//
// DIR is untrusted: its folders are built as the fleet's are (confined to
// DIR, fetching nothing, bounded: layers.Options); a bound is an input error.
// A folder of DIR that does not build counts as one whose cluster received
// nothing.
//
// It also returns the tags the old images were pinned from, by mirror
// reference pinned by digest (review.Options.Tags), read from what DIR's
// layers wrote: the lock no longer holds an image a change replaced; and
// DIR's model with its units (nil when DIR holds no layer folder), which
// the ApplicationSet preview of the old tree reads.
func receivedChanges(cfg RenderOptions, ld *Loaded, had map[string][]byte) (map[string][]review.Object, map[string]string, *oldModel, error) {
	if onlyTree(cfg.OutDir) {
		return nil, nil, nil, nil // a render: no layer folder to read its layers from
	}
	f := ld.Fleet
	src := schema.CleanPath(f.Spec.Source.Path)
	var units []layers.Unit
	rewrites := map[[2]string][]pinned{}
	for p, data := range had {
		lp := layout.Parse(p)
		k, ok := review.ReadLayer(lp, data)
		if !ok || lp.Cluster == f.Spec.Manager.Name {
			continue // not a layer of fleetgen's
		}
		rel := schema.CleanPath(k.Path)
		if src != "." {
			if rel, ok = strings.CutPrefix(rel, src+"/"); !ok {
				continue // outside the folder DIR is a checkout of
			}
		}
		u := layers.Unit{Cluster: lp.Cluster, Layer: lp.Name, Path: rel, Vars: k.Substitute}
		units = append(units, u)
		for _, img := range k.Images {
			if img.Name != "" && img.NewName != "" && img.Digest != "" {
				rewrites[[2]string{u.Cluster, u.Layer}] = append(rewrites[[2]string{u.Cluster, u.Layer}], pinned{img.Name, img.NewName + "@" + img.Digest})
			}
		}
	}
	sort.Slice(units, func(i, j int) bool {
		if units[i].Cluster != units[j].Cluster {
			return units[i].Cluster < units[j].Cluster
		}
		return units[i].Layer < units[j].Layer
	})
	bundles := holdsBundles(cfg.OutDir, ld.layerOpts.Deliveries)
	if !holdsAny(cfg.OutDir, units) && !bundles {
		return nil, nil, nil, nil
	}
	opts := layers.DefaultOptions()
	if src == "." {
		// DIR is the source root: the Kustomizations its layers lead to
		// read it too (SPEC §5's closure).
		opts.Source = layers.SourceOf(f)
	}
	// DIR's HelmReleases render from the charts this lock pins (a chart it
	// no longer pins is not rendered).
	prev := ld.charts.previous()
	opts.Charts, opts.BundleCharts = prev.render, prev.renderBundle
	if bundles {
		// DIR's bundles of the fleet's own-repo deliveries, delivered as the
		// deliveries deliver now: a change of a delivery's reach is the
		// report's deliveries field, a change of a bundle's content here.
		opts.Deliveries, opts.Clusters = ld.layerOpts.Deliveries, ld.layerOpts.Clusters
	}
	old, err := layers.New(cfg.OutDir, units, opts)
	var lim *layers.LimitError
	if errors.As(err, &lim) {
		return nil, nil, nil, problem.Invalid(errors.New("diff: the layer folders of " + cfg.OutDir + ": " + lim.Error()))
	}
	if err != nil {
		return nil, nil, nil, err
	}
	tags := map[string]string{}
	seenSet := map[*layers.Set]map[string]string{}
	for _, u := range units {
		rw := rewrites[[2]string{u.Cluster, u.Layer}]
		s := old.Received(u.Cluster, u.Layer)
		if len(rw) == 0 || s == nil {
			continue
		}
		byName, ok := seenSet[s]
		if !ok {
			byName = map[string]string{}
			for _, ref := range images.Written(s.Objects) {
				if name, tag := splitTag(ref); tag != "" {
					byName[name] = tag
				}
			}
			seenSet[s] = byName
		}
		for _, p := range rw {
			if tag, ok := byName[p.name]; ok {
				tags[p.ref] = tag
			}
		}
	}

	memo := map[string][]review.Object{}
	out := map[string][]review.Object{}
	seen := map[[2]string]bool{}
	compare := func(cluster, layer string) {
		k := [2]string{cluster, layer}
		if seen[k] {
			return
		}
		seen[k] = true
		was, is := old.Closure(cluster, layer), ld.Model.Closure(cluster, layer)
		key := closureKey(was) + "|" + closureKey(is)
		changes, ok := memo[key]
		if !ok {
			changes = compareSets(was, is)
			memo[key] = changes
		}
		for _, c := range changes {
			c.Layer = layer
			out[cluster] = append(out[cluster], c)
		}
	}
	for _, u := range units {
		compare(u.Cluster, u.Layer)
	}
	for _, u := range ld.units {
		compare(u.Cluster, u.Layer)
	}
	if bundles {
		for _, c := range ld.layerOpts.Clusters {
			for _, d := range ld.layerOpts.Deliveries {
				was, is := deliveredBy(old.Delivered(c.Name), d.Name), deliveredBy(ld.Model.Delivered(c.Name), d.Name)
				key := "d|" + closureKey(was) + "|" + closureKey(is)
				changes, ok := memo[key]
				if !ok {
					changes = compareSets(was, is)
					memo[key] = changes
				}
				for _, ch := range changes {
					ch.Delivery = d.Name
					out[c.Name] = append(out[c.Name], ch)
				}
			}
		}
	}
	return out, tags, &oldModel{model: old, units: units}, nil
}

// oldModel is DIR's model of what each cluster received, and its units.
type oldModel struct {
	model *layers.Model
	units []layers.Unit
}

// splitTag splits an image reference as written into its name and tag ("" when
// it has none): "nginx:1.25" → nginx, 1.25; "host:5000/app@sha256:…" → the
// name and "".
func splitTag(ref string) (name, tag string) {
	ref, _, _ = strings.Cut(ref, "@")
	i := strings.LastIndexByte(ref, ':')
	if i < 0 || strings.Contains(ref[i+1:], "/") {
		return ref, ""
	}
	return ref[:i], ref[i+1:]
}

// onlyTree reports whether dir holds nothing but what a render writes at its
// top: the folders of the tree (layout.Top, tree.MetaDir) and the file
// .sops.yaml (layout.SOPSConfig, with spec.encryption). Then no layer folder
// is there, since none may lie inside the tree (schema's output rules), and
// receivedChanges need not read every layer file of DIR to find that out.
// Only dir's names are listed; nothing is followed.
func onlyTree(dir string) bool {
	es, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range es {
		switch n := e.Name(); {
		case n == tree.MetaDir || slices.Contains(layout.Top, n):
		case n == string(layout.SOPSConfig) && e.Type().IsRegular():
		default:
			return false
		}
	}
	return true
}

// deliveredBy returns the sets of delivery d among sets.
func deliveredBy(sets []*layers.Set, d string) []*layers.Set {
	var out []*layers.Set
	for _, s := range sets {
		if s.Delivery == d {
			out = append(out, s)
		}
	}
	return out
}

// holdsBundles reports whether folder dir holds the top folder of any
// bundle path or base of ds (the fleet's own-repo deliveries), as a checkout
// of the published tree does. Only names are looked up; nothing is followed.
func holdsBundles(dir string, ds []layers.Delivery) bool {
	var tops []string
	for _, d := range ds {
		for _, p := range d.Paths {
			tops = append(tops, p)
		}
		for _, b := range d.Bundles {
			tops = append(tops, b.Base)
		}
	}
	for _, p := range tops {
		top, _, _ := strings.Cut(strings.TrimLeft(schema.CleanPath(p), "/"), "/")
		if top == "" || top == "." || strings.ContainsAny(top, "*?[\\") || !filepath.IsLocal(top) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(dir, top)); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// holdsAny reports whether folder dir holds the folder of any unit.
func holdsAny(dir string, units []layers.Unit) bool {
	for _, u := range units {
		if strings.Contains(u.Path, "${") || !filepath.IsLocal(filepath.FromSlash(u.Path)) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(u.Path))); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// closureKey identifies the sets of a closure (layers.Model.Closure): equal
// closures of two clusters compare once.
func closureKey(sets []*layers.Set) string {
	var b strings.Builder
	for _, s := range sets {
		fmt.Fprintf(&b, "%p,", s)
	}
	return b.String()
}

// compareSets returns the objects added, removed or changed from the
// closure old to the closure new (a layer's set and the sets it leads to;
// nil sets, or sets Flux fails, receive nothing), by kind, namespace and
// name, a changed one with the fields that moved (review.FieldChanges);
// Layer is left for the caller.
func compareSets(old, new []*layers.Set) []review.Object {
	if slices.Equal(old, new) {
		return nil
	}
	was, is := objectsOf(old), objectsOf(new)
	var out []review.Object
	for k, n := range is {
		o, ok := was[k]
		switch {
		case !ok:
			out = append(out, objectChange(n, review.Added))
		case o != n && o.Digest() != n.Digest():
			c := objectChange(n, review.Update)
			c.Changes, c.MoreChanges = review.FieldChanges(n.Kind, o.Map(), n.Map())
			out = append(out, c)
		}
	}
	for k, o := range was {
		if _, ok := is[k]; !ok {
			out = append(out, objectChange(o, review.Removed))
		}
	}
	review.SortObjects(out)
	return out
}

func objectsOf(sets []*layers.Set) map[string]*layers.Object {
	out := map[string]*layers.Object{}
	for _, s := range sets {
		for _, o := range s.Objects {
			if _, ok := out[o.Key()]; !ok {
				out[o.Key()] = o
			}
		}
	}
	return out
}

func objectChange(o *layers.Object, change string) review.Object {
	return review.Object{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Change: change}
}
