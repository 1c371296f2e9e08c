package layers

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/secrets"
)

// Load builds the model of fleet f (loaded and defaulted): every cluster
// with every layer it selects (FromFleet), built in the folder of fleet.yaml.
//
// A layer folder that does not exist or does not build is a problem of
// fleet.yaml, located at the first layer whose path expands to it and naming
// the cluster whose labels expanded it; all of them are returned at once as
// problem.Errors. A bound of Options is an input error (*problem.InvalidError);
// an I/O failure or a panic in kustomize is a runtime error.
func Load(f *schema.Fleet) (*Model, error) {
	return load(f, FromFleet(f))
}

// LoadCluster is Load for the layers of one cluster of f only (what
// `fleetgen targets` reads of the cluster that runs Argo CD).
func LoadCluster(f *schema.Fleet, cluster string) (*Model, error) {
	var units []Unit
	for _, u := range FromFleet(f) {
		if u.Cluster == cluster {
			units = append(units, u)
		}
	}
	return load(f, units)
}

func load(f *schema.Fleet, units []Unit) (*Model, error) {
	dir := f.Dir
	if dir == "" {
		dir = "."
	}
	m, err := New(dir, units, DefaultOptions())
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
			errs = append(errs, f.Errorf(at+".path", "layer %s: folder %s%s does not exist: want a folder inside the folder of fleet.yaml", names, p, expanded))
			continue
		}
		errs = append(errs, f.Errorf(at+".path", "layer %s: folder %s%s does not build with kustomize: %v", names, p, expanded, b.Err))
	}
	if len(errs) > 0 {
		return nil, schema.Sorted(errs)
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
//   - a Secret holding plaintext (secrets.ObjectProblem), whatever made it
//     one: a file, a generator, a patch, a replacement or a substituted
//     variable; once per layer, file, object and problem, naming the
//     clusters, never a value.
func (m *Model) Check(f *schema.Fleet) problem.Errors {
	idx := layerIndex(f)
	type key struct {
		layer               int
		what, file, obj, ok string
	}
	found := map[key][]string{} // → clusters
	var order []key
	note := func(k key, units []Unit) {
		for _, u := range units {
			if u.Layer != f.Spec.Layers[k.layer].Name {
				continue
			}
			if len(found[k]) == 0 {
				order = append(order, k)
			}
			if l := found[k]; len(l) == 0 || l[len(l)-1] != u.Cluster {
				found[k] = append(found[k], u.Cluster)
			}
		}
	}
	for _, s := range m.Sets {
		layers := map[int]bool{}
		for _, u := range s.Units {
			layers[idx[u.Layer]] = true
		}
		for li := range layers {
			switch {
			case len(s.Missing) > 0:
				for _, o := range s.build.Objects {
					if o.optOut {
						continue
					}
					for _, v := range o.tp.missing(s.vars) {
						note(key{layer: li, what: "missing", file: inert.Quote(o.Origin), obj: quoted(o), ok: v}, s.Units)
					}
				}
			case s.Err != nil:
				note(key{layer: li, what: "failed", ok: s.Err.Error()}, s.Units)
			default:
				for _, o := range s.Objects {
					if p := secrets.ObjectProblem(o.Map); p != "" && !publicArgoCD(o) {
						note(key{layer: li, what: "plaintext", file: inert.Quote(o.Origin), obj: quoted(o), ok: p}, s.Units)
					}
					for _, field := range notStrings(o) {
						note(key{layer: li, what: "type", file: inert.Quote(o.Origin), obj: quoted(o), ok: inert.Quote(field)}, s.Units)
					}
				}
			}
		}
	}
	var errs problem.Errors
	for _, k := range order {
		l := f.Spec.Layers[k.layer]
		at := fmt.Sprintf("spec.layers[%d]", k.layer)
		which := clusterList(found[k])
		switch k.what {
		case "missing":
			errs = append(errs, f.Errorf(at,
				"layer %s: ${%s} in %s (%s) is not defined for %s, and Flux 2.9 substitutes strictly (the reconcile fails): want a label %s on the cluster, spec.layers[%d].substitute.%s, or a default ${%s:=VALUE}",
				l.Name, k.ok, k.file, k.obj, which, k.ok, k.layer, k.ok, k.ok))
		case "failed":
			errs = append(errs, f.Errorf(at, "layer %s: %s, for %s (Flux fails the reconcile)", l.Name, k.ok, which))
		case "type":
			errs = append(errs, f.Errorf(at,
				"layer %s: %s (%s): %s is not a string in what %s (the layer's build with post-build substitution), and the API server refuses it: want a string (post-build substitution decodes a value that reads as a number or boolean as one, whatever quotes the manifest had)",
				l.Name, k.file, k.obj, k.ok, receives(found[k])))
		case "plaintext":
			fix := "encrypt it with SOPS (docs/secrets.md)"
			if strings.Contains(k.ok, "annotation") {
				fix = "remove the annotation (SOPS encrypts only data and stringData)"
			}
			errs = append(errs, f.Errorf(at,
				"layer %s: %s: %s %s in what %s (the layer's build with post-build substitution): %s; fleetgen publishes no plaintext credential",
				l.Name, k.file, k.obj, k.ok, receives(found[k]), fix))
		}
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

// receives is "cluster a receives" or "clusters a, b, … receive".
func receives(clusters []string) string {
	if len(clusters) == 1 {
		return clusterList(clusters) + " receives"
	}
	return clusterList(clusters) + " receive"
}

// quoted names o as Describe does, each untrusted part (a layer writes
// them) quoted when it is not a plain token (inert.Quote), so that no name
// reads as another or breaks the message's line.
func quoted(o *Object) string {
	name := o.Name
	if o.Namespace != "" {
		name = o.Namespace + "/" + name
	}
	return inert.Quote(o.Kind) + " " + inert.Quote(name)
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

// clusterList names clusters: "cluster a", or "clusters a, b, c and 2 more".
func clusterList(clusters []string) string {
	sort.Strings(clusters)
	if len(clusters) == 1 {
		return "cluster " + clusters[0]
	}
	s := "clusters " + strings.Join(clusters[:min(3, len(clusters))], ", ")
	if len(clusters) > 3 {
		s += fmt.Sprintf(" and %d more", len(clusters)-3)
	}
	return s
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
