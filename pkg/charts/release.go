package charts

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/strvals"

	"fleetgen.dev/fleetgen/internal/inert"
)

// Release is what rendering reads of a Flux HelmRelease
// (helm.toolkit.fluxcd.io/v2, helm-controller v1.6.4), decoded by
// ParseRelease. Field names follow the upstream API; fields that do not
// change what a chart renders are left out.
type Release struct {
	// Name and Namespace are the HelmRelease's own.
	Name, Namespace string
	Spec            ReleaseSpec
	// Fleet is set for a release Fleet's agent installs (a bundle that is a
	// Helm chart) rather than helm-controller: Name is the Helm release's
	// name, Namespace its namespace, and no helm.toolkit.fluxcd.io origin
	// labels are added.
	Fleet bool `json:"-"`
}

// ReleaseSpec is the part of HelmReleaseSpec that rendering reads.
type ReleaseSpec struct {
	Chart           *ChartTemplate    `json:"chart,omitempty"`
	ChartRef        *SourceReference  `json:"chartRef,omitempty"`
	ReleaseName     string            `json:"releaseName,omitempty"`
	TargetNamespace string            `json:"targetNamespace,omitempty"`
	Install         *Install          `json:"install,omitempty"`
	ValuesFrom      []ValuesReference `json:"valuesFrom,omitempty"`
	Values          map[string]any    `json:"values,omitempty"`
	CommonMetadata  *CommonMetadata   `json:"commonMetadata,omitempty"`
	// PostRenderers are kept as written: Render applies their kustomize
	// patches and images, and PostRenderers adds fleetgen's beside them.
	PostRenderers      []PostRenderer `json:"postRenderers,omitempty"`
	PostRenderStrategy string         `json:"postRenderStrategy,omitempty"`
}

// ChartTemplate is spec.chart.
type ChartTemplate struct {
	Spec ChartTemplateSpec `json:"spec"`
}

// ChartTemplateSpec is spec.chart.spec: a chart of a HelmRepository (HTTP or
// OCI), GitRepository or Bucket.
type ChartTemplateSpec struct {
	Chart                    string          `json:"chart"`
	Version                  string          `json:"version,omitempty"`
	SourceRef                SourceReference `json:"sourceRef"`
	ValuesFiles              []string        `json:"valuesFiles,omitempty"`
	IgnoreMissingValuesFiles bool            `json:"ignoreMissingValuesFiles,omitempty"`
}

// SourceReference is spec.chartRef or spec.chart.spec.sourceRef.
type SourceReference struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
}

// Install is the part of spec.install that changes what renders.
type Install struct {
	DisableSchemaValidation bool `json:"disableSchemaValidation,omitempty"`
	DisableHooks            bool `json:"disableHooks,omitempty"`
}

// ValuesReference is one entry of spec.valuesFrom (fluxcd/pkg/apis/meta).
type ValuesReference struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	ValuesKey  string `json:"valuesKey,omitempty"`
	TargetPath string `json:"targetPath,omitempty"`
	Optional   bool   `json:"optional,omitempty"`
	Literal    bool   `json:"literal,omitempty"`
}

// Key returns ValuesKey or its default, values.yaml.
func (r ValuesReference) Key() string {
	if r.ValuesKey == "" {
		return "values.yaml"
	}
	return r.ValuesKey
}

// CommonMetadata is spec.commonMetadata: labels and annotations set on every
// object the chart renders.
type CommonMetadata struct {
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

// PostRenderer is one entry of spec.postRenderers.
type PostRenderer struct {
	Kustomize *Kustomize `json:"kustomize,omitempty"`
}

// Kustomize is a kustomize post-renderer (fluxcd/pkg/apis/kustomize types).
type Kustomize struct {
	Patches []Patch `json:"patches,omitempty"`
	Images  []Image `json:"images,omitempty"`
}

// Patch is a kustomize patch with an optional target.
type Patch struct {
	Patch  string    `json:"patch"`
	Target *Selector `json:"target,omitempty"`
}

// Selector selects the objects a patch applies to.
type Selector struct {
	Group              string `json:"group,omitempty"`
	Version            string `json:"version,omitempty"`
	Kind               string `json:"kind,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	Name               string `json:"name,omitempty"`
	AnnotationSelector string `json:"annotationSelector,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty"`
}

// Image is a kustomize images entry.
type Image struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

// ParseRelease reads a HelmRelease given as plain JSON values (a layer
// object's Map, after post-build substitution).
func ParseRelease(obj map[string]any) (*Release, error) {
	meta, _ := obj["metadata"].(map[string]any)
	r := &Release{}
	r.Name, _ = meta["name"].(string)
	r.Namespace, _ = meta["namespace"].(string)
	b, err := json.Marshal(obj["spec"])
	if err != nil {
		return nil, fmt.Errorf("HelmRelease %s/%s: %w", r.Namespace, r.Name, err)
	}
	if err := json.Unmarshal(b, &r.Spec); err != nil {
		return nil, fmt.Errorf("HelmRelease %s/%s: spec: %s", r.Namespace, r.Name, inert.Prose(err.Error()))
	}
	return r, nil
}

// Describe names the HelmRelease: "HelmRelease namespace/name".
func (r *Release) Describe() string { return "HelmRelease " + r.Namespace + "/" + r.Name }

// HelmName is the Helm release name helm-controller installs:
// spec.releaseName, or [targetNamespace-]name, shortened past 53
// characters as helm-controller's release.ShortenName does.
func (r *Release) HelmName() string {
	n := r.Name
	switch {
	case r.Spec.ReleaseName != "":
		n = r.Spec.ReleaseName
	case r.Spec.TargetNamespace != "":
		n = r.Spec.TargetNamespace + "-" + r.Name
	}
	if len(n) <= 53 {
		return n
	}
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte(n)))
	return n[:53-13] + "-" + sum[:12]
}

// HelmNamespace is the namespace the release installs into:
// spec.targetNamespace, or the HelmRelease's.
func (r *Release) HelmNamespace() string {
	if r.Spec.TargetNamespace != "" {
		return r.Spec.TargetNamespace
	}
	return r.Namespace
}

// Lookup returns the object of the given kind, namespace and name that the
// cluster receives (a ConfigMap or Secret of the closure), as plain JSON
// values, or nil.
type Lookup func(kind, namespace, name string) map[string]any

// Note is something a render left out or stood in for, so that what it
// found is explained (`images --why`), never a value.
type Note struct {
	// Reason is one of the Note* constants.
	Reason string
	// Text says what, naming objects, keys and templates, never a value.
	Text string
}

// The reasons of a Note.
const (
	// NoteEncrypted: a valuesFrom value is SOPS-encrypted; the chart
	// rendered without it.
	NoteEncrypted = "encrypted"
	// NoteNotFound: a valuesFrom object or key is not in what the cluster
	// receives (it may be made in the cluster); the chart rendered without it.
	NoteNotFound = "not-found"
	// NoteLookup: a template calls lookup, which finds nothing offline.
	NoteLookup = "lookup"
	// NoteGenerated: a template calls a random, key-generating or clock
	// function; a fixed stand-in rendered in its place.
	NoteGenerated = "generated"
	// NoteSchema: the values schema refers to a schema outside the chart,
	// which is not fetched; the values were not validated.
	NoteSchema = "schema"
)

// Values composes the values helm-controller installs the release with, as
// fluxcd/pkg/chartutil v1.27.2's ChartValuesFromReferences does: each
// valuesFrom entry in order (a whole values document merged at the root, or
// one value set at targetPath with Helm's --set or --set-literal syntax),
// then spec.values over them. The objects come from lookup instead of a
// cluster. A value that is SOPS-encrypted (an ENC[…] envelope), and a
// reference lookup cannot find (it may be made in the cluster), are left out
// with a Note rather than failing; a reference that could never resolve (an
// unknown kind, values that do not parse) is an error.
func (r *Release) Values(lookup Lookup) (map[string]any, []Note, error) {
	result := map[string]any{}
	var notes []Note
	for i, ref := range r.Spec.ValuesFrom {
		what := fmt.Sprintf("spec.valuesFrom[%d] %s %s/%s key %s", i, ref.Kind, r.Namespace, ref.Name, inert.Quote(ref.Key()))
		if ref.Kind != "ConfigMap" && ref.Kind != "Secret" {
			return nil, nil, fmt.Errorf("%s: %s: unsupported kind: want ConfigMap or Secret", r.Describe(), what)
		}
		var obj map[string]any
		if lookup != nil {
			obj = lookup(ref.Kind, r.Namespace, ref.Name)
		}
		data, state := dataValue(obj, ref.Kind, ref.Key())
		switch state {
		case valueMissing:
			if !ref.Optional {
				notes = append(notes, Note{NoteNotFound, what + " is not in what the cluster receives: rendered without it"})
			}
			continue
		case valueEncrypted:
			notes = append(notes, Note{NoteEncrypted, what + " is SOPS-encrypted: rendered without it"})
			continue
		case valueBad:
			return nil, nil, fmt.Errorf("%s: %s: not valid base64", r.Describe(), what)
		}
		if ref.TargetPath != "" {
			result = mergeMaps(result, r.Spec.Values)
			var err error
			if ref.Literal {
				err = replacePathLiteral(result, ref.TargetPath, data)
			} else {
				err = replacePath(result, ref.TargetPath, data)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %s: set at %s: %s", r.Describe(), what, inert.Quote(ref.TargetPath), redact(err))
			}
			continue
		}
		vals, err := common.ReadValues([]byte(data))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s: not a YAML values document", r.Describe(), what)
		}
		result = mergeMaps(result, vals)
	}
	return mergeMaps(result, r.Spec.Values), notes, nil
}

type valueState int

const (
	valueFound valueState = iota
	valueMissing
	valueEncrypted
	valueBad
)

// dataValue returns obj's value at key as the API server serves it: a
// ConfigMap's data; a Secret's stringData (which the API server merges over
// data) or its data decoded from base64.
func dataValue(obj map[string]any, kind, key string) (string, valueState) {
	if obj == nil {
		return "", valueMissing
	}
	fields := []string{"data"}
	if kind == "Secret" {
		fields = []string{"stringData", "data"}
	}
	for _, f := range fields {
		m, _ := obj[f].(map[string]any)
		v, ok := m[key].(string)
		if !ok {
			continue
		}
		if sopsEnvelope(v) {
			return "", valueEncrypted
		}
		if kind == "Secret" && f == "data" {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return "", valueBad
			}
			return string(b), valueFound
		}
		return v, valueFound
	}
	return "", valueMissing
}

// sopsEnvelope reports whether v is a value SOPS encrypted.
func sopsEnvelope(v string) bool {
	return strings.HasPrefix(v, "ENC[") && strings.HasSuffix(v, "]")
}

// mergeMaps is fluxcd/pkg/chartutil's MergeMaps: b over a, maps merged
// deeply, anything else replaced.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if v, ok := v.(map[string]any); ok {
			if bv, ok := out[k]; ok {
				if bv, ok := bv.(map[string]any); ok {
					out[k] = mergeMaps(bv, v)
					continue
				}
			}
		}
		out[k] = v
	}
	return out
}

// replacePath is chartutil's ReplacePathValue: value set at path with
// Helm's --set syntax, or --set-string when it is quoted.
func replacePath(values map[string]any, path, value string) error {
	quoted := len(value) >= 1 && (strings.HasPrefix(value, "'") && strings.HasSuffix(value, "'") ||
		strings.HasPrefix(value, `"`) && strings.HasSuffix(value, `"`))
	if quoted {
		value = strings.Trim(value, `'"`)
		return strvals.ParseIntoString(path+"="+value, values)
	}
	return strvals.ParseInto(path+"="+value, values)
}

// replacePathLiteral is chartutil's ReplacePathLiteralValue: value set at
// path verbatim, as helm --set-literal does.
func replacePathLiteral(values map[string]any, path, value string) error {
	esc := strings.NewReplacer(`\`, `\\`, `,`, `\,`, `[`, `\[`, `]`, `\]`, `{`, `\{`, `}`, `\}`)
	return strvals.ParseIntoString(path+"="+esc.Replace(value), values)
}

// redact returns an error of Helm's strvals without the text it quotes (a
// value), keeping what kind of problem it is.
func redact(err error) string {
	msg := err.Error()
	if i := strings.IndexAny(msg, `"'`); i >= 0 {
		msg = strings.TrimSpace(msg[:i])
	}
	if msg == "" {
		return "not valid --set syntax"
	}
	return inert.Prose(msg)
}
