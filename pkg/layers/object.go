package layers

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/yaml"
)

// Object is one object a cluster receives: of a build, of its post-build
// substitution for some clusters, of a bundle or of a rendered chart.
type Object struct {
	APIVersion, Kind, Namespace, Name string
	// Origin is the file the object came from, slash-separated and relative
	// to the build's root (the folder of fleet.yaml), or for a generated
	// object (configMapGenerator, secretGenerator) the kustomization that
	// generated it; a chart renderer sets its template.
	Origin string
	// value is the object as plain values (Map); nil after Model.Compact
	// when made is set.
	value map[string]any
	// made makes the values of an object post-build substitution made the
	// fast way (slots.go) again: the build object's tree with the cluster's
	// strings in it. After Model.Compact the model holds per cluster only
	// those strings, not a copy of every map on their paths.
	made made

	// tp is the object's YAML parsed for substitution (build objects only;
	// nil for an object of a bundle or a chart).
	tp     *template
	optOut bool
}

// Map returns the object as plain values (as yaml.v3 decodes it: strings,
// bools, int or float64 numbers, maps, slices), for checks that read it. Do
// not change it: objects share their parts between clusters. After
// Model.Compact, an object of a cluster's post-build substitution is made on
// each call (its maps on the way to the substituted strings are new, the
// rest is the build object's): a reader of several fields calls it once.
func (o *Object) Map() map[string]any {
	if o.value == nil && o.made.s != nil {
		return o.made.value()
	}
	return o.value
}

// Has reports whether the object holds a field at path (map keys from its
// root). Substitution changes strings, never which fields there are (slots
// go the slow way when a value could change how the YAML parses): after
// Model.Compact, an object of a cluster's substitution answers from the
// tree its strings are put into, without being made again.
func (o *Object) Has(path ...string) bool {
	v := o.value
	if v == nil && o.made.s != nil {
		v = o.made.s.base
	}
	for i, k := range path {
		x, ok := v[k]
		if !ok {
			return false
		}
		if i == len(path)-1 {
			return true
		}
		if v, ok = x.(map[string]any); !ok {
			return false
		}
	}
	return false
}

// NewObject makes an Object of m, the object as plain JSON values (a chart
// renderer's output), from origin. m is kept, not copied: the caller must not
// change it afterwards. It fails when m lacks apiVersion, kind or
// metadata.name, which no applier takes.
func NewObject(m map[string]any, origin string) (*Object, error) {
	o := &Object{Origin: origin, value: m}
	o.APIVersion, _ = m["apiVersion"].(string)
	o.Kind, _ = m["kind"].(string)
	if md, ok := m["metadata"].(map[string]any); ok {
		o.Namespace, _ = md["namespace"].(string)
		o.Name, _ = md["name"].(string)
	}
	if o.APIVersion == "" || o.Kind == "" || o.Name == "" {
		return nil, errors.New("an object without apiVersion, kind or metadata.name")
	}
	return o, nil
}

// buildObject makes an Object of a build's resource: its values and, for
// substitution, its YAML as Flux substitutes it. The resource is not kept.
func buildObject(res *resource.Resource, origin string) (*Object, error) {
	m, err := res.Map()
	if err != nil {
		return nil, err
	}
	text, err := res.AsYAML()
	if err != nil {
		return nil, err
	}
	o := &Object{
		APIVersion: res.GetApiVersion(), Kind: res.GetKind(), Namespace: res.GetNamespace(), Name: res.GetName(),
		Origin: origin, value: m, optOut: optsOut(res),
	}
	o.tp = newTemplate(string(text))
	return o, nil
}

// IsHelmRelease reports whether o is a Flux HelmRelease.
func (o *Object) IsHelmRelease() bool {
	return o.Kind == helmReleaseKind && group(o.APIVersion) == helmFluxGroup
}

// Describe names the object without quoting any of its values: kind and
// namespace/name.
func (o *Object) Describe() string {
	ns := o.Namespace
	if ns != "" {
		ns += "/"
	}
	return o.Kind + " " + ns + o.Name
}

// Key identifies the object in what one cluster receives from one layer:
// apiVersion, kind, namespace and name.
func (o *Object) Key() string {
	return o.APIVersion + "\x00" + o.Kind + "\x00" + o.Namespace + "\x00" + o.Name
}

// Digest is a hash of the object's content (its JSON encoding, keys sorted):
// equal for equal objects, whatever their YAML spelling.
func (o *Object) Digest() string {
	b, err := json.Marshal(o.Map())
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// YAML returns the object as YAML (keys sorted): what the cluster applies.
func (o *Object) YAML() ([]byte, error) { return yaml.Marshal(o.Map()) }

// decodeJSON decodes one JSON object into plain values as kustomize's
// resource (yaml.v3 under kyaml) reads JSON: an integral number is an int64
// (an int, uint64 past it), any other number a float64. It is the decoding of Flux's
// res.UnmarshalJSON followed by res.Map, without the YAML node tree.
func decodeJSON(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	numbers(m)
	return m, nil
}

// numbers replaces every json.Number below v by int64, uint64 or float64.
func numbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return int(i)
		}
		if u, err := strconv.ParseUint(string(v), 10, 64); err == nil {
			return u
		}
		f, err := v.Float64()
		if err != nil {
			return math.Inf(1)
		}
		return f
	}
	return v
}

// share returns n with every part equal to the same part of o replaced by
// o's (o itself when n equals o), and whether n equals o. n is changed in
// place; o is not.
func share(n, o any) (any, bool) {
	switch nv := n.(type) {
	case map[string]any:
		ov, ok := o.(map[string]any)
		if !ok {
			return n, false
		}
		same := len(nv) == len(ov)
		for k, e := range nv {
			oe, ok := ov[k]
			if !ok {
				same = false
				continue
			}
			s, eq := share(e, oe)
			nv[k] = s
			same = same && eq
		}
		if same {
			return o, true
		}
		return nv, false
	case []any:
		ov, ok := o.([]any)
		if !ok {
			return n, false
		}
		same := len(nv) == len(ov)
		for i, e := range nv {
			if i >= len(ov) {
				break
			}
			s, eq := share(e, ov[i])
			nv[i] = s
			same = same && eq
		}
		if same {
			return o, true
		}
		return nv, false
	case string, bool, int, float64, uint64, nil:
		if n == o {
			return o, true
		}
	}
	return n, false
}
