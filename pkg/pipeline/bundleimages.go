package pipeline

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/workload"
)

// bundleImageWarnings are the warnings for the images of the bundles of
// deliveries from the fleet's own repository (layers.Model.Delivered) that
// are not written as the mirror reference by digest: Fleet's GitRepo has no
// image rewrite, so fleetgen cannot pin them without editing the user's
// files, and the cluster pulls them as written. One per delivery, bundle
// folder, file and image, at the delivery, in that order.
func (ld *Loaded) bundleImageWarnings() problem.Errors {
	f, m := ld.Fleet, ld.Model
	if f == nil || m == nil {
		return nil
	}
	host := f.Spec.Registry.Host
	type use struct {
		delivery, folder, file, image string
		chart                         bool // a Helm chart's template: its values set the image
	}
	seen := map[use]bool{}
	var uses []use
	for _, s := range m.Sets {
		if s.Delivery == "" {
			continue
		}
		for _, o := range s.Objects {
			for _, c := range workload.Containers(o.Map()) {
				if byDigestOn(host, c.Image) {
					continue
				}
				u := use{s.Delivery, s.Path, o.Origin, c.Image, s.Release != ""}
				if !seen[u] {
					seen[u] = true
					uses = append(uses, u)
				}
			}
		}
	}
	sort.Slice(uses, func(i, j int) bool {
		a, b := uses[i], uses[j]
		if a.delivery != b.delivery {
			return a.delivery < b.delivery
		}
		if a.folder != b.folder {
			return a.folder < b.folder
		}
		if a.file != b.file {
			return a.file < b.file
		}
		return a.image < b.image
	})
	var ws problem.Errors
	for _, u := range uses {
		i := slices.IndexFunc(f.Spec.Deliveries, func(d schema.Delivery) bool { return d.Name == u.delivery })
		if u.chart {
			ws = append(ws, f.At(problem.UnpinnedBundleImage(fmt.Sprintf("spec.deliveries[%d]", i),
				"delivery %s: bundle %s: chart template %s: image %s is not the mirror's reference by digest, and Fleet installs the chart as its values say (fleetgen cannot rewrite a bundle's images): set the chart's image values in the bundle's helm.values to %s/…@sha256:… (`fleetgen images` lists the locked digests)",
				u.delivery, inert.Quote(u.folder), inert.Quote(u.file), inert.Quote(u.image), host)))
			continue
		}
		ws = append(ws, f.At(problem.UnpinnedBundleImage(fmt.Sprintf("spec.deliveries[%d]", i),
			"delivery %s: bundle %s: %s: image %s is not the mirror's reference by digest, and Fleet deploys it as written (fleetgen cannot rewrite a bundle's images): write %s/…@sha256:… (`fleetgen images` lists the locked digests)",
			u.delivery, inert.Quote(u.folder), inert.Quote(u.file), inert.Quote(u.image), host)))
	}
	return ws
}

// byDigestOn reports whether ref is a reference to the mirror host by digest.
func byDigestOn(host, ref string) bool {
	return host != "" && strings.HasPrefix(ref, host+"/") && strings.Contains(ref, "@sha256:")
}
