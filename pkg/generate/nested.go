package generate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
)

// Nested is a Flux Kustomization that a layer's Kustomization applies (or
// that one of those applies, as deep as the model follows: layers.MaxDepth)
// and whose images the model knows (layers.Model.Applies). Flux applies a
// Kustomization's spec.images to its own build only: the child builds its
// own folder with its own spec.images. So the Kustomization that applies it
// patches it (SPEC §3), without editing the user's files: a JSON6902 patch
// that adds spec.images entries pinning every image the child's build names,
// and, for what the child applies in turn, a patch added to the child's
// spec.patches, nested as deep as the chain.
type Nested struct {
	// Namespace and Name are the Kustomization's, as the build that applies
	// it has them.
	Namespace, Name string
	// Images and Patches report whether it has spec.images and
	// spec.patches: fleetgen's entries are appended to them, or are the list.
	Images, Patches bool
	// Refs are the container image references its own build names (after
	// its own spec.images and post-build substitution), as written there,
	// sorted: the same input as Options.LayerImages' for a layer.
	Refs []string
	// Nested are the followed Kustomizations its build applies, sorted by
	// namespace and name.
	Nested []Nested
	// HelmReleases are the HelmReleases its build applies, pinned as
	// Options.HelmReleases' are for a layer: their patches go into its
	// spec.patches beside those of Nested.
	HelmReleases []HelmRelease
}

// nestedPatches are what nestedPatches made for one list.
type nestedPatches struct {
	patches []patch
	// problems are the images of the chain the lock lacks or that clash,
	// each message once, without the layer.
	problems []string
}

// nested returns the patches of a layer's Kustomization for ns, made once
// per list: clusters that receive the same Kustomizations get the same list
// from Options.Nested (by identity), and share its patches.
func (r *renderer) nested(ns []Nested) *nestedPatches {
	k := &ns[0]
	if p, ok := r.nestedMemo.Load(k); ok {
		return p.(*nestedPatches)
	}
	res := &nestedPatches{}
	var err error
	res.patches, err = r.pin(ns, nil, res)
	if err != nil {
		r.failed(err)
	}
	sort.Strings(res.problems)
	res.problems = uniq(res.problems)
	p, _ := r.nestedMemo.LoadOrStore(k, res)
	return p.(*nestedPatches)
}

// pin returns one patch per Kustomization of ns that pins its images and,
// through its spec.patches, those of what it applies (recursively), sorted
// by target; chain names the Kustomizations above ns, for messages.
func (r *renderer) pin(ns []Nested, chain []string, res *nestedPatches) ([]patch, error) {
	var out []patch
	for _, n := range ns {
		name := inert.Quote(n.Name)
		if n.Namespace != "" {
			name = inert.Quote(n.Namespace + "/" + n.Name)
		}
		here := append(chain[:len(chain):len(chain)], "Kustomization "+name)
		img := r.resolve(n.Refs)
		// The names of the images are not quoted: they come from the layer
		// (`fleetgen images --why` lists them).
		if len(img.missing) > 0 {
			res.problems = append(res.problems, fmt.Sprintf("%s uses %s", strings.Join(here, " → "), errUnlocked))
		}
		if len(img.clash) > 0 {
			res.problems = append(res.problems, fmt.Sprintf("%s uses one image name with different tags or digests: Flux spec.images rewrites a name one way only; use one (`fleetgen images --why` lists them)", strings.Join(here, " → ")))
		}
		var ops []jsonOp
		switch {
		case len(img.entries) == 0:
		case n.Images:
			for _, e := range img.entries {
				ops = append(ops, jsonOp{Op: "add", Path: "/spec/images/-", Value: e})
			}
		default:
			ops = append(ops, jsonOp{Op: "add", Path: "/spec/images", Value: img.entries})
		}
		sub, err := r.pin(n.Nested, here, res)
		if err != nil {
			return nil, err
		}
		if len(n.HelmReleases) > 0 {
			hp, err := helmPatches(n.HelmReleases)
			if err != nil {
				return nil, err
			}
			sub = append(sub, hp...)
			sortPatches(sub)
		}
		switch {
		case len(sub) == 0:
		case n.Patches:
			for _, p := range sub {
				ops = append(ops, jsonOp{Op: "add", Path: "/spec/patches/-", Value: p})
			}
		default:
			ops = append(ops, jsonOp{Op: "add", Path: "/spec/patches", Value: sub})
		}
		if len(ops) == 0 {
			continue
		}
		// A patch the Kustomization applies reads as indented JSON; one
		// carried inside another's value is compact, so that its escaping
		// stays one line and a fraction of the bytes.
		var p string
		if len(chain) == 0 {
			p, err = jsonPatch(ops...)
		} else {
			var b []byte
			b, err = json.Marshal(ops)
			p = string(b)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, patch{Patch: p, Target: &patchTarget{Group: kustomizeGroup, Kind: "Kustomization", Name: n.Name, Namespace: n.Namespace}})
	}
	sortPatches(out)
	return out, nil
}

// sortPatches sorts a Kustomization's patches by target kind, namespace and
// name: helmPatches' and pin's together are one sorted list.
func sortPatches(ps []patch) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i].Target, ps[j].Target
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}

// kustomizeGroup is the API group of Flux Kustomizations.
const kustomizeGroup = "kustomize.toolkit.fluxcd.io"
