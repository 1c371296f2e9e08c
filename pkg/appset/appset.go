// Package appset previews what Argo CD's ApplicationSet controller makes of
// an ApplicationSet: the Applications its cluster and list generators
// create, with their templates rendered, before anything is merged or
// applied (`argocd appset generate` needs a live API server).
//
// It ports the part of Argo CD's applicationset packages (v3.6:
// generators/cluster.go, list.go, value_interpolation.go,
// generator_spec_processor.go's template merge, utils.Render's fasttemplate
// and Go template rendering, controllers/template.GenerateApplications)
// that decides which Applications exist and what they are called, and is
// held equal to it by test/argocdoracle, which runs Argo CD's own code on
// the same inputs. Everything else is named, never guessed: the other
// generators (matrix, merge, git, SCM provider, pull request, cluster
// decision resource, plugin), a generator's post-filter selector,
// templatePatch, and template functions whose result depends on the clock,
// randomness or the environment are reported as not evaluated.
//
// It reads no network, file system or environment, and is deterministic but
// for one bound: ApplicationSets come from pull requests, so every template
// runs with bounded sequences and output (see Limits), and an evaluation
// that runs past a time bound (nested loops) is abandoned and named.
package appset

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"time"
)

// The Argo CD constants the generators read.
const (
	// SecretTypeLabel marks an Argo CD cluster Secret (value "cluster").
	SecretTypeLabel = "argocd.argoproj.io/secret-type"
	// InClusterName and InClusterServer are the cluster Argo CD runs on, which
	// the cluster generator adds when its selector is empty and no Secret
	// has that server.
	InClusterName   = "in-cluster"
	InClusterServer = "https://kubernetes.default.svc"
)

// Cluster is an Argo CD cluster Secret as the cluster generator reads it.
type Cluster struct {
	// SecretName is the Secret's metadata.name; Name, Server and Project its
	// data.name, data.server and data.project.
	SecretName, Name, Server, Project string
	Labels, Annotations               map[string]string
}

// ClusterFromSecret reads a Secret (an object as plain values, as
// layers.Object.Map returns it) as the cluster generator does: ok only when it
// is a Secret labelled argocd.argoproj.io/secret-type: cluster whose name
// and server can be read (data base64, or stringData); sealed is true when
// they are SOPS-encrypted, which a preview cannot read.
func ClusterFromSecret(obj map[string]any) (c Cluster, ok, sealed bool) {
	if obj["kind"] != "Secret" || obj["apiVersion"] != "v1" {
		return c, false, false
	}
	md, _ := obj["metadata"].(map[string]any)
	labels := stringMap(md["labels"])
	if labels[SecretTypeLabel] != "cluster" {
		return c, false, false
	}
	c.SecretName, _ = md["name"].(string)
	c.Labels, c.Annotations = labels, stringMap(md["annotations"])
	read := func(key string) (string, bool) {
		if s, ok := stringMap(obj["stringData"])[key]; ok {
			return s, true
		}
		enc, ok := stringMap(obj["data"])[key]
		if !ok {
			return "", false
		}
		if strings.HasPrefix(enc, "ENC[") {
			sealed = true
			return "", false
		}
		b, err := base64.StdEncoding.DecodeString(enc)
		return string(b), err == nil
	}
	name, okName := read("name")
	server, okServer := read("server")
	c.Project, _ = read("project")
	c.Name, c.Server = name, server
	return c, okName && okServer && !sealed, sealed
}

// Application is one Application an ApplicationSet would create: what the
// controller rendered from its template for one set of parameters.
type Application struct {
	// Name is metadata.name; Namespace the ApplicationSet's (the controller
	// sets it so); Project spec.project.
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Project   string `json:"project"`
	// Server and DestinationName are spec.destination.server and .name,
	// DestinationNamespace .namespace.
	Server               string `json:"server,omitempty"`
	DestinationName      string `json:"destinationName,omitempty"`
	DestinationNamespace string `json:"destinationNamespace,omitempty"`
	// Generator is the index in spec.generators of the generator that made
	// it.
	Generator int `json:"generator"`
}

// Preview is what Evaluate says of one ApplicationSet.
type Preview struct {
	// Applications are those the evaluated generators create, sorted by
	// name and generator.
	Applications []Application `json:"applications"`
	// NotEvaluated says, per generator or template fleetgen does not
	// evaluate, what it is and why ("spec.generators[1]: a matrix
	// generator"): its Applications are missing from the preview.
	NotEvaluated []string `json:"notEvaluated,omitempty"`
	// Errors are what Argo CD's controller would report instead of
	// creating Applications: a selector that does not parse, a template
	// that fails, two Applications with one name.
	Errors []string `json:"errors,omitempty"`
}

// Limits bound what one ApplicationSet's templates may make (they come
// from pull requests): longer sequences, repeats or outputs stop the
// evaluation of that ApplicationSet, named in NotEvaluated.
const (
	// MaxSequence bounds until, untilStep and seq.
	MaxSequence = 1000
	// MaxOutput bounds one rendered string, in bytes.
	MaxOutput = 64 << 10
)

// maxTime bounds the evaluation of one ApplicationSet: text/template cannot
// be stopped, so one that runs longer (nested loops within MaxSequence each)
// is abandoned, named in NotEvaluated, and its goroutine ends when the
// template does (pkg/charts bounds a chart's render so). Tests shorten it.
var maxTime = 5 * time.Second

// Evaluate previews the ApplicationSet appSet (an object as plain values)
// against the cluster Secrets of its Argo CD (all of them, in Argo CD's
// namespace: the cluster generator selects among them), within maxTime.
func Evaluate(appSet map[string]any, clusters []Cluster) Preview {
	done := make(chan Preview, 1)
	go func() { done <- evaluate(appSet, clusters) }()
	timer := time.NewTimer(maxTime)
	defer timer.Stop()
	select {
	case p := <-done:
		return p
	case <-timer.C:
		return Preview{NotEvaluated: []string{fmt.Sprintf("spec: templates that take more than %s to render, which fleetgen does not wait for: its Applications are not shown", maxTime)}}
	}
}

func evaluate(appSet map[string]any, clusters []Cluster) Preview {
	var p Preview
	md, _ := appSet["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	spec, _ := appSet["spec"].(map[string]any)
	goTemplate, _ := spec["goTemplate"].(bool)
	var options []string
	for _, o := range list(spec["goTemplateOptions"]) {
		if s, ok := o.(string); ok {
			options = append(options, s)
		}
	}
	r := &renderer{goTemplate: goTemplate, options: options}
	if _, ok := spec["templatePatch"]; ok {
		p.NotEvaluated = append(p.NotEvaluated, "spec.templatePatch: fleetgen does not apply template patches, so the names and destinations shown are the template's")
	}
	base, _ := spec["template"].(map[string]any)
	sorted := append([]Cluster(nil), clusters...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].SecretName < sorted[j].SecretName })
	for gi, g := range list(spec["generators"]) {
		at := fmt.Sprintf("spec.generators[%d]", gi)
		gen, _ := g.(map[string]any)
		kind, why := generatorKind(gen)
		if why != "" {
			p.NotEvaluated = append(p.NotEvaluated, at+": "+why)
			continue
		}
		body, _ := gen[kind].(map[string]any)
		var params []map[string]any
		var err error
		switch kind {
		case "clusters":
			params, err = r.clusterParams(body, sorted)
		case "list":
			params, err = r.listParams(body)
		}
		if err != nil {
			p.add(at, err)
			continue
		}
		tmpl := mergeTemplate(body["template"], base)
		for _, param := range params {
			app, err := r.application(tmpl, param)
			if err != nil {
				p.add(at, err)
				if _, stop := err.(notEvaluated); stop {
					break
				}
				continue
			}
			app.Namespace, app.Generator = ns, gi
			p.Applications = append(p.Applications, app)
		}
	}
	sort.SliceStable(p.Applications, func(i, j int) bool {
		a, b := p.Applications[i], p.Applications[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Generator < b.Generator
	})
	for i := 1; i < len(p.Applications); i++ {
		if p.Applications[i].Name == p.Applications[i-1].Name && (i == 1 || p.Applications[i-2].Name != p.Applications[i].Name) {
			p.Errors = append(p.Errors, fmt.Sprintf("two Applications are named %s: the controller refuses an ApplicationSet that generates duplicate names and creates none of its Applications", p.Applications[i].Name))
		}
	}
	p.NotEvaluated = dedupe(p.NotEvaluated)
	return p
}

// add records err of the generator at: a template function or bound that
// fleetgen does not evaluate, or what Argo CD would report.
func (p *Preview) add(at string, err error) {
	if ne, ok := err.(notEvaluated); ok {
		p.NotEvaluated = append(p.NotEvaluated, at+": "+ne.why)
		return
	}
	p.Errors = append(p.Errors, at+": "+err.Error())
}

// generators are the generators of Argo CD v3.6's ApplicationSetGenerator,
// by field name; evaluated are those Evaluate runs.
var (
	generators = []string{"list", "clusters", "git", "scmProvider", "clusterDecisionResource", "pullRequest", "matrix", "merge", "plugin"}
	evaluated  = map[string]bool{"list": true, "clusters": true}
)

// generatorKind returns the one generator gen sets, or why Evaluate does
// not evaluate it.
func generatorKind(gen map[string]any) (kind, why string) {
	var set []string
	for _, k := range generators {
		if v, ok := gen[k]; ok && v != nil {
			set = append(set, k)
		}
	}
	switch {
	case len(set) == 0:
		return "", "a generator fleetgen does not know (Argo CD v3.6 has " + strings.Join(generators, ", ") + ")"
	case len(set) > 1:
		return "", "a generator that sets " + strings.Join(set, " and ") + ": fleetgen evaluates one generator per entry"
	case !evaluated[set[0]]:
		return "", "a " + set[0] + " generator, which fleetgen does not evaluate (only clusters and list): its Applications are not shown"
	}
	if sel, ok := gen["selector"]; ok && sel != nil {
		return "", "a " + set[0] + " generator with a post-filter selector, which fleetgen does not evaluate: its Applications are not shown"
	}
	return set[0], ""
}

// stringMap returns v's entries that are strings, nil when v is not a map.
func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		if s, ok := x.(string); ok {
			out[k] = s
		}
	}
	return out
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	out := s[:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
