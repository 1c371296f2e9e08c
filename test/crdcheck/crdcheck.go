// Package crdcheck validates Kubernetes objects the way an API server would:
// custom resources against the openAPIV3Schema (and CEL rules) of the upstream
// CustomResourceDefinitions embedded under crds/, reporting every field that
// structural pruning would silently drop; core kinds (Secret, ConfigMap,
// Namespace) by strict decoding into the k8s.io/api types. It is meant for
// tests: it proves that what fleetgen renders is what the clusters accept.
package crdcheck

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

//go:embed crds
var crdFS embed.FS

// GVK names a kind in a version of an API group ("" group for core).
type GVK struct {
	Group, Version, Kind string
}

func (g GVK) String() string {
	if g.Group == "" {
		return g.Version + "/" + g.Kind
	}
	return g.Group + "/" + g.Version + "/" + g.Kind
}

type crdSchema struct {
	source     string // the embedded file, e.g. crds/compat/fleet-v0.13.15/fleet-crds.yaml
	namespaced bool
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator // nil when the schema has no x-kubernetes-validations
}

var (
	loadOnce sync.Once
	schemas  map[GVK][]*crdSchema
	loadErr  error
)

// load parses every embedded CRD once. A kind may have several schemas: the
// current release's (crds/fleet: Fleet v0.16.1) and an older supported one's
// (crds/compat/fleet-v0.13.15), in path order, compat first.
func load() (map[GVK][]*crdSchema, error) {
	loadOnce.Do(func() {
		schemas = map[GVK][]*crdSchema{}
		loadErr = fs.WalkDir(crdFS, "crds", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "examples" {
				return fs.SkipDir
			}
			if d.IsDir() || path.Ext(p) != ".yaml" {
				return nil
			}
			data, err := crdFS.ReadFile(p)
			if err != nil {
				return err
			}
			for i, doc := range SplitDocuments(data) {
				if err := addCRD(p, doc); err != nil {
					return fmt.Errorf("%s document %d: %w", p, i, err)
				}
			}
			return nil
		})
	})
	return schemas, loadErr
}

func addCRD(source string, doc []byte) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(doc, &crd); err != nil {
		return err
	}
	if crd.Kind != "CustomResourceDefinition" {
		return nil
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			return fmt.Errorf("%s %s: convert schema: %w", crd.Name, v.Name, err)
		}
		s, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return fmt.Errorf("%s %s: structural schema: %w", crd.Name, v.Name, err)
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
		if err != nil {
			return fmt.Errorf("%s %s: schema validator: %w", crd.Name, v.Name, err)
		}
		gvk := GVK{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		schemas[gvk] = append(schemas[gvk], &crdSchema{
			source:     source,
			namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
			structural: s,
			validator:  validator,
			cel:        cel.NewValidator(s, true, celconfig.PerCallLimit),
		})
	}
	return nil
}

// Kinds returns every custom resource kind the embedded CRDs serve, sorted.
func Kinds() ([]GVK, error) {
	m, err := load()
	if err != nil {
		return nil, err
	}
	out := make([]GVK, 0, len(m))
	for g := range m {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// Validate checks one YAML (or JSON) document holding one object. Custom
// resources are validated against every embedded CRD that serves their kind
// (Fleet kinds against both v0.16.1 and v0.13.15): schema and CEL errors, and
// every field structural pruning would drop, are reported, each naming the
// CRD file when several serve the kind. Secret,
// ConfigMap and Namespace are strictly decoded into k8s.io/api/core/v1. Any
// other kind is an error. The error lists every problem, one per line.
func Validate(doc []byte) error {
	var obj map[string]any
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	if obj == nil {
		return errors.New("empty document")
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" || kind == "" {
		return errors.New("apiVersion and kind are required")
	}
	gvk := GVK{Version: apiVersion, Kind: kind}
	if i := strings.LastIndexByte(apiVersion, '/'); i >= 0 {
		gvk.Group, gvk.Version = apiVersion[:i], apiVersion[i+1:]
	}

	var errs []string
	namespaced := true
	if gvk.Group == "" && gvk.Version == "v1" {
		var target any
		switch kind {
		case "Secret":
			target = &corev1.Secret{}
		case "ConfigMap":
			target = &corev1.ConfigMap{}
		case "Namespace":
			target, namespaced = &corev1.Namespace{}, false
		default:
			return fmt.Errorf("%s: kind not supported by crdcheck", gvk)
		}
		if err := yaml.UnmarshalStrict(doc, target); err != nil {
			errs = append(errs, err.Error())
		}
	} else {
		m, err := load()
		if err != nil {
			return fmt.Errorf("load CRDs: %w", err)
		}
		set, ok := m[gvk]
		if !ok {
			return fmt.Errorf("%s: no CRD serves this kind", gvk)
		}
		for _, s := range set {
			if s.namespaced != set[0].namespaced {
				errs = append(errs, fmt.Sprintf("%s: scope differs from %s", s.source, set[0].source))
			}
			for _, e := range validateCustom(obj, s) {
				if len(set) > 1 {
					e = s.source + ": " + e
				}
				errs = append(errs, e)
			}
		}
		namespaced = set[0].namespaced
	}
	errs = append(errs, validateMeta(obj["metadata"], namespaced)...)
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s", gvk, strings.Join(errs, "\n"))
	}
	return nil
}

func validateCustom(obj map[string]any, s *crdSchema) []string {
	var errs []string
	for _, e := range apiservervalidation.ValidateCustomResource(nil, obj, s.validator) {
		errs = append(errs, e.Error())
	}
	if s.cel != nil {
		celErrs, _ := s.cel.Validate(context.Background(), nil, s.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		for _, e := range celErrs {
			errs = append(errs, e.Error())
		}
	}
	// Pruning mutates: work on a deep copy (JSON-compatible values only).
	clone := structuralschema.JSON{Object: obj}.DeepCopy().Object
	pruned := pruning.PruneWithOptions(clone, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	for _, p := range pruned {
		errs = append(errs, fmt.Sprintf("%s: unknown field (pruned by the API server)", p))
	}
	return errs
}

// validateMeta strictly decodes metadata and checks names and labels as the
// API server does.
func validateMeta(raw any, namespaced bool) []string {
	m, ok := raw.(map[string]any)
	if !ok {
		return []string{"metadata: required object"}
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return []string{"metadata: " + err.Error()}
	}
	var meta metav1.ObjectMeta
	if err := yaml.UnmarshalStrict(b, &meta); err != nil {
		return []string{"metadata: " + err.Error()}
	}
	var errs []string
	if meta.Name == "" {
		errs = append(errs, "metadata.name: required")
	}
	for _, msg := range validation.IsDNS1123Subdomain(meta.Name) {
		errs = append(errs, "metadata.name: "+msg)
	}
	if namespaced && meta.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(meta.Namespace) {
			errs = append(errs, "metadata.namespace: "+msg)
		}
	}
	if !namespaced && meta.Namespace != "" {
		errs = append(errs, "metadata.namespace: not allowed on a cluster-scoped kind")
	}
	for _, e := range metav1validation.ValidateLabels(meta.Labels, field.NewPath("metadata", "labels")) {
		errs = append(errs, e.Error())
	}
	return errs
}

// SplitDocuments splits a YAML stream at "---" lines and drops documents that
// hold only comments or whitespace.
func SplitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if hasContent(cur.Bytes()) {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		t := bytes.TrimRight(line, " \t\r\n")
		if bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			flush()
			continue
		}
		cur.Write(line)
	}
	flush()
	return docs
}

func hasContent(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' {
			return true
		}
	}
	return false
}
