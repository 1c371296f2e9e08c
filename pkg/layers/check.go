package layers

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/secrets"
)

// Check reports, located at the layer (or delivery) in fleet.yaml, what Flux
// or Fleet would refuse or what would put a credential in Git, in what each
// cluster receives:
//
//   - a variable a layer's objects use that a cluster does not define (Flux
//     2.9 substitutes strictly: the reconcile fails), once per layer,
//     variable and file, naming the clusters;
//   - a post-build substitution that fails for another reason;
//   - a value Kubernetes takes only as a string that is not one;
//   - a Secret holding plaintext (Plaintext's findings);
//   - a followed Kustomization that does not decode, nests past MaxDepth,
//     whose folder does not exist or does not build, and a bundle that
//     cannot be read or rendered;
//   - input inside the output (SPEC §6): a followed Kustomization's path or
//     a file any build or bundle read inside the rendered tree
//     (spec.source.path's manager/, clusters/ and agents/).
func (m *Model) Check(f *schema.Fleet) problem.Errors {
	order, found := m.issues(f)
	var errs problem.Errors
	for _, k := range order {
		at, who := k.where(f)
		file, obj := inert.Quote(k.file), k.quoted()
		cs := found[k]
		switch k.what {
		case "missing":
			fix := fmt.Sprintf("a label %s on the cluster, %s.substitute.%s", k.ok, at, k.ok)
			if k.via != "" {
				fix = "the variable in the Kustomization's spec.postBuild.substitute or substituteFrom"
			}
			errs = append(errs, f.At(problem.Other(at,
				"%s: ${%s} in %s (%s) is not defined for %s, and Flux 2.9 substitutes strictly (the reconcile fails): want %s, or a default ${%s:=VALUE}",
				who, k.ok, file, obj, problem.Clusters(cs, ""), fix, k.ok)))
		case "failed":
			errs = append(errs, f.At(problem.Other(at, "%s: %s, for %s (Flux fails the reconcile)", who, k.ok, problem.Clusters(cs, ""))))
		case "type":
			errs = append(errs, f.At(problem.Other(at,
				"%s: %s (%s): %s is not a string in what %s (the build with post-build substitution), and the API server refuses it: want a string (post-build substitution decodes a value that reads as a number or boolean as one, whatever quotes the manifest had)",
				who, file, obj, inert.Quote(k.ok), problem.Clusters(cs, "receive"))))
		case "output":
			more := ", which is"
			if k.name != "0" {
				more = " and " + k.name + " more files, which are"
			}
			errs = append(errs, f.At(problem.Other(at,
				"%s: the build of folder %s reads %s%s in fleetgen's rendered tree (%s), for %s: input and output may not overlap, want input outside it",
				who, inert.Quote(k.ok), file, more, renderedList(f), problem.Clusters(cs, ""))))
		case "plaintext":
			errs = append(errs, k.finding(f, cs).FieldError(f))
		}
	}
	for _, n := range m.notes {
		if n.warn {
			continue
		}
		at, who := noteWhere(f, n)
		msg := n.msg
		if cs := m.noted[n]; len(cs) > 0 && cs[0] != "" {
			msg += " (" + problem.Clusters(cs, "") + ")"
		}
		errs = append(errs, f.At(problem.Other(at, "%s%s", who, msg)))
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

// Warnings returns what the model could not follow, located at the layer or
// delivery it comes through (SPEC §5: never silence): a Kustomization whose
// source fleetgen does not publish, or whose substituteFrom it cannot read, a
// HelmRelease whose chart is not rendered, a bundle it does not render. Each
// names what it is about and the clusters.
func (m *Model) Warnings(f *schema.Fleet) problem.Errors {
	var ws problem.Errors
	for _, n := range m.notes {
		if !n.warn {
			continue
		}
		at, who := noteWhere(f, n)
		msg := n.msg
		if cs := m.noted[n]; len(cs) > 0 && cs[0] != "" {
			msg += " (" + problem.Clusters(cs, "") + ")"
		}
		ws = append(ws, f.At(problem.NotFollowed(at, "%s%s", who, msg)))
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].Error() < ws[j].Error() })
	return ws
}

// note is something the model could not follow, or followed into a
// problem, for the clusters that receive it: a warning (Warnings) or an
// error (Check), located at the layer or delivery it comes through.
type note struct {
	warn bool
	// layer or delivery the note comes through.
	layer, delivery string
	// chain names the Kustomizations from the layer to where the note is
	// (or the bundle), file the file the note is about.
	chain, file string
	msg         string
}

// note records n for cluster.
func (m *Model) note(n note, cluster string) {
	if m.noted == nil {
		m.noted = map[note][]string{}
	}
	l, ok := m.noted[n]
	if !ok {
		m.notes = append(m.notes, n)
	}
	if len(l) == 0 || l[len(l)-1] != cluster {
		m.noted[n] = append(l, cluster)
	}
}

// noteWhere locates note n in f: its field and the words that start its
// message.
func noteWhere(f *schema.Fleet, n note) (at, who string) {
	if n.delivery != "" {
		i := slices.IndexFunc(f.Spec.Deliveries, func(d schema.Delivery) bool { return d.Name == n.delivery })
		return fmt.Sprintf("spec.deliveries[%d]", max(i, 0)), ""
	}
	i := layerIndex(f)[n.layer]
	who = "layer " + n.layer + ": "
	if n.file != "" {
		who += inert.Quote(n.file) + ": "
	}
	if n.chain != "" {
		who += "through " + n.chain + ": "
	}
	return fmt.Sprintf("spec.layers[%d]", i), who
}

// renderedList names the rendered tree's folders in the source, for
// messages.
func renderedList(f *schema.Fleet) string {
	return strings.Join(f.RenderedDirs(), "/, ") + "/"
}

// Plaintext returns the Secrets holding plaintext (secrets.ObjectProblem) in
// what each cluster receives, whatever made them one: a file, a generator, a
// patch, a replacement, a substituted variable, a followed Kustomization, a
// chart or a bundle; and every Secret embedded in a Fleet Bundle's
// resources (secrets.EmbeddedProblems). One finding per layer or delivery,
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

// issue is one problem Check reports: of a layer or a delivery, through
// via (the followed Kustomizations, or a bundle), a kind ("missing",
// "failed", "type", "plaintext", "output"), the file and object it is in (if
// any) and what is wrong (the variable, the error, the field, the problem,
// the folder).
type issue struct {
	layer, delivery                   string
	via                               string
	what, file, kind, namespace, name string
	ok                                string
}

// where returns k's field in f and the words that start its messages.
func (k issue) where(f *schema.Fleet) (at, who string) {
	if k.delivery != "" {
		i := slices.IndexFunc(f.Spec.Deliveries, func(d schema.Delivery) bool { return d.Name == k.delivery })
		return fmt.Sprintf("spec.deliveries[%d]", max(i, 0)), "delivery " + k.delivery + ": " + k.via
	}
	who = "layer " + k.layer
	if k.via != "" {
		who += ": through " + k.via
	}
	return fmt.Sprintf("spec.layers[%d]", layerIndex(f)[k.layer]), who
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
		Layer: k.layer, Delivery: k.delivery, Via: k.via, Clusters: clusters}
}

// issues returns every issue of what the clusters receive, in the order of
// the sets and of spec.layers (then spec.deliveries), with the clusters that
// receive each.
func (m *Model) issues(f *schema.Fleet) ([]issue, map[issue][]string) {
	found := map[issue][]string{}
	var order []issue
	problems := map[*Object][]string{} // what is wrong with an object, found once
	output := map[*Build][]string{}    // a build's files in the rendered tree, found once
	li := layerIndex(f)
	for _, s := range m.Sets {
		via := strings.Join(s.Chain, " → ")
		if s.Delivery != "" {
			via = "bundle " + s.Path
		}
		switch {
		case s.Release != "" && s.Delivery != "": // a bundle Fleet installs with Helm
			via += " → Helm release " + s.Release
		case s.Release != "": // a chart's objects: File is its template
			via = strings.TrimPrefix(via+" → HelmRelease "+s.Release, " → ")
		}
		// A cluster receives a set once per layer or delivery.
		type owner struct{ layer, delivery string }
		by := map[owner][]string{}
		var owners []owner
		for _, u := range s.Units {
			o := owner{u.Layer, u.Delivery}
			if _, ok := by[o]; !ok {
				owners = append(owners, o)
			}
			if l := by[o]; len(l) == 0 || l[len(l)-1] != u.Cluster {
				by[o] = append(l, u.Cluster)
			}
		}
		sort.SliceStable(owners, func(i, j int) bool {
			if (owners[i].delivery == "") != (owners[j].delivery == "") {
				return owners[i].delivery == ""
			}
			return li[owners[i].layer] < li[owners[j].layer]
		})
		for _, ow := range owners {
			add := func(k issue) {
				if len(found[k]) == 0 {
					order = append(order, k)
				}
				found[k] = append(found[k], by[ow]...)
			}
			note := func(what string, o *Object, ok string) {
				k := issue{layer: ow.layer, delivery: ow.delivery, via: via, what: what, ok: ok}
				if o != nil {
					k.file, k.kind, k.namespace, k.name = o.Origin, o.Kind, o.Namespace, o.Name
				}
				add(k)
			}
			if s.build != nil {
				in, ok := output[s.build]
				if !ok {
					// Sets share builds: each build's files are looked at once.
					in = slices.DeleteFunc(slices.Clone(s.build.files), func(p string) bool { return f.InRendered(p) == "" })
					output[s.build] = in
				}
				if len(in) > 0 {
					add(issue{layer: ow.layer, delivery: ow.delivery, via: via, what: "output", file: in[0], ok: s.Path, name: strconv.Itoa(len(in) - 1)})
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
					ps, ok := problems[o]
					if !ok {
						ps = objectProblems(o)
						problems[o] = ps
					}
					for _, p := range ps {
						what, v, _ := strings.Cut(p, "\x00")
						if what == "type" && s.Release != "" {
							continue // helm-controller applies a chart's objects, not kustomize-controller
						}
						note(what, o, v)
					}
				}
			}
		}
	}
	for k, cs := range found {
		found[k] = compactClusters(cs)
	}
	return order, found
}

// compactClusters sorts nothing: it drops repeats, keeping the order in
// which clusters were found.
func compactClusters(cs []string) []string {
	seen := make(map[string]bool, len(cs))
	return slices.DeleteFunc(cs, func(c string) bool {
		if seen[c] {
			return true
		}
		seen[c] = true
		return false
	})
}

// objectProblems returns what is wrong with o, each "what\x00detail":
// plaintext in a Secret or in a Secret embedded in it, fields that are not
// strings.
func objectProblems(o *Object) []string {
	var out []string
	v := o.Map()
	if p := secrets.ObjectProblem(v); p != "" && !publicArgoCD(o) {
		out = append(out, "plaintext\x00"+p)
	}
	for _, p := range secrets.EmbeddedProblems(v) {
		out = append(out, "plaintext\x00"+p)
	}
	for _, field := range notStrings(o, v) {
		out = append(out, "type\x00"+field)
	}
	return out
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

// notStrings returns the fields of o, a received object whose values are v, that Kubernetes
// takes only as strings and that hold something else: every label and
// annotation, and the values of a ConfigMap's data and binaryData and a
// Secret's data and stringData. kustomize-controller's apply fails on them;
// post-build substitution makes them (`port: ${port}` with port=80).
func notStrings(o *Object, v map[string]any) []string {
	var out []string
	check := func(prefix string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if _, ok := m[k].(string); !ok && m[k] != nil {
				out = append(out, prefix+"."+k)
			}
		}
	}
	if md, ok := v["metadata"].(map[string]any); ok {
		check("metadata.labels", md["labels"])
		check("metadata.annotations", md["annotations"])
	}
	if o.APIVersion == "v1" {
		switch o.Kind {
		case "ConfigMap":
			check("data", v["data"])
			check("binaryData", v["binaryData"])
		case "Secret":
			check("data", v["data"])
			check("stringData", v["stringData"])
		}
	}
	return out
}

// Decrypts reports whether what cluster receives from layer's own
// Kustomization holds SOPS-encrypted content that kustomize-controller must
// decrypt (secrets.Encrypted): a SOPS-encrypted object, or a Secret
// generated from SOPS-encrypted files. kustomize-controller decrypts each
// object of the build before it substitutes variables, so the answer is the
// build's, found once per build, whatever the cluster's variables. Followed
// Kustomizations carry their own spec.decryption.
func (m *Model) Decrypts(cluster, layer string) bool {
	s := m.Received(cluster, layer)
	return s != nil && s.build != nil && s.build.encrypted
}
