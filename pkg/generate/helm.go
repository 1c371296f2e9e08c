package generate

import (
	"encoding/json"
)

// HelmRelease is one HelmRelease a layer's Kustomization applies, as render
// patches it for one cluster (SPEC §3): its chart source pointed at the
// mirror and fleetgen's kustomize post-renderer pinning every image the
// chart renders, after the HelmRelease's own post-renderers. The user's
// files are not edited: the Kustomization patches what it applies.
type HelmRelease struct {
	// Namespace and Name are the HelmRelease's, as the layer's build has them.
	// Name "" is a chart source alone: the source of a HelmRelease another
	// Kustomization of the chain applies, which this one may apply.
	Namespace, Name string
	// PostRenderers reports whether it has spec.postRenderers: fleetgen's is
	// added after them, or is the list.
	PostRenderers bool
	// Images are fleetgen's post-renderer: each image name the chart renders
	// rewritten to its mirror repository pinned by digest, sorted by Name.
	Images []ChartImage
	// Source is the chart's source object, pointed at the mirror.
	Source ChartSource
}

// ChartImage is a kustomize images entry (helm-controller's
// spec.postRenderers[].kustomize.images).
type ChartImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// ChartSource is a HelmRelease's chart source pointed at the mirror.
type ChartSource struct {
	// Kind, Namespace and Name are the object's: HelmRepository (its url
	// becomes the mirror's repository of its charts, its type oci) or
	// OCIRepository (its url the chart's repository in the mirror, its ref
	// the locked digest).
	Kind, Namespace, Name string
	URL                   string
	Digest                string
	// Insecure is spec.registry.insecure: plain HTTP to the mirror.
	Insecure bool
}

// patch is one entry of a Flux Kustomization's spec.patches.
type patch struct {
	Patch  string       `json:"patch"`
	Target *patchTarget `json:"target,omitempty"`
}

type patchTarget struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// jsonOp is one RFC 6902 operation.
type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

type postRenderer struct {
	Kustomize struct {
		Images []ChartImage `json:"images"`
	} `json:"kustomize"`
}

// helmPatches returns helmPatches(rels), made once per list: clusters that
// receive the same HelmReleases get the same list from Options.HelmReleases
// (by identity), and their patches are made once.
func (r *renderer) helmPatches(rels []HelmRelease) []patch {
	k := &rels[0]
	if p, ok := r.patches.Load(k); ok {
		return p.([]patch)
	}
	p, err := helmPatches(rels)
	if err != nil {
		r.failed(err)
	}
	r.patches.Store(k, p)
	return p
}

// helmPatches returns the Kustomization's patches for rels: one per
// HelmRelease and one per chart source object, sorted by target.
func helmPatches(rels []HelmRelease) ([]patch, error) {
	var out []patch
	sources := map[[3]string]bool{}
	for _, r := range rels {
		pr := postRenderer{}
		pr.Kustomize.Images = r.Images
		if pr.Kustomize.Images == nil {
			pr.Kustomize.Images = []ChartImage{}
		}
		op := jsonOp{Op: "add", Path: "/spec/postRenderers", Value: []postRenderer{pr}}
		if r.PostRenderers {
			op = jsonOp{Op: "add", Path: "/spec/postRenderers/-", Value: pr}
		}
		if r.Name != "" {
			p, err := jsonPatch(op)
			if err != nil {
				return nil, err
			}
			out = append(out, patch{Patch: p, Target: &patchTarget{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease", Name: r.Name, Namespace: r.Namespace}})
		}
		s := r.Source
		k := [3]string{s.Kind, s.Namespace, s.Name}
		if s.Kind == "" || sources[k] {
			continue
		}
		sources[k] = true
		ops := []jsonOp{{Op: "add", Path: "/spec/url", Value: s.URL}}
		switch s.Kind {
		case "HelmRepository":
			ops = append(ops, jsonOp{Op: "add", Path: "/spec/type", Value: "oci"})
		case "OCIRepository":
			ops = append(ops, jsonOp{Op: "add", Path: "/spec/ref", Value: map[string]string{"digest": s.Digest}})
		}
		if s.Insecure {
			ops = append(ops, jsonOp{Op: "add", Path: "/spec/insecure", Value: true})
		}
		p, err := jsonPatch(ops...)
		if err != nil {
			return nil, err
		}
		out = append(out, patch{Patch: p, Target: &patchTarget{Group: "source.toolkit.fluxcd.io", Kind: s.Kind, Name: s.Name, Namespace: s.Namespace}})
	}
	sortPatches(out)
	return out, nil
}

// jsonPatch writes ops as an RFC 6902 patch, indented JSON: the patch
// string Flux's kustomize-controller applies.
func jsonPatch(ops ...jsonOp) (string, error) {
	b, err := json.MarshalIndent(ops, "", "  ")
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}
