package layers

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/yaml"
)

// Object is one object a cluster receives from a layer: of the layer's
// build, or of its post-build substitution for some clusters.
type Object struct {
	APIVersion, Kind, Namespace, Name string
	// Origin is the file the object came from, slash-separated and relative
	// to the build's root (the folder of fleet.yaml), or for a generated
	// object (configMapGenerator, secretGenerator) the kustomization that
	// generated it.
	Origin string
	// Map is the object as plain values (JSON types), for checks that read
	// it. Do not change it: objects are shared between clusters.
	Map map[string]any

	res *resource.Resource
	// tp is the object's YAML parsed for substitution (build objects only).
	tp     *template
	optOut bool
}

// newObject makes an Object of a build's resource.
func newObject(res *resource.Resource, origin string) (*Object, error) {
	m, err := res.Map()
	if err != nil {
		return nil, err
	}
	return &Object{
		APIVersion: res.GetApiVersion(), Kind: res.GetKind(), Namespace: res.GetNamespace(), Name: res.GetName(),
		Origin: origin, Map: m, res: res,
	}, nil
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
	b, err := json.Marshal(o.Map)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// YAML returns the object as kustomize-controller (or, for a chart's,
// helm-controller) applies it.
func (o *Object) YAML() ([]byte, error) {
	if o.res == nil {
		return yaml.Marshal(o.Map)
	}
	return o.res.AsYAML()
}
