package layers

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/secrets"
)

// Load builds the model of fleet f (loaded and defaulted): every cluster
// with every layer it selects (FromFleet), built in the folder of fleet.yaml,
// and the charts of their HelmReleases when opts.Charts renders them; opts
// bounds it (zero values are the defaults).
//
// A layer folder that does not exist or does not build is a problem of
// fleet.yaml, located at the first layer whose path expands to it and naming
// the cluster whose labels expanded it; all of them are returned at once as
// problem.Errors, with the model of what did build (validate goes on to check
// it: one run finds every problem). A bound of Options is an input error (*problem.InvalidError);
// an I/O failure or a panic in kustomize is a runtime error.
func Load(f *schema.Fleet, opts Options) (*Model, error) { return LoadUnits(f, FromFleet(f), opts) }

// LoadUnits is Load of some of f's units (of FromFleet(f)): validate leaves
// out the layers whose path fleet.yaml's own rules found wrong, and checks
// the rest in the same run.
func LoadUnits(f *schema.Fleet, units []Unit, opts Options) (*Model, error) {
	dir := f.Dir
	if dir == "" {
		dir = "."
	}
	m, err := New(dir, units, opts)
	var lim *LimitError
	if errors.As(err, &lim) {
		return nil, problem.Invalid(lim)
	}
	if err != nil {
		return nil, fmt.Errorf("layers: %w", err)
	}
	var errs problem.Errors
	for _, p := range sortedBuilds(m) {
		b := m.Builds[p]
		if b.Err == nil {
			continue
		}
		at, names, expanded := whereFleet(f, units, p)
		if errors.Is(b.Err, errNoFolder) {
			errs = append(errs, f.At(problem.Other(at+".path", "layer %s: folder %s%s does not exist: want a folder inside the folder of fleet.yaml", names, p, expanded)))
			continue
		}
		errs = append(errs, f.At(problem.Other(at+".path", "layer %s: folder %s%s does not build with kustomize: %v", names, p, expanded, b.Err)))
	}
	if len(errs) > 0 {
		return m, schema.Sorted(errs)
	}
	return m, nil
}

// whereFleet names the layers of f that expand to path p: the field of the
// first (spec.layers[i]), their names, and " (as expanded for cluster X)"
// when a cluster's labels made the path.
func whereFleet(f *schema.Fleet, units []Unit, p string) (at, names, expanded string) {
	idx := layerIndex(f)
	seen := map[int]bool{}
	var list []int
	for _, u := range units {
		if u.Path != p {
			continue
		}
		li := idx[u.Layer]
		if !seen[li] {
			seen[li] = true
			list = append(list, li)
		}
		if expanded == "" && p != schema.CleanPath(f.Spec.Layers[li].Path) {
			expanded = fmt.Sprintf(" (as expanded for cluster %s)", u.Cluster)
		}
	}
	sort.Ints(list)
	var n []string
	for _, li := range list {
		n = append(n, f.Spec.Layers[li].Name)
	}
	return fmt.Sprintf("spec.layers[%d]", list[0]), strings.Join(n, ", "), expanded
}

func layerIndex(f *schema.Fleet) map[string]int {
	idx := make(map[string]int, len(f.Spec.Layers))
	for i, l := range f.Spec.Layers {
		idx[l.Name] = i
	}
	return idx
}

func sortedBuilds(m *Model) []string {
	out := make([]string, 0, len(m.Builds))
	for p := range m.Builds {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Check reports, located at the layer in fleet.yaml, what Flux would refuse
// or what would put a credential in Git, in what each cluster receives:
//
//   - a variable a layer's objects use that a cluster does not define (Flux
//     2.9 substitutes strictly: the reconcile fails), once per layer,
//     variable and file, naming the clusters;
//   - a post-build substitution that fails for another reason;
//   - a value Kubernetes takes only as a string that is not one;
//   - a Secret holding plaintext (Plaintext's findings), a chart's included;
//   - a HelmRelease whose chart the renderer refuses (Options.Charts).
func (m *Model) Check(f *schema.Fleet) problem.Errors {
	order, found := m.issues(f)
	var errs problem.Errors
	for _, k := range order {
		l := f.Spec.Layers[k.layer]
		at := fmt.Sprintf("spec.layers[%d]", k.layer)
		file, obj := inert.Quote(k.file), k.quoted()
		switch k.what {
		case "missing":
			errs = append(errs, f.At(problem.Other(at,
				"layer %s: ${%s} in %s (%s) is not defined for %s, and Flux 2.9 substitutes strictly (the reconcile fails): want a label %s on the cluster, spec.layers[%d].substitute.%s, or a default ${%s:=VALUE}",
				l.Name, k.ok, file, obj, problem.Clusters(found[k], ""), k.ok, k.layer, k.ok, k.ok)))
		case "failed":
			errs = append(errs, f.At(problem.Other(at, "layer %s: %s, for %s (Flux fails the reconcile)", l.Name, k.ok, problem.Clusters(found[k], ""))))
		case "type":
			errs = append(errs, f.At(problem.Other(at,
				"layer %s: %s (%s): %s is not a string in what %s (the layer's build with post-build substitution), and the API server refuses it: want a string (post-build substitution decodes a value that reads as a number or boolean as one, whatever quotes the manifest had)",
				l.Name, file, obj, inert.Quote(k.ok), problem.Clusters(found[k], "receive"))))
		case "plaintext":
			errs = append(errs, k.finding(f, found[k]).FieldError(f))
		}
	}
	errs = append(errs, m.chartErrors(f, false)...)
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

// Plaintext returns the Secrets holding plaintext (secrets.ObjectProblem) in
// what each cluster receives, whatever made them one: a file, a generator, a
// patch, a replacement or a substituted variable; one finding per layer,
// file, object and problem, naming the clusters, never a value. An Argo CD
// cluster Secret that holds no credential passes, as in the file scan.
func (m *Model) Plaintext(f *schema.Fleet) []secrets.Finding {
	order, found := m.issues(f)
	var out []secrets.Finding
	for _, k := range order {
		if k.what == "plaintext" {
			out = append(out, k.finding(f, found[k]))
		}
	}
	return out
}

// issue is one problem Check reports: of a layer, a kind ("missing",
// "failed", "type", "plaintext"), the file and object it is in (if any) and
// what is wrong (the variable, the error, the field or the problem).
type issue struct {
	layer                             int
	what, file, kind, namespace, name string
	ok                                string
	// via names the HelmRelease whose chart made the object.
	via string
}

// quoted names k's object as Describe does, each untrusted part (a layer
// writes them) quoted when it is not a plain token (inert.Quote), so that no
// name reads as another or breaks the message's line.
func (k issue) quoted() string {
	name := k.name
	if k.namespace != "" {
		name = k.namespace + "/" + name
	}
	return inert.Quote(k.kind) + " " + inert.Quote(name)
}

func (k issue) finding(f *schema.Fleet, clusters []string) secrets.Finding {
	return secrets.Finding{File: k.file, Kind: k.kind, Namespace: k.namespace, Name: k.name, Problem: k.ok,
		Layer: f.Spec.Layers[k.layer].Name, Clusters: clusters, Via: k.via}
}

// issues returns every issue of what the clusters receive, in the order of
// the sets and of spec.layers, with the clusters that receive each.
func (m *Model) issues(f *schema.Fleet) ([]issue, map[issue][]string) {
	idx := layerIndex(f)
	found := map[issue][]string{}
	var order []issue
	for _, s := range m.Sets {
		byLayer := map[int][]string{} // → clusters receiving s from that layer
		for _, u := range s.Units {
			byLayer[idx[u.Layer]] = append(byLayer[idx[u.Layer]], u.Cluster)
		}
		for _, li := range slices.Sorted(maps.Keys(byLayer)) {
			note := func(what string, o *Object, ok string) {
				k := issue{layer: li, what: what, ok: ok}
				if s.Chart() {
					k.via = "HelmRelease " + s.Release
				}
				if o != nil {
					k.file, k.kind, k.namespace, k.name = o.Origin, o.Kind, o.Namespace, o.Name
				}
				if len(found[k]) == 0 {
					order = append(order, k)
				}
				for _, c := range byLayer[li] { // a cluster receives a set once per layer
					if l := found[k]; len(l) == 0 || l[len(l)-1] != c {
						found[k] = append(found[k], c)
					}
				}
			}
			switch {
			case len(s.Missing) > 0:
				for _, o := range s.build.Objects {
					if o.optOut {
						continue
					}
					for _, v := range o.tp.missing(s.vars) {
						note("missing", o, v)
					}
				}
			case s.Err != nil:
				note("failed", nil, s.Err.Error())
			default:
				for _, o := range s.Objects {
					if p := secrets.ObjectProblem(o.Map); p != "" && !publicArgoCD(o) {
						note("plaintext", o, p)
					}
					if s.Chart() {
						continue // helm-controller applies it, not kustomize-controller
					}
					for _, field := range notStrings(o) {
						note("type", o, field)
					}
				}
			}
		}
	}
	return order, found
}

// publicArgoCD reports whether o is an Argo CD cluster Secret that holds no
// credential (secrets.PublicArgoCDCluster), which the file scan lets through
// in plaintext too.
func publicArgoCD(o *Object) bool {
	if o.Kind != "Secret" {
		return false
	}
	y, err := o.YAML()
	return err == nil && secrets.PublicArgoCDCluster(y)
}

// notStrings returns the fields of o, a received object, that Kubernetes
// takes only as strings and that hold something else: every label and
// annotation, and the values of a ConfigMap's data and binaryData and a
// Secret's data and stringData. kustomize-controller's apply fails on them;
// post-build substitution makes them (`port: ${port}` with port=80).
func notStrings(o *Object) []string {
	var out []string
	check := func(prefix string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for _, k := range sortedKeys(m) {
			if _, ok := m[k].(string); !ok && m[k] != nil {
				out = append(out, prefix+"."+k)
			}
		}
	}
	if md, ok := o.Map["metadata"].(map[string]any); ok {
		check("metadata.labels", md["labels"])
		check("metadata.annotations", md["annotations"])
	}
	if o.APIVersion == "v1" {
		switch o.Kind {
		case "ConfigMap":
			check("data", o.Map["data"])
			check("binaryData", o.Map["binaryData"])
		case "Secret":
			check("data", o.Map["data"])
			check("stringData", o.Map["stringData"])
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Decrypts reports whether what cluster receives from layer holds
// SOPS-encrypted content that kustomize-controller must decrypt
// (secrets.Encrypted): a SOPS-encrypted object, or a Secret generated from
// SOPS-encrypted files.
func (m *Model) Decrypts(cluster, layer string) bool {
	s := m.Received(cluster, layer)
	if s == nil {
		return false
	}
	objs := s.Objects
	if objs == nil && s.build != nil {
		objs = s.build.Objects
	}
	for _, o := range objs {
		if secrets.Encrypted(o.Map) {
			return true
		}
	}
	return false
}
