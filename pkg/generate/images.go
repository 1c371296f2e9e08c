package generate

import (
	"fmt"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// fleetAgentImage returns the agent chart's image values: the fleet-agent
// image of spec.images (schema.Fleet.AgentImage) pinned to its mirror by
// digest. The chart writes the image as repository:tag, so the digest rides
// in the tag (v0.16.1@sha256:…), which pins it as a reference with both
// does. nil, and an error for the fleet's agent clusters, when spec.images
// lists none or the lock lacks it.
func (r *renderer) fleetAgentImage() (*agentImage, *problem.FieldError) {
	// Validate requires the image when an agent cluster needs it, and
	// checks its reference; Render takes a validated Fleet.
	i, ok := r.f.AgentImage()
	if !ok {
		return nil, r.f.At(problem.Required("spec.images", "no fleet-agent image (Render takes a Fleet that Validate passed)"))
	}
	p := fmt.Sprintf("spec.images[%d]", i)
	n, err := lock.Normalize(r.f.Spec.Images[i])
	if err != nil {
		return nil, r.f.At(problem.Other(p, "not an image reference (Render takes a Fleet that Validate passed)"))
	}
	img, ok := r.l.Image(n)
	if !ok {
		return nil, r.f.At(problem.Other(p, errUnlocked))
	}
	_, tag := lock.SplitRef(n)
	if tag == "" {
		_, tag = lock.SplitRef(img.Target)
	}
	if tag == "" {
		tag = "latest" // the chart needs repository:tag; the digest decides
	}
	return &agentImage{Repository: img.Repository(), Tag: tag + "@" + img.Digest}, nil
}

// layerImages resolves every path of Options.LayerImages once.
func (r *renderer) layerImages() map[string]*layerPathImages {
	out := make(map[string]*layerPathImages, len(r.opts.LayerImages))
	for key, refs := range r.opts.LayerImages {
		out[schema.CleanPath(key)] = r.resolve(refs)
	}
	return out
}

// resolve returns the spec.images entries that rewrite refs (as a build
// writes them) to their mirror repositories pinned by digest, sorted by
// name, with the references the lock lacks and the names used with two
// images.
func (r *renderer) resolve(refs []string) *layerPathImages {
	host := r.f.Spec.Registry.Host
	res := &layerPathImages{}
	byName := map[string]kustomizeImage{}
	clash := map[string]bool{}
	for _, ref := range refs {
		// Helm chart references (oci://) are not container images:
		// Flux's spec.images cannot rewrite them.
		if strings.HasPrefix(ref, "oci://") {
			continue
		}
		// Already a pinned mirror reference: nothing to rewrite.
		if host != "" && strings.HasPrefix(ref, host+"/") && strings.Contains(ref, "@sha256:") {
			continue
		}
		n, err := lock.Normalize(ref)
		if err != nil {
			res.missing = append(res.missing, ref)
			continue
		}
		img, ok := r.l.Image(n)
		if !ok {
			res.missing = append(res.missing, ref)
			continue
		}
		e := kustomizeImage{Name: refName(ref), NewName: img.Repository(), Digest: img.Digest}
		if old, ok := byName[e.Name]; ok && old != e {
			clash[e.Name] = true
			continue
		}
		byName[e.Name] = e
	}
	for _, e := range byName {
		res.entries = append(res.entries, e)
	}
	sort.Slice(res.entries, func(i, j int) bool { return res.entries[i].Name < res.entries[j].Name })
	sort.Strings(res.missing)
	res.missing = uniq(res.missing)
	for name := range clash {
		res.clash = append(res.clash, name)
	}
	sort.Strings(res.clash)
	return res
}

// errUnlocked says that l lacks an image f uses. The rule (every image
// locked) is the pipeline's, which `fleetgen validate` and render apply
// before Render; Render only refuses to render without it.
const errUnlocked = "an image fleet.lock.yaml lacks (Render takes a lock that covers the fleet, as `fleetgen validate` checks): run `fleetgen mirror`"

// layerErrors turns the image problems clusters ran into into one error per
// layer and path, not one per cluster. The names of the images are not
// quoted: they come from the layer (`fleetgen images --why` lists them).
func (r *renderer) layerErrors(results []clusterResult) problem.Errors {
	var errs problem.Errors
	seen := map[layerUse]bool{}
	type imageKey struct {
		layer int
		clash bool
	}
	images := map[imageKey][]string{} // → cleaned paths
	for _, res := range results {
		for _, u := range res.uses {
			if seen[u] {
				continue
			}
			seen[u] = true
			img := r.images[u.path]
			if len(img.missing) > 0 {
				k := imageKey{u.layer, false}
				images[k] = append(images[k], u.path)
			}
			if len(img.clash) > 0 {
				k := imageKey{u.layer, true}
				images[k] = append(images[k], u.path)
			}
		}
	}
	for k, paths := range images {
		ly := r.f.Spec.Layers[k.layer]
		sort.Strings(paths)
		where := strings.Join(uniq(paths), ", ")
		p := fmt.Sprintf("spec.layers[%d]", k.layer)
		if k.clash {
			errs = append(errs, r.f.At(problem.Other(p, "%s", clashMsg(ly.Name, where))))
		} else {
			errs = append(errs, r.f.At(problem.Other(p, "layer %s (%s) uses %s", ly.Name, where, errUnlocked)))
		}
	}
	return errs
}

// clashMsg is the one wording of an image name a layer uses with two tags or
// digests; it does not quote the name, which comes from the layer.
func clashMsg(layer, paths string) string {
	return fmt.Sprintf("layer %s (%s) uses one image name with different tags or digests: Flux spec.images rewrites a name one way only; use one (`fleetgen images --why` lists them)", layer, paths)
}

// ImageClashes reports each layer of f whose build (layerImages, as
// Options.LayerImages) uses one image name with tags or digests that l pins
// to different images, which Flux's spec.images cannot rewrite: the rule
// Render would refuse a fleet for besides an image l lacks. The pipeline
// runs it in `fleetgen validate` and before Render.
func ImageClashes(f *schema.Fleet, l *lock.Lock, layerImages map[string][]string) problem.Errors {
	r := &renderer{f: f, l: l, opts: Options{LayerImages: layerImages}, layerIndex: map[string]int{}}
	for i, ly := range f.Spec.Layers {
		r.layerIndex[ly.Name] = i
	}
	r.images = r.layerImages()
	paths := map[int][]string{}
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		for _, ly := range f.SelectedLayers(c) {
			key := schema.CleanPath(schema.ExpandPath(ly.Path, c))
			if img := r.images[key]; img != nil && len(img.clash) > 0 {
				li := r.layerIndex[ly.Name]
				paths[li] = append(paths[li], key)
			}
		}
	}
	var errs problem.Errors
	for li, ps := range paths {
		sort.Strings(ps)
		errs = append(errs, r.f.At(problem.Other(fmt.Sprintf("spec.layers[%d]", li), "%s", clashMsg(f.Spec.Layers[li].Name, strings.Join(uniq(ps), ", ")))))
	}
	return errs
}

func uniq(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// refName is a reference as written without tag or digest, the form
// kustomize's images transformer matches.
func refName(ref string) string {
	n, _ := lock.SplitRef(ref)
	return n
}
