package secrets

import (
	"fmt"
	"slices"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Finding is one credential that would reach Git in plaintext, as data, never
// a value: Plaintext finds them in files, layers.Model.Plaintext in what each
// cluster receives. Their messages are made here and nowhere else.
type Finding struct {
	File  string // slash-separated, relative to the folder scanned
	Entry string // where in File, when not an object: "secretGenerator[0]", "document 2"
	// Kind, Namespace and Name name the object ("Secret"), or the Secret an
	// Entry makes; Kind is "" when the finding is about File or Entry only.
	Kind, Namespace, Name string
	// Problem follows the object ("holds unencrypted data"), or is the whole
	// finding when there is none.
	Problem string
	// Layer and Clusters say, for what a layer's build gives clusters, which
	// layer and which clusters receive the object; Delivery is set instead of
	// Layer for a bundle of a delivery from the fleet's own source.
	Layer, Delivery string
	Clusters        []string
	// Via names what leads from the layer to the object when it is not the
	// layer's own build: the Flux Kustomizations followed ("Kustomization
	// apps/sub (apps/sub.yaml)"), the HelmRelease whose chart rendered it
	// ("HelmRelease apps/web": File is then the chart's template), or the
	// bundle.
	Via string
}

// key is what a finding is about, whoever found it and whatever is wrong.
type key struct{ file, entry, kind, namespace, name string }

func (fd Finding) key() key { return key{fd.File, fd.Entry, fd.Kind, fd.Namespace, fd.Name} }

// Unreported returns the findings of found whose file and object no finding
// of reported is about: the file scan's findings that the model's guard,
// which says more (the layer and the clusters), does not report already.
func Unreported(found, reported []Finding) []Finding {
	seen := make(map[key]bool, len(reported))
	for _, r := range reported {
		seen[r.key()] = true
	}
	return slices.DeleteFunc(slices.Clone(found), func(fd Finding) bool { return seen[fd.key()] })
}

// String is the finding on one line, as the file scan reports it: "path:
// Secret ns/name holds unencrypted data", "path: secretGenerator[0] (Secret
// s) makes a Secret from literals, …", "path: document 2 is not valid YAML, …".
func (fd Finding) String() string {
	obj := ""
	if fd.Kind != "" {
		obj = fd.Kind + " " + qualified(fd.Namespace, fd.Name)
	}
	if fd.Entry != "" && obj != "" {
		obj = "(" + obj + ")"
	}
	words := []string{fd.File + ":", fd.Entry, obj, fd.Problem}
	return strings.Join(slices.DeleteFunc(words, func(w string) bool { return w == "" }), " ")
}

// FieldError is the finding as a problem of fleet.yaml f: at the layer that
// gives the object to the clusters (spec.layers[i]), the file and object
// names quoted (inert.Quote: a layer writes them); or, for a file of a layer
// folder (no Layer), at spec.layers.
func (fd Finding) FieldError(f *schema.Fleet) *problem.FieldError {
	fix := "encrypt it with SOPS (docs/secrets.md)"
	if strings.Contains(fd.Problem, "annotation") {
		fix = "remove the annotation (SOPS encrypts only data and stringData)"
	}
	obj := inert.Quote(fd.Kind) + " " + inert.Quote(qualified(fd.Namespace, fd.Name))
	if fd.Delivery != "" {
		i := slices.IndexFunc(f.Spec.Deliveries, func(d schema.Delivery) bool { return d.Name == fd.Delivery })
		return f.At(problem.Other(fmt.Sprintf("spec.deliveries[%d]", i),
			"delivery %s: %s: %s: %s %s in what %s (as Fleet's agent renders it): %s; fleetgen publishes no plaintext credential",
			fd.Delivery, fd.Via, inert.Quote(fd.File), obj, fd.Problem, problem.Clusters(fd.Clusters, "receive"), fix))
	}
	if fd.Layer == "" {
		return f.At(problem.Other("spec.layers", "%s, in a file publish copies from a layer folder: encrypt it with SOPS (docs/secrets.md) or remove it; fleetgen publishes no plaintext credential", fd))
	}
	i := slices.IndexFunc(f.Spec.Layers, func(l schema.Layer) bool { return l.Name == fd.Layer })
	how := "the layer's build with post-build substitution"
	switch {
	case strings.Contains(fd.Via, "HelmRelease "):
		// File is the chart's template; the value came from the
		// HelmRelease's values, most likely.
		how = "through " + fd.Via + ", its chart rendered as helm-controller renders it"
		fix = "give the chart an existing Secret that a layer holds SOPS-encrypted instead of the value"
	case fd.Via != "":
		how = "through " + fd.Via + ", built as kustomize-controller builds it"
	}
	return f.At(problem.Other(fmt.Sprintf("spec.layers[%d]", i),
		"layer %s: %s: %s %s in what %s (%s): %s; fleetgen publishes no plaintext credential",
		fd.Layer, inert.Quote(fd.File), obj, fd.Problem, problem.Clusters(fd.Clusters, "receive"), how, fix))
}

// maxListed bounds how many findings one error lists.
const maxListed = 20

// List returns found as the lines of an error, each indented on a line of
// its own, at most 20 and "… and N more".
func List(found []Finding) string {
	var b strings.Builder
	for i, fd := range found {
		if i == maxListed {
			fmt.Fprintf(&b, "\n  … and %d more", len(found)-maxListed)
			break
		}
		b.WriteString("\n  " + fd.String())
	}
	return b.String()
}
