package pipeline

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/charts"
	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
)

// chartPatches is what render patches into each layer's Kustomization for
// the HelmReleases it applies (generate.Options.HelmReleases), by cluster
// and layer, and the problems that keep it from pinning a chart's images:
// an image name the chart writes with tags or digests the lock pins to
// different images, an image of a hook no post-renderer reaches. An image
// the lock lacks is lockErrors', which names it like every other.
func (ld *Loaded) chartPatches() (map[[2]string][]generate.HelmRelease, problem.Errors) {
	if ld.patchesDone {
		return ld.patches, ld.patchErrs
	}
	ld.patchesDone = true
	ld.nestedReleases = nil
	f := ld.Fleet
	host := f.Spec.Registry.Host
	pin := func(ref string) (string, string, bool) {
		n, err := lock.Normalize(ref)
		if err != nil {
			return "", "", false
		}
		img, ok := ld.Lock.Image(n)
		return img.Repository(), img.Digest, ok
	}
	idx := map[string]int{}
	for i, l := range f.Spec.Layers {
		idx[l.Name] = i
	}
	found := map[[3]string][]string{} // layer, release, problem → clusters
	var order [][3]string
	report := func(layer, release, what, cluster string) {
		k := [3]string{layer, release, what}
		if _, ok := found[k]; !ok {
			order = append(order, k)
		}
		found[k] = append(found[k], cluster)
	}
	out := map[[2]string][]generate.HelmRelease{}
	pinned := map[*chartRelease]*generate.HelmRelease{} // one per render and HelmRelease object
	lists := map[string][]generate.HelmRelease{}        // one list per distinct content, shared by units
	// pins returns the HelmReleases of objs that cluster receives through
	// layer, pinned, as one list per distinct content ("" and nil: none).
	pins := func(cluster, layer string, objs []*layers.Object) ([]generate.HelmRelease, string) {
		var mine []*generate.HelmRelease
		for _, o := range objs {
			if !o.IsHelmRelease() {
				continue
			}
			info := ld.charts.releases[releaseKey{cluster, o}]
			if info == nil {
				continue
			}
			name := qualified(o.Namespace, o.Name)
			if hr, ok := pinned[info]; ok && hr.Name == o.Name && hr.Namespace == o.Namespace {
				mine = append(mine, hr)
				continue
			}
			var refs []string
			for _, use := range info.Result.Images() {
				if !use.PostRendered && !(strings.HasPrefix(use.Ref, host+"/") && strings.Contains(use.Ref, "@sha256:")) {
					report(layer, name, fmt.Sprintf("chart template %s: %s", inert.Quote(use.Template), charts.ErrNotPostRendered), cluster)
					continue
				}
				refs = append(refs, use.Ref)
			}
			pr, err := charts.PinImages(refs, host, pin)
			var pe *charts.PinError
			if errors.As(err, &pe) && len(pe.Clash) > 0 {
				report(layer, name, fmt.Sprintf("the chart writes %d image name(s) with different tags or digests, and a post-renderer rewrites a name one way only: use one (`fleetgen images --why` lists them)", len(pe.Clash)), cluster)
				continue
			}
			hr := &generate.HelmRelease{Namespace: o.Namespace, Name: o.Name, PostRenderers: len(info.Release.Spec.PostRenderers) > 0}
			if pr.Kustomize != nil {
				for _, img := range pr.Kustomize.Images {
					hr.Images = append(hr.Images, generate.ChartImage{Name: img.Name, NewName: img.NewName, Digest: img.Digest})
				}
			}
			if repo, digest, ok := chartTarget(ld.Lock, info.Source); ok {
				src := info.Source
				url := "oci://" + repo
				if src.Kind == "HelmRepository" {
					url = "oci://" + path.Dir(repo)
				}
				hr.Source = generate.ChartSource{Kind: src.Kind, Namespace: src.Namespace, Name: src.Name, URL: url, Digest: digest, Insecure: f.Spec.Registry.Insecure}
			}
			pinned[info] = hr
			mine = append(mine, hr)
		}
		if len(mine) == 0 {
			return nil, ""
		}
		key := fmt.Sprint(mine)
		list, ok := lists[key]
		if !ok {
			for _, hr := range mine {
				list = append(list, *hr)
			}
			lists[key] = list
		}
		return list, key
	}
	// withSources returns list with a source-only entry (generate.HelmRelease
	// with no name) for each of srcs whose source it does not patch yet.
	withSources := func(list []generate.HelmRelease, key string, srcs []generate.HelmRelease) ([]generate.HelmRelease, string) {
		have := map[generate.ChartSource]bool{}
		for _, hr := range list {
			have[hr.Source] = true
		}
		var add []generate.HelmRelease
		for _, s := range srcs {
			if !have[s.Source] {
				add = append(add, s)
			}
		}
		if len(add) == 0 {
			return list, key
		}
		key += fmt.Sprint(add)
		if l, ok := lists[key]; ok {
			return l, key
		}
		l := append(list[:len(list):len(list)], add...)
		lists[key] = l
		return l, key
	}
	nested := map[nestedKey]nestedReleases{}
	for _, u := range ld.units {
		s := ld.Model.Received(u.Cluster, u.Layer)
		if s == nil || s.Objects == nil {
			continue
		}
		top, topKey := pins(u.Cluster, u.Layer, s.Objects)
		// The HelmReleases of the Kustomizations followed from the layer:
		// the layer's Kustomization pins them through the one that applies
		// them (nestedOf), as it pins their images.
		var followed []nestedKey
		for _, c := range ld.Model.Closure(u.Cluster, u.Layer) {
			k := nestedKey{u.Cluster, c}
			if !c.Followed() || c.Objects == nil {
				continue
			}
			followed = append(followed, k)
			if _, done := nested[k]; !done {
				// Only sets with HelmReleases are kept: one entry per
				// cluster and set would be 20,000 at 10,000 clusters.
				if list, key := pins(u.Cluster, u.Layer, c.Objects); list != nil {
					nested[k] = nestedReleases{list, key}
				}
			}
		}
		// A HelmRelease's source may be applied by another Kustomization of
		// the chain than the HelmRelease (a folder of sources beside one of
		// releases): every Kustomization of the chain patches every source,
		// a patch that selects nothing being a no-op in kustomize.
		var srcs []generate.HelmRelease
		seen := map[generate.ChartSource]bool{}
		collect := func(list []generate.HelmRelease) {
			for _, hr := range list {
				if hr.Source.Kind != "" && !seen[hr.Source] {
					seen[hr.Source] = true
					srcs = append(srcs, generate.HelmRelease{Source: hr.Source})
				}
			}
		}
		if len(followed) > 0 {
			collect(top)
			for _, k := range followed {
				collect(nested[k].list)
			}
			sort.Slice(srcs, func(i, j int) bool { return fmt.Sprint(srcs[i].Source) < fmt.Sprint(srcs[j].Source) })
			top, topKey = withSources(top, topKey, srcs)
			for _, k := range followed {
				n := nested[k]
				if n.list, n.key = withSources(n.list, n.key, srcs); n.list != nil {
					nested[k] = n
				}
			}
		}
		if top != nil {
			out[[2]string{u.Cluster, u.Layer}] = top
		}
	}
	ld.nestedReleases = nested
	for _, k := range order {
		ld.patchErrs = append(ld.patchErrs, f.At(problem.Other(fmt.Sprintf("spec.layers[%d]", idx[k[0]]), "layer %s: HelmRelease %s: %s (%s)",
			k[0], inert.Quote(k[1]), k[2], problem.Clusters(slices.Compact(found[k]), ""))))
	}
	ld.patches = out
	return out, ld.patchErrs
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// nestedKey is a set a followed Kustomization applies in one cluster.
type nestedKey struct {
	cluster string
	set     *layers.Set
}

// nestedReleases are the pinned HelmReleases of one such set
// (Loaded.chartPatches) and a key for their content.
type nestedReleases struct {
	list []generate.HelmRelease
	key  string
}
