package secrets

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Objects that another controller applies carry objects inside them; a
// Secret there reaches a cluster as surely as one applied directly (SPEC §5).
// EmbeddedProblems looks inside those fleetgen can name:
//
//   - a Fleet Bundle (fleet.cattle.io): each spec.resources[] content, as
//     Fleet decodes it (encoding "", "base64", "base64+gz", "gz": rancher/fleet
//     internal/content Decode), is a file of manifests;
//   - an Open Cluster Management ManifestWork (work.open-cluster-management.io):
//     spec.workload.manifests[] are objects;
//   - a KubeFleet ResourceEnvelope or ClusterResourceEnvelope
//     (placement.kubernetes-fleet.io): each value of data is an object;
//   - a ConfigMap whose data values are manifests (what Cluster API's
//     ClusterResourceSet and Sveltos apply from a ConfigMap): a value that
//     may hold a Secret (mayHoldSecret) is read as a file of manifests.
//
// Embedded objects are looked into again, to maxEmbedded levels.

// maxEmbedded bounds how deep EmbeddedProblems looks into embedded objects,
// and maxEmbeddedSize how many bytes one decoded content may have.
const (
	maxEmbedded     = 4
	maxEmbeddedSize = 16 << 20
)

// EmbeddedProblems returns, for obj (decoded to plain values), a problem
// phrase for each Secret embedded in it that holds plaintext, and for each
// embedded content that cannot be read (so cannot be checked): "embeds in
// spec.resources[0] (a.yaml) Secret ns/name, which holds unencrypted data".
// It never quotes a value.
func EmbeddedProblems(obj map[string]any) []string {
	return embedded(obj, maxEmbedded)
}

func embedded(obj map[string]any, depth int) []string {
	if depth == 0 {
		return nil
	}
	api, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	grp, _, _ := strings.Cut(api, "/")
	var out []string
	check := func(where string, inner map[string]any) {
		if p := ObjectProblem(inner); p != "" {
			md, _ := asMap(inner["metadata"])
			name, _ := md["name"].(string)
			ns, _ := md["namespace"].(string)
			out = append(out, fmt.Sprintf("embeds in %s Secret %s, which %s", where, qualified(ns, name), p))
		}
		for _, p := range embedded(inner, depth-1) {
			out = append(out, "embeds in "+where+" an object that "+p)
		}
	}
	file := func(where string, data []byte) {
		docs, err := manifests(data)
		if err != nil {
			out = append(out, fmt.Sprintf("embeds in %s content that is not valid YAML, so it cannot be checked for plaintext Secrets", where))
			return
		}
		for _, d := range docs {
			check(where, d)
		}
	}
	spec, _ := asMap(obj["spec"])
	switch {
	case grp == "fleet.cattle.io" && kind == "Bundle":
		res, _ := spec["resources"].([]any)
		for i, r := range res {
			m, _ := asMap(r)
			content, _ := m["content"].(string)
			enc, _ := m["encoding"].(string)
			where := fmt.Sprintf("spec.resources[%d]", i)
			data, err := fleetContent(content, enc)
			if err != nil {
				out = append(out, fmt.Sprintf("embeds in %s content that does not decode (encoding %s), so it cannot be checked for plaintext Secrets", where, inertWord(enc)))
				continue
			}
			file(where, data)
		}
	case grp == "work.open-cluster-management.io" && kind == "ManifestWork":
		w, _ := asMap(spec["workload"])
		ms, _ := w["manifests"].([]any)
		for i, e := range ms {
			if m, ok := asMap(e); ok {
				check(fmt.Sprintf("spec.workload.manifests[%d]", i), m)
			}
		}
	case grp == "placement.kubernetes-fleet.io" && (kind == "ResourceEnvelope" || kind == "ClusterResourceEnvelope"):
		data, _ := asMap(obj["data"])
		for _, k := range slices.Sorted(maps.Keys(data)) {
			if m, ok := asMap(data[k]); ok {
				check("data."+k, m)
			}
		}
	case api == "v1" && kind == "ConfigMap":
		data, _ := asMap(obj["data"])
		for _, k := range slices.Sorted(maps.Keys(data)) {
			if s, ok := data[k].(string); ok && mayHoldSecret([]byte(s)) {
				docs, err := manifests([]byte(s))
				if err != nil {
					continue // a ConfigMap value need not be YAML
				}
				for _, d := range docs {
					check("data."+k, d)
				}
			}
		}
	}
	return out
}

// fleetContent decodes a Bundle resource's content as Fleet does, bounded.
func fleetContent(content, encoding string) ([]byte, error) {
	data := []byte(content)
	if encoding == "base64" || strings.HasPrefix(encoding, "base64+") {
		d, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			return nil, err
		}
		data = d
		encoding = strings.TrimPrefix(strings.TrimPrefix(encoding, "base64"), "+")
	}
	if encoding != "gz" {
		return data, nil
	}
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(r, maxEmbeddedSize+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxEmbeddedSize {
		return nil, errors.New("too large")
	}
	return out, nil
}

// manifests parses data as YAML documents, split as kustomize splits them,
// and returns the objects (a List's items too).
func manifests(data []byte) ([]map[string]any, error) {
	var out []map[string]any
	for _, chunk := range splitDocuments(data) {
		dec := yaml.NewDecoder(bytes.NewReader(chunk))
		for {
			var doc any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			if m, ok := asMap(doc); ok {
				out = append(out, objects(m)...)
			}
		}
	}
	return out, nil
}

// inertWord is s when it is a short plain token, else "(unreadable)": an
// encoding name comes from a pull request.
func inertWord(s string) string {
	if s == "" {
		return `""`
	}
	if len(s) > 16 {
		return "(unreadable)"
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+') {
			return "(unreadable)"
		}
	}
	return s
}
