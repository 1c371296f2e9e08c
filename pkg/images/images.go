// Package images finds every image a fleet needs: spec.images plus every
// image in what its clusters receive from their layers (the model of
// pkg/layers: each layer's build with each cluster's post-build
// substitution).
package images

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/charts"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/workload"
)

// Use is one image (or oci:// chart) the fleet needs.
type Use struct {
	// Ref is the normalised reference (lock.Normalize); the lock's key.
	Ref string
	// Why lists who asked for it, sorted: "spec.images[0]",
	// "layer infrastructure (infrastructure/prod)".
	Why []string
	// Fields are the fields of fleet.yaml that ask for it, in document
	// order: spec.images[0], spec.layers[2].path.
	Fields []string
	// Sources are the objects of layer builds that ask for it, sorted by
	// file and field, each once: where a message about the image points in
	// the layer's files.
	Sources []Source
}

// Source is where an object a layer's build makes asks for an image.
type Source struct {
	// File is the file the object came from (layers.Object.Origin):
	// slash-separated, relative to the folder of fleet.yaml.
	File string
	// Field is the image's field in the object, as review.FieldChanges
	// writes paths: spec.template.spec.containers[name=app].image.
	Field string
	// Object names the object and container without quoting a value:
	// "Deployment shop/web containers app".
	Object string
	// Written is the reference as the object holds it, after post-build
	// substitution (not normalised).
	Written string
}

// Result is what Discover found.
type Result struct {
	// Images is deduplicated by Ref and sorted by it.
	Images []Use
	// LayerImages is generate.Options.LayerImages: each expanded layer path to
	// the references its build uses, as written, sorted and deduplicated.
	// Container images only: chart references are mirrored, but Flux's
	// spec.images cannot rewrite them.
	LayerImages map[string][]string
	// Written is Written of the objects of each set a followed
	// Kustomization applies (Set.Followed; nil: none), as Discover found
	// them, one slice per list: the render reads it to pin their images,
	// once the model made their objects compact.
	Written map[*layers.Set][]string
}

// Refs returns the normalised references of r.Images, sorted.
func (r *Result) Refs() []string {
	out := make([]string, len(r.Images))
	for i, u := range r.Images {
		out[i] = u.Ref
	}
	return out
}

// Discover collects the images of f's spec.images and of what each cluster
// receives from its layers (m, built from f by layers.Load): images of pod
// templates of every workload kind (containers, initContainers,
// ephemeralContainers; CronJob included) and HelmRelease / OCIRepository
// chart references, after post-build substitution.
//
// Problems are problem.Errors located at the layer concerned in fleet.yaml: an
// invalid image (naming the object, never the value); the Result of every
// other image comes with them. Sets that Flux would fail (a missing
// variable, a failed substitution: layers.Model.Check reports them) give no
// images.
func Discover(f *schema.Fleet, m *layers.Model) (*Result, error) {
	why := map[string]map[string]bool{}
	fields := map[string]map[int]string{} // ref → document order → field
	sources := map[string]map[Source]bool{}
	var errs problem.Errors
	// Clusters' sets name the same references over and over: each is
	// normalised once.
	type normal struct {
		n   string
		err error
	}
	normals := map[string]normal{}
	normalize := func(ref string) (string, error) {
		r, ok := normals[ref]
		if !ok {
			r.n, r.err = lock.Normalize(ref)
			normals[ref] = r
		}
		return r.n, r.err
	}
	add := func(ref, who string, order int, field string) bool {
		n, err := normalize(ref)
		if err != nil {
			return false
		}
		if why[n] == nil {
			why[n], fields[n] = map[string]bool{}, map[int]string{}
		}
		why[n][who] = true
		fields[n][order] = field
		return true
	}
	for i, ref := range f.Spec.Images {
		p := fmt.Sprintf("spec.images[%d]", i)
		if !add(ref, p, i, p) {
			errs = append(errs, f.At(problem.InvalidValue(p, "invalid image reference: want [HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST]")))
		}
	}
	layerIdx := make(map[string]int, len(f.Spec.Layers))
	for i, l := range f.Spec.Layers {
		layerIdx[l.Name] = i
	}
	res := &Result{LayerImages: map[string][]string{}, Written: map[*layers.Set][]string{}}
	written := map[string][]string{}
	byList := map[string][]string{} // one slice per list of Written
	reported := map[string]bool{}
	for _, s := range m.Sets {
		if s.Objects == nil {
			continue
		}
		// The layers (or deliveries, for a bundle) that receive this set, in
		// spec order; errors go to the first.
		owners := ownersOf(f, s, layerIdx)
		first := owners[0]
		var names []string
		for _, o := range owners {
			names = append(names, o.name)
		}
		kind := "layer"
		if s.Delivery != "" {
			kind = "delivery"
		}
		what := fmt.Sprintf("%s %s: folder %s", kind, strings.Join(names, ", "), s.Path)
		expanded := ""
		if s.Delivery == "" && !s.Followed() && s.Path != schema.CleanPath(f.Spec.Layers[first.index].Path) {
			expanded = fmt.Sprintf(" (as expanded for cluster %s)", s.Units[0].Cluster)
		}
		if s.Followed() {
			expanded = " (through Kustomization " + inert.Quote(s.Kustomization) + ")"
		}
		found, bad := collect(s)
		if s.Followed() {
			refs := writtenOf(found)
			k := strings.Join(refs, "\x00")
			if same, ok := byList[k]; ok {
				refs = same
			} else {
				byList[k] = refs
			}
			res.Written[s] = refs
		}
		for _, o := range bad {
			if msg := what + ": " + o; !reported[msg] {
				reported[msg] = true
				errs = append(errs, f.At(problem.Other(first.field, "%s%s: %s", what, expanded, o)))
			}
		}
		for _, img := range found {
			ok := true
			for _, o := range owners {
				who := fmt.Sprintf("%s %s (%s)", kind, o.name, s.Path)
				if img.template != "" {
					who = fmt.Sprintf("%s %s: %s", kind, o.name, img.template)
				}
				ok = add(img.ref, who, o.order, o.field) && ok
			}
			if !ok {
				if msg := fmt.Sprintf("%s: %s: invalid", what, img.who); !reported[msg] {
					reported[msg] = true
					errs = append(errs, f.At(problem.Other(first.field, "%s%s: %s: invalid image reference: want [HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST]", what, expanded, img.who)))
				}
				continue
			}
			if n, err := normalize(img.ref); err == nil {
				if sources[n] == nil {
					sources[n] = map[Source]bool{}
				}
				sources[n][Source{File: img.file, Field: img.field, Object: img.who, Written: img.ref}] = true
			}
			// spec.images of a layer's Kustomization rewrites its own build
			// only.
			if !img.chart && !s.Followed() && s.Delivery == "" && s.Release == "" {
				written[s.Path] = append(written[s.Path], img.ref)
			}
		}
	}
	for p := range m.Builds {
		if b := m.Builds[p]; b != nil && b.Err == nil && p == b.Path { // a layer's build
			res.LayerImages[p] = dedupe(written[p])
		}
	}
	for _, ref := range sortedKeys(why) {
		u := Use{Ref: ref, Why: sortedKeys(why[ref])}
		for src := range sources[ref] {
			u.Sources = append(u.Sources, src)
		}
		sort.Slice(u.Sources, func(i, j int) bool {
			a, b := u.Sources[i], u.Sources[j]
			if a.File != b.File {
				return a.File < b.File
			}
			if a.Field != b.Field {
				return a.Field < b.Field
			}
			if a.Object != b.Object {
				return a.Object < b.Object
			}
			return a.Written < b.Written
		})
		var order []int
		for o := range fields[ref] {
			order = append(order, o)
		}
		sort.Ints(order)
		for _, o := range order {
			u.Fields = append(u.Fields, fields[ref][o])
		}
		res.Images = append(res.Images, u)
	}
	if len(errs) > 0 {
		return res, schema.Sorted(errs)
	}
	return res, nil
}

// owner is a layer or delivery that receives a set: its name, field and
// place in document order.
type owner struct {
	name, field  string
	index, order int
}

// ownersOf returns the layers (or, for a bundle, the deliveries) that
// receive s, in spec order.
func ownersOf(f *schema.Fleet, s *layers.Set, layerIdx map[string]int) []owner {
	var out []owner
	seen := map[int]bool{}
	for _, u := range s.Units {
		if u.Delivery != "" {
			i := slices.IndexFunc(f.Spec.Deliveries, func(d schema.Delivery) bool { return d.Name == u.Delivery })
			if !seen[-1-i] {
				seen[-1-i] = true
				out = append(out, owner{name: u.Delivery, field: fmt.Sprintf("spec.deliveries[%d]", i), index: i, order: len(f.Spec.Images) + len(f.Spec.Layers) + i})
			}
			continue
		}
		if li := layerIdx[u.Layer]; !seen[li] {
			seen[li] = true
			out = append(out, owner{name: u.Layer, field: fmt.Sprintf("spec.layers[%d].path", li), index: li, order: len(f.Spec.Images) + li})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

// Written returns the container image references objs use, as written
// there (not charts), sorted and deduplicated: what the images rewrite of a
// Flux Kustomization matches by name.
func Written(objs []*layers.Object) []string {
	found, _ := collect(&layers.Set{Objects: objs})
	return writtenOf(found)
}

// writtenOf is Written of what collect found.
func writtenOf(found []found) []string {
	var out []string
	for _, f := range found {
		if !f.chart {
			out = append(out, f.ref)
		}
	}
	return dedupe(out)
}

type found struct {
	ref   string
	chart bool
	// template names the HelmRelease, chart and template that rendered
	// the object, for an image of a chart's set: "HelmRelease apps/web
	// chart web template web/templates/deployment.yaml".
	template string
	// who names where ref was found without quoting it: kind,
	// namespace/name and container.
	who string
	// file is the object's origin; field the reference's field in it
	// (Source).
	file, field string
}

// collect returns the images (workload.Containers) and OCI charts s's
// objects refer to, in no particular order, and the objects whose references
// cannot be mirrored (each named, its values never quoted). The objects of a
// chart's set (s.Release) are named by the HelmRelease, the chart and the
// template that rendered them, and the HelmReleases a chart renders are not
// followed.
func collect(s *layers.Set) (out []found, bad []string) {
	if s.ChartOCI != "" { // a bundle's chart, which `fleet apply` downloads
		out = append(out, found{ref: s.ChartOCI, chart: true, who: "bundle " + s.Path + " chart", file: path.Join(s.Path, "fleet.yaml"), field: "helm.repo"})
	}
	index := make(map[[3]string]*layers.Object, len(s.Objects))
	for _, o := range s.Objects {
		index[[3]string{o.Kind, o.Namespace, o.Name}] = o
	}
	find := func(kind, ns, name string) map[string]any {
		if o := index[[3]string{kind, ns, name}]; o != nil {
			return o.Map()
		}
		return nil
	}
	for _, o := range s.Objects {
		v := o.Map()
		tmpl, file := "", o.Origin
		if s.Release != "" {
			// The template is the chart's, not a file of the fleet's folder.
			tmpl, file = fmt.Sprintf("HelmRelease %s chart %s template %s", s.Release, chartName(o.Origin), o.Origin), ""
			if s.Delivery != "" { // a bundle Fleet's agent installs with Helm
				tmpl = fmt.Sprintf("bundle %s Helm release %s chart %s template %s", s.Path, s.Release, chartName(o.Origin), o.Origin)
			}
		}
		for _, c := range workload.Containers(v) {
			who := fmt.Sprintf("%s %s %s", o.Describe(), c.Field, c.Name)
			if tmpl != "" {
				who = tmpl + ": " + who
			}
			out = append(out, found{ref: c.Image, who: who, template: tmpl, file: file, field: c.Path})
		}
		if !o.IsHelmRelease() || s.Release != "" {
			continue
		}
		rel, err := charts.ParseRelease(v)
		if err != nil {
			bad = append(bad, o.Describe()+": spec does not decode as a HelmRelease's")
			continue
		}
		src, err := charts.ResolveSource(rel, find)
		switch {
		case errors.Is(err, charts.ErrVersion):
			bad = append(bad, fmt.Sprintf("%s: %v (a chart is mirrored and locked by one version)", o.Describe(), err))
		case err != nil:
			// Not a chart fleetgen mirrors, or one the renderer reports.
		case !src.HTTP():
			out = append(out, found{ref: src.OCI, chart: true, who: o.Describe() + " chart", file: o.Origin, field: "spec.chart"})
		}
	}
	sort.Strings(bad)
	return out, bad
}

// chartName is the chart a template of a rendered chart belongs to: the
// first element of its path (podinfo/templates/deployment.yaml).
func chartName(template string) string {
	name, _, _ := strings.Cut(template, "/")
	return name
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
