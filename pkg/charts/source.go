package charts

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/lock"
)

// Source is where a HelmRelease's chart comes from, as the source object
// the cluster receives with it says: an OCI chart (a HelmRepository of type
// oci, or an OCIRepository by chartRef) or a chart of an HTTP chart
// repository (a HelmRepository over http or https).
type Source struct {
	// Kind, Namespace and Name are the source object's: HelmRepository or
	// OCIRepository.
	Kind, Namespace, Name string
	// URL is the source object's spec.url as written.
	URL string
	// OCI is set for an OCI chart: its reference as fleet.lock.yaml keys it
	// (lock.Normalize: host/repository/chart:version, or @digest).
	OCI string
	// Chart and Version name an HTTP repository's chart (OCI empty): the
	// chart in the repository's index.yaml at URL, one exact version.
	Chart, Version string
}

// HTTP reports whether s is a chart of an HTTP chart repository.
func (s *Source) HTTP() bool { return s.OCI == "" }

// Label names the chart for messages and `images --why`: the OCI reference,
// or "URL chart version". Its parts come from a layer: quote it where it is
// untrusted.
func (s *Source) Label() string {
	if s.OCI != "" {
		return s.OCI
	}
	return s.URL + " " + s.Chart + " " + s.Version
}

// Describe names the source object: "HelmRepository namespace/name".
func (s *Source) Describe() string { return s.Kind + " " + s.Namespace + "/" + s.Name }

// ErrUnsupported is a chart source fleetgen does not mirror or render: a
// GitRepository, a Bucket, a HelmChart by chartRef, or a source object the
// cluster does not receive with the HelmRelease (made elsewhere).
var ErrUnsupported = errors.New("a chart source fleetgen does not render")

// Find returns the object of kind in namespace with name that the cluster
// receives with a HelmRelease, as plain JSON values, or nil.
type Find func(kind, namespace, name string) map[string]any

// ResolveSource returns where rel's chart comes from, reading its source
// object through find. A chart version that is not one exact version (a
// range, a wildcard, none) is ErrVersion, as an image's moving tag is not
// pinned; a source fleetgen does not render is ErrUnsupported. Messages
// quote nothing a layer wrote but through inert.Quote.
func ResolveSource(rel *Release, find Find) (*Source, error) {
	if ref := rel.Spec.ChartRef; ref != nil {
		if ref.Kind != "OCIRepository" {
			return nil, fmt.Errorf("spec.chartRef of kind %s: %w (want an OCIRepository)", inert.Quote(ref.Kind), ErrUnsupported)
		}
		src := &Source{Kind: ref.Kind, Namespace: nsOr(ref.Namespace, rel.Namespace), Name: ref.Name}
		obj := lookupSource(find, src)
		if obj == nil {
			return nil, fmt.Errorf("%s is not in what the cluster receives with it: %w", quoteObj(src), ErrUnsupported)
		}
		src.URL = str(obj, "spec", "url")
		if !strings.HasPrefix(src.URL, "oci://") {
			return nil, fmt.Errorf("%s: spec.url is not oci://", quoteObj(src))
		}
		base := strings.TrimPrefix(src.URL, "oci://")
		var ref string
		switch {
		case str(obj, "spec", "ref", "digest") != "":
			ref = base + "@" + str(obj, "spec", "ref", "digest")
		case str(obj, "spec", "ref", "semver") != "":
			return nil, fmt.Errorf("%s: spec.ref.semver is a %w range, not one version: want spec.ref.tag or spec.ref.digest", quoteObj(src), ErrVersion)
		case str(obj, "spec", "ref", "tag") != "":
			ref = base + ":" + str(obj, "spec", "ref", "tag")
		default:
			return nil, fmt.Errorf("%s: no spec.ref (Flux pulls the moving tag latest): want spec.ref.tag or spec.ref.digest, one %w", quoteObj(src), ErrVersion)
		}
		n, err := lock.Normalize(ref)
		if err != nil {
			return nil, fmt.Errorf("%s: spec.url and spec.ref are not an OCI reference", quoteObj(src))
		}
		src.OCI = n
		return src, nil
	}
	if rel.Spec.Chart == nil {
		return nil, errors.New("neither spec.chart nor spec.chartRef: no chart to render")
	}
	spec := rel.Spec.Chart.Spec
	sr := spec.SourceRef
	if sr.Kind != "HelmRepository" {
		return nil, fmt.Errorf("spec.chart.spec.sourceRef of kind %s: %w (want a HelmRepository)", inert.Quote(sr.Kind), ErrUnsupported)
	}
	src := &Source{Kind: sr.Kind, Namespace: nsOr(sr.Namespace, rel.Namespace), Name: sr.Name}
	obj := lookupSource(find, src)
	if obj == nil {
		return nil, fmt.Errorf("%s is not in what the cluster receives with it: %w", quoteObj(src), ErrUnsupported)
	}
	if spec.Version == "" {
		return nil, fmt.Errorf("chart %s has no spec.chart.spec.version (Flux takes the latest, a moving target): want one exact %w, e.g. 1.2.3", inert.Quote(spec.Chart), ErrVersion)
	}
	if err := ExactVersion(spec.Version); err != nil {
		return nil, fmt.Errorf("chart %s: %w", inert.Quote(spec.Chart), err)
	}
	if spec.Chart == "" || strings.ContainsAny(spec.Chart, "/:@ ") {
		return nil, fmt.Errorf("spec.chart.spec.chart %s is not a chart name", inert.Quote(spec.Chart))
	}
	src.URL = str(obj, "spec", "url")
	src.Chart, src.Version = spec.Chart, spec.Version
	if str(obj, "spec", "type") == "oci" || strings.HasPrefix(src.URL, "oci://") {
		ref := strings.TrimSuffix(strings.TrimPrefix(src.URL, "oci://"), "/") + "/" + spec.Chart + ":" + spec.Version
		if _, err := name.NewTag(ref); err != nil {
			return nil, fmt.Errorf("%s: spec.url and the chart's name and version are not an OCI reference", quoteObj(src))
		}
		n, err := lock.Normalize(ref)
		if err != nil {
			return nil, fmt.Errorf("%s: spec.url and the chart's name and version are not an OCI reference", quoteObj(src))
		}
		src.OCI = n
		return src, nil
	}
	if !strings.HasPrefix(src.URL, "http://") && !strings.HasPrefix(src.URL, "https://") {
		return nil, fmt.Errorf("%s: spec.url is neither http(s):// nor oci://", quoteObj(src))
	}
	src.URL = strings.TrimSuffix(src.URL, "/")
	return src, nil
}

func lookupSource(find Find, s *Source) map[string]any {
	if find == nil {
		return nil
	}
	return find(s.Kind, s.Namespace, s.Name)
}

func quoteObj(s *Source) string {
	return s.Kind + " " + inert.Quote(s.Namespace+"/"+s.Name)
}

func nsOr(ns, def string) string {
	if ns != "" {
		return ns
	}
	return def
}

func str(m map[string]any, keys ...string) string {
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return ""
		}
		m = next
	}
	s, _ := m[keys[len(keys)-1]].(string)
	return s
}
