package charts

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/workload"
)

// ImageUse is one image a rendered chart names, and where.
type ImageUse struct {
	// Ref is the reference as written in the rendered object.
	Ref string
	// Template is the chart's template file that rendered it.
	Template string
	// Object names the object and container: "Deployment apps/web
	// containers app". Never a value.
	Object string
	// PostRendered is false when no post-renderer reaches the object (a hook
	// under postRenderStrategy nohooks): fleetgen's cannot pin it.
	PostRendered bool
}

// Images returns every container image of the rendered objects (every
// workload kind, as pkg/images finds them in layers: workload.Containers),
// sorted by Ref, Template and Object, deduplicated.
func (r *Result) Images() []ImageUse {
	seen := map[ImageUse]bool{}
	var out []ImageUse
	for _, o := range r.Objects {
		for _, c := range workload.Containers(o.Map) {
			u := ImageUse{Ref: c.Image, Template: o.Template, Object: fmt.Sprintf("%s %s %s", o.Describe(), c.Field, c.Name), PostRendered: o.PostRendered}
			if !seen[u] {
				seen[u] = true
				out = append(out, u)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Ref != b.Ref {
			return a.Ref < b.Ref
		}
		if a.Template != b.Template {
			return a.Template < b.Template
		}
		return a.Object < b.Object
	})
	return out
}

// Why says who asked for an image, for `images --why`: the HelmRelease, the
// chart and the template file ("HelmRelease apps/podinfo chart podinfo-6.7.1
// template podinfo/templates/deployment.yaml").
func Why(rel *Release, chart string, u ImageUse) string {
	return fmt.Sprintf("%s chart %s template %s", rel.Describe(), chart, u.Template)
}

// Pinner returns the mirror repository and digest an image as written is
// locked to (the lock's entry for lock.Normalize(ref)), or false.
type Pinner func(ref string) (repository, digest string, ok bool)

// PinError is an image set that fleetgen's post-renderer cannot pin: images
// the lock lacks, and image names written with tags or digests that the
// lock pins to different images (a kustomize images entry rewrites a name
// one way only). The references come from the chart: Error does not quote
// them; the caller lists them where it quotes untrusted text.
type PinError struct {
	Missing []string
	Clash   []string
}

func (e *PinError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, fmt.Sprintf("%d image(s) fleet.lock.yaml lacks: run `fleetgen mirror`", len(e.Missing)))
	}
	if len(e.Clash) > 0 {
		parts = append(parts, fmt.Sprintf("%d image name(s) with different tags or digests: a post-renderer rewrites a name one way only", len(e.Clash)))
	}
	return strings.Join(parts, "; ")
}

// ErrNotPostRendered is an image of an object no post-renderer reaches.
var ErrNotPostRendered = errors.New("an image of a hook that spec.postRenderStrategy nohooks keeps from post-renderers: it cannot be pinned; use combined or separate")

// PinImages returns fleetgen's post-renderer for a chart: a kustomize images
// entry per image name the chart writes (refs, as Result.Images finds them),
// rewriting it to its mirror repository pinned by digest, sorted by name.
// Mirror references already pinned by digest (on mirrorHost) are left as
// they are.
func PinImages(refs []string, mirrorHost string, pin Pinner) (PostRenderer, error) {
	byName := map[string]Image{}
	clash := map[string]bool{}
	var missing []string
	for _, ref := range refs {
		if mirrorHost != "" && strings.HasPrefix(ref, mirrorHost+"/") && strings.Contains(ref, "@sha256:") {
			continue
		}
		repo, digest, ok := pin(ref)
		if !ok {
			missing = append(missing, ref)
			continue
		}
		name, _ := lock.SplitRef(ref)
		e := Image{Name: name, NewName: repo, Digest: digest}
		if old, ok := byName[name]; ok && old != e {
			clash[name] = true
			continue
		}
		byName[name] = e
	}
	if len(missing) > 0 || len(clash) > 0 {
		sort.Strings(missing)
		return PostRenderer{}, &PinError{Missing: slices.Compact(missing), Clash: slices.Sorted(maps.Keys(clash))}
	}
	k := &Kustomize{}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		k.Images = append(k.Images, byName[name])
	}
	return PostRenderer{Kustomize: k}, nil
}

// WithPins returns the post-renderers a HelmRelease gets: its own, in order,
// then fleetgen's (pins), so that pins rewrite the images as the
// HelmRelease's own post-renderers leave them (Render applied those before
// the images were found). Neither list is changed.
func WithPins(own []PostRenderer, pins PostRenderer) []PostRenderer {
	out := make([]PostRenderer, 0, len(own)+1)
	out = append(out, own...)
	return append(out, pins)
}
