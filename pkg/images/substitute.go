package images

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resource"

	"fleetgen.dev/fleetgen/pkg/schema"
)

// strictMarker ends the message Flux's envsubst gives for a variable that is
// neither defined nor defaulted, before the variable's quoted name.
const strictMarker = "(strict mode): "

// maxVars bounds the variables looked for in one object.
const maxVars = 256

// Substitutions checks every selected cluster's layers the way Flux 2.9's
// kustomize-controller applies them: it substitutes postBuild variables
// strictly, so a ${var} that the cluster's Kustomization does not define
// (schema.Layer.Variables: the layer's substitute, the cluster's labels,
// cluster) and that has no default (${var:=x}) fails that cluster's
// reconcile. It reports each such variable once per layer and manifest file,
// naming the clusters, at the layer in fleet.yaml, sorted by message.
//
// Substitution runs through fluxcd/pkg/kustomize's own SubstituteVariables,
// once per object: which variables an object needs does not depend on their
// values, so each cluster is then a set lookup.
func (r *Result) Substitutions(f *schema.Fleet) schema.Errors {
	type need struct {
		vars []string // sorted
		file string   // relative to the folder of fleet.yaml
		obj  string
		err  error // substitution fails whatever the variables
	}
	needs := map[string][]need{} // layer path → objects with variables
	for p, objs := range r.builds {
		for _, o := range objs {
			vars, err := requiredVars(o.res)
			if len(vars) == 0 && err == nil {
				continue
			}
			file := p
			if o.origin != "" {
				file = path.Join(p, o.origin)
			}
			needs[p] = append(needs[p], need{vars: vars, file: file, obj: o.describe(), err: err})
		}
	}
	if len(needs) == 0 {
		return nil
	}
	type key struct {
		layer          int
		variable, file string
	}
	missing := map[key][]string{} // → clusters
	objOf := map[key]string{}
	broken := map[key]string{}
	for ci := range f.Spec.Clusters {
		c := &f.Spec.Clusters[ci]
		for li := range f.Spec.Layers {
			l := &f.Spec.Layers[li]
			if !schema.Selects(l.Selector, c.Labels) {
				continue
			}
			ns := needs[schema.CleanPath(schema.ExpandPath(l.Path, c))]
			if len(ns) == 0 {
				continue
			}
			defined := l.Variables(c)
			for _, n := range ns {
				if n.err != nil {
					broken[key{li, "", n.file}] = fmt.Sprintf("%s: %v", n.obj, n.err)
				}
				for _, v := range n.vars {
					if _, ok := defined[v]; ok {
						continue
					}
					k := key{li, v, n.file}
					if len(missing[k]) == 0 || missing[k][len(missing[k])-1] != c.Name {
						missing[k] = append(missing[k], c.Name)
					}
					if _, ok := objOf[k]; !ok {
						objOf[k] = n.obj
					}
				}
			}
		}
	}
	var errs schema.Errors
	for k, clusters := range missing {
		sort.Strings(clusters)
		which := "cluster " + clusters[0]
		if len(clusters) > 1 {
			which = fmt.Sprintf("clusters %s", strings.Join(clusters[:min(3, len(clusters))], ", "))
			if len(clusters) > 3 {
				which += fmt.Sprintf(" and %d more", len(clusters)-3)
			}
		}
		errs = append(errs, f.Errorf(fmt.Sprintf("spec.layers[%d]", k.layer),
			"layer %s: ${%s} in %s (%s) is not defined for %s, and Flux 2.9 substitutes strictly (the reconcile fails): want a label %s on the cluster, spec.layers[%d].substitute.%s, or a default ${%s:=VALUE}",
			f.Spec.Layers[k.layer].Name, k.variable, k.file, objOf[k], which, k.variable, k.layer, k.variable, k.variable))
	}
	for k, msg := range broken {
		errs = append(errs, f.Errorf(fmt.Sprintf("spec.layers[%d]", k.layer),
			"layer %s: %s: postBuild substitution fails: %s", f.Spec.Layers[k.layer].Name, k.file, msg))
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

// requiredVars returns the variables res uses without a default, sorted, by
// substituting it strictly until Flux's substitution succeeds, each round
// defining the variable the last one missed. An error is a substitution that
// fails for another reason.
func requiredVars(res *resource.Resource) ([]string, error) {
	known := map[string]any{}
	var names []string
	for range maxVars {
		ks := unstructured.Unstructured{Object: map[string]any{
			"spec": map[string]any{"postBuild": map[string]any{"substitute": known}},
		}}
		_, err := fluxkustomize.SubstituteVariables(context.Background(), nil, ks, res.DeepCopy(),
			fluxkustomize.SubstituteWithDryRun(true), fluxkustomize.SubstituteWithStrict(true), fluxkustomize.SubstituteWithAlways(true))
		if err == nil {
			sort.Strings(names)
			return names, nil
		}
		msg := err.Error()
		i := strings.LastIndex(msg, strictMarker)
		if i < 0 {
			sort.Strings(names)
			return names, err
		}
		name, uerr := strconv.Unquote(msg[i+len(strictMarker):])
		if uerr != nil || known[name] != nil {
			sort.Strings(names)
			return names, err
		}
		known[name] = ""
		names = append(names, name)
	}
	sort.Strings(names)
	return names, fmt.Errorf("more than %d variables", maxVars)
}
