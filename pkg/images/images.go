// Package images finds every image a fleet needs: spec.images plus every
// image in what its clusters receive from their layers (the model of
// pkg/layers: each layer's build with each cluster's post-build
// substitution).
package images

import (
	"errors"
	"fmt"
	"sort"
	"strings"

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
	add := func(ref, who string, order int, field string) bool {
		n, err := lock.Normalize(ref)
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
	res := &Result{LayerImages: map[string][]string{}}
	written := map[string][]string{}
	reported := map[string]bool{}
	for _, s := range m.Sets {
		if s.Objects == nil {
			continue
		}
		// The layers that receive this set, in spec order; errors go to the
		// first.
		seen := map[int]bool{}
		var idx []int
		for _, u := range s.Units {
			if li := layerIdx[u.Layer]; !seen[li] {
				seen[li] = true
				idx = append(idx, li)
			}
		}
		sort.Ints(idx)
		at := fmt.Sprintf("spec.layers[%d].path", idx[0])
		var names []string
		for _, li := range idx {
			names = append(names, f.Spec.Layers[li].Name)
		}
		expanded := ""
		if s.Path != schema.CleanPath(f.Spec.Layers[idx[0]].Path) {
			expanded = fmt.Sprintf(" (as expanded for cluster %s)", s.Units[0].Cluster)
		}
		found, bad := collect(s)
		for _, o := range bad {
			if msg := fmt.Sprintf("layer %s: folder %s: %s", strings.Join(names, ", "), s.Path, o); !reported[msg] {
				reported[msg] = true
				errs = append(errs, f.At(problem.Other(at, "layer %s: folder %s%s: %s", strings.Join(names, ", "), s.Path, expanded, o)))
			}
		}
		for _, img := range found {
			ok := true
			for _, li := range idx {
				who := fmt.Sprintf("layer %s (%s)", f.Spec.Layers[li].Name, s.Path)
				if img.template {
					who = fmt.Sprintf("layer %s: %s", f.Spec.Layers[li].Name, strings.SplitN(img.who, ": ", 2)[0])
				}
				ok = add(img.ref, who, len(f.Spec.Images)+li, fmt.Sprintf("spec.layers[%d].path", li)) && ok
			}
			if !ok {
				if msg := fmt.Sprintf("layer %s: folder %s: %s: invalid", strings.Join(names, ", "), s.Path, img.who); !reported[msg] {
					reported[msg] = true
					errs = append(errs, f.At(problem.Other(at, "layer %s: folder %s%s: %s: invalid image reference: want [HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST]", strings.Join(names, ", "), s.Path, expanded, img.who)))
				}
				continue
			}
			if !img.chart && !img.template {
				written[s.Path] = append(written[s.Path], img.ref)
			}
			if n, err := lock.Normalize(img.ref); err == nil {
				if sources[n] == nil {
					sources[n] = map[Source]bool{}
				}
				sources[n][Source{File: img.file, Field: img.field, Object: img.who, Written: img.ref}] = true
			}
		}
	}
	for p := range m.Builds {
		if b := m.Builds[p]; b != nil && b.Err == nil {
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

// Written returns the container image references objs use, as written
// there (not charts), sorted and deduplicated: what the images rewrite of a
// Flux Kustomization matches by name.
func Written(objs []*layers.Object) []string {
	found, _ := collect(&layers.Set{Objects: objs})
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
	// template is set for an image a chart's template names: helm-controller
	// applies it, so Flux's spec.images cannot rewrite it (a post-renderer
	// pins it).
	template bool
	// who names where ref was found without quoting it: kind,
	// namespace/name and container.
	who string
	// file is the object's origin; field the reference's field in it
	// (Source).
	file, field string
}

// collect returns the images (workload.Containers) and OCI charts objs
// refer to, in no particular order, and the objects whose references cannot
// be mirrored (each named, its values never quoted). The objects of a
// chart's set (s.Chart) are named by the HelmRelease, the chart and the
// template that rendered them, and the HelmReleases a chart renders are not
// followed.
func collect(s *layers.Set) (out []found, bad []string) {
	objs := s.Objects
	index := map[[3]string]map[string]any{}
	for _, o := range objs {
		index[[3]string{o.Kind, o.Namespace, o.Name}] = o.Map
	}
	find := func(kind, ns, name string) map[string]any { return index[[3]string{kind, ns, name}] }
	for _, o := range objs {
		where := o.Describe()
		if s.Chart() {
			where = fmt.Sprintf("HelmRelease %s chart %s template %s: %s", s.Release, chartName(o.Origin), o.Origin, where)
		}
		for _, c := range workload.Containers(o.Map) {
			out = append(out, found{ref: c.Image, who: fmt.Sprintf("%s %s %s", where, c.Field, c.Name), template: s.Chart(), file: o.Origin, field: c.Path})
		}
		if !o.IsHelmRelease() || s.Chart() {
			continue
		}
		rel, err := charts.ParseRelease(o.Map)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %s", o.Describe(), "spec does not decode as a HelmRelease's"))
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
