package generate

import (
	"fmt"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// fleetAgentImage returns the agent chart's image values: the fleet-agent
// image of spec.images (schema.Fleet.AgentImage) pinned to its mirror by
// digest. The chart writes the image as repository:tag, so the digest rides
// in the tag (v0.16.1@sha256:…), which pins it as a reference with both
// does. nil, and an error for the fleet's agent clusters, when spec.images
// lists none or the lock lacks it.
func (r *renderer) fleetAgentImage() (*agentImage, *schema.FieldError) {
	i, ok := r.f.AgentImage()
	if !ok {
		return nil, r.fieldErr("spec.images", fmt.Sprintf("spec.images lists no fleet-agent image: add %s, which agents/<cluster>/values.yaml pins to the mirror", schema.FleetAgentImage))
	}
	ref := r.f.Spec.Images[i]
	p := fmt.Sprintf("spec.images[%d]", i)
	n, err := lock.Normalize(ref)
	if err != nil {
		return nil, r.fieldErr(p, fmt.Sprintf("invalid image %q: %v", ref, err))
	}
	img, ok := r.l.Image(n)
	if !ok {
		return nil, r.fieldErr(p, fmt.Sprintf("fleet-agent image %s is not in %s: run `fleetgen mirror`", ref, lock.FileName))
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
	host := r.f.Spec.Registry.Host
	for key, refs := range r.opts.LayerImages {
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
		out[schema.CleanPath(key)] = res
	}
	return out
}

// layerErrors turns the image and dependency problems clusters ran into into
// one error per layer, path and image (or dependency), not one per cluster.
func (r *renderer) layerErrors(results []clusterResult) schema.Errors {
	var errs schema.Errors
	seen := map[layerUse]bool{}
	type imageKey struct {
		layer int
		ref   string
		clash bool
	}
	images := map[imageKey][]string{} // → cleaned paths
	type depKey struct {
		layer int
		dep   string
	}
	deps := map[depKey][]string{}
	for _, res := range results {
		for _, u := range res.uses {
			if seen[u] {
				continue
			}
			seen[u] = true
			img := r.images[u.path]
			for _, ref := range img.missing {
				k := imageKey{u.layer, ref, false}
				images[k] = append(images[k], u.path)
			}
			for _, name := range img.clash {
				k := imageKey{u.layer, name, true}
				images[k] = append(images[k], u.path)
			}
		}
		for _, d := range res.deps {
			k := depKey{d.layer, d.dep}
			deps[k] = append(deps[k], d.cluster)
		}
	}
	for k, paths := range images {
		ly := r.f.Spec.Layers[k.layer]
		sort.Strings(paths)
		where := strings.Join(paths, ", ")
		p := fmt.Sprintf("spec.layers[%d]", k.layer)
		if k.clash {
			errs = append(errs, r.fieldErr(p, fmt.Sprintf("layer %s (%s) uses image %s with different tags or digests: Flux spec.images rewrites a name one way only; use one", ly.Name, where, k.ref)))
		} else {
			errs = append(errs, r.fieldErr(p, fmt.Sprintf("image %s used by layer %s (%s) is not in %s: run `fleetgen mirror`", k.ref, ly.Name, where, lock.FileName)))
		}
	}
	for k, clusters := range deps {
		ly := r.f.Spec.Layers[k.layer]
		sort.Strings(clusters)
		who := "cluster " + clusters[0]
		if len(clusters) > 1 {
			who = fmt.Sprintf("clusters %s and %d more", clusters[0], len(clusters)-1)
		}
		errs = append(errs, r.fieldErr(fmt.Sprintf("spec.layers[%d].dependsOn", k.layer),
			fmt.Sprintf("layer %s depends on layer %s, which does not select %s: widen the selector of %s or narrow that of %s", ly.Name, k.dep, who, k.dep, ly.Name)))
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
