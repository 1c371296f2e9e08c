// Package images finds every image a fleet needs: spec.images plus every image in
// the kustomize build (krusty) of each layer path.
package images

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Use is one image (or oci:// chart) the fleet needs.
type Use struct {
	// Ref is the normalised reference (lock.Normalize); the lock's key.
	Ref string
	// Why lists who asked for it, sorted: "spec.images[0]",
	// "layer infrastructure (infrastructure/prod)".
	Why []string
}

// Result is what Discover found.
type Result struct {
	// Images is deduplicated by Ref and sorted by it.
	Images []Use
	// LayerImages is generate.Options.LayerImages: each expanded layer path to
	// the references its build uses, as written, sorted and deduplicated.
	// Container images only: chart references are mirrored, but Flux's
	// spec.images cannot rewrite them.
	LayerImages map[string][]string
}

// Refs returns the normalised references of r.Images, sorted.
func (r *Result) Refs() []string {
	out := make([]string, len(r.Images))
	for i, u := range r.Images {
		out[i] = u.Ref
	}
	return out
}

// Discover builds each distinct expanded layer path of f once, with krusty, and
// collects images from pod templates of every workload kind (containers,
// initContainers, ephemeralContainers; CronJob included) and HelmRelease /
// OCIRepository chart references. A layer path that does not build is an input
// error naming the layer.
//
// Layer paths are relative to f.Dir and read from the real file system. A
// folder without a kustomization.yaml is built the way Flux's
// kustomize-controller does: as if it listed every Kubernetes manifest below it.
// Paths that still hold a ${variable} after expansion are skipped (Validate
// reports them).
func Discover(f *schema.Fleet) (*Result, error) {
	why := map[string]map[string]bool{}
	var errs []string
	add := func(ref, who string) {
		n, err := lock.Normalize(ref)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: image %q: invalid reference: %v", who, ref, err))
			return
		}
		if why[n] == nil {
			why[n] = map[string]bool{}
		}
		why[n][who] = true
	}
	for i, ref := range f.Spec.Images {
		add(ref, fmt.Sprintf("spec.images[%d]", i))
	}

	// Distinct expanded paths, each with the layers that use it.
	layersOf := map[string]map[string]bool{}
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		for _, l := range f.SelectedLayers(c) {
			p := cleanPath(schema.ExpandPath(l.Path, c))
			if strings.Contains(p, "${") {
				continue
			}
			if layersOf[p] == nil {
				layersOf[p] = map[string]bool{}
			}
			layersOf[p][l.Name] = true
		}
	}
	paths := sortedKeys(layersOf)
	layerImages := map[string][]string{}
	dir := f.Dir
	if dir == "" {
		dir = "."
	}
	for _, p := range paths {
		names := sortedKeys(layersOf[p])
		objs, err := build(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			errs = append(errs, fmt.Sprintf("layer %s: path %s: kustomize build: %v", strings.Join(names, ", "), p, err))
			continue
		}
		found, err := collect(objs)
		if err != nil {
			errs = append(errs, fmt.Sprintf("layer %s: path %s: %v", strings.Join(names, ", "), p, err))
			continue
		}
		var written []string
		for _, img := range found {
			for _, n := range names {
				add(img.ref, fmt.Sprintf("layer %s (%s)", n, p))
			}
			if !img.chart {
				written = append(written, img.ref)
			}
		}
		layerImages[p] = dedupe(written)
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, schema.Invalid(errors.New(strings.Join(errs, "\n")))
	}
	res := &Result{LayerImages: layerImages}
	for _, ref := range sortedKeys(why) {
		res.Images = append(res.Images, Use{Ref: ref, Why: sortedKeys(why[ref])})
	}
	return res, nil
}

// cleanPath is a layer path as LayerImages keys it: slash-separated, cleaned,
// relative, no leading "./".
func cleanPath(p string) string {
	return path.Clean(strings.TrimPrefix(filepath.ToSlash(p), "/"))
}

// build runs kustomize on dir and returns every object as a map.
func build(dir string) ([]map[string]any, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("no such folder")
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("not a folder")
	}
	opts := krusty.MakeDefaultOptions()
	// Flux's kustomize-controller lets a layer reach files elsewhere in the
	// source (../base/patch.yaml), so do we.
	opts.LoadRestrictions = types.LoadRestrictionsNone
	k := krusty.MakeKustomizer(opts)

	fsys := filesys.MakeFsOnDisk()
	root := dir
	if !hasKustomization(dir) {
		mem, err := generated(dir)
		if err != nil {
			return nil, err
		}
		fsys, root = mem, "/"
	}
	rm, err := k.Run(fsys, root)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, r := range rm.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func hasKustomization(dir string) bool {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// generated copies the Kubernetes manifests below dir into memory with a
// kustomization.yaml listing them, as Flux does for a plain folder.
func generated(dir string) (filesys.FileSystem, error) {
	mem := filesys.MakeFsInMemory()
	var resources []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && p != dir {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(p)
		if ext != ".yaml" && ext != ".yml" && ext != ".json" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !isManifest(data) {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if err := mem.WriteFile("/"+rel, data); err != nil {
			return err
		}
		resources = append(resources, rel)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(resources)
	k, err := yaml.Marshal(map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  resources,
	})
	if err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/kustomization.yaml", k); err != nil {
		return nil, err
	}
	return mem, nil
}

// isManifest reports whether every document of data has apiVersion and kind.
func isManifest(data []byte) bool {
	ok := false
	for _, doc := range strings.Split(string(data), "\n---") {
		var m struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil || m.APIVersion == "" || m.Kind == "" {
			return false
		}
		ok = true
	}
	return ok
}

type found struct {
	ref   string
	chart bool
}

// collect returns the images and charts objs refer to, in no particular order.
func collect(objs []map[string]any) ([]found, error) {
	var out []found
	byKey := map[string]map[string]any{}
	for _, o := range objs {
		byKey[objKey(str(o, "kind"), str(o, "metadata", "namespace"), str(o, "metadata", "name"))] = o
	}
	var errs []string
	for _, o := range objs {
		for _, spec := range podSpecs(o) {
			for _, field := range []string{"initContainers", "containers", "ephemeralContainers"} {
				list, _ := spec[field].([]any)
				for _, c := range list {
					cm, _ := c.(map[string]any)
					if img, _ := cm["image"].(string); img != "" {
						out = append(out, found{ref: img})
					}
				}
			}
		}
		if str(o, "kind") == "HelmRelease" && strings.HasPrefix(str(o, "apiVersion"), "helm.toolkit.fluxcd.io/") {
			ref, err := chartRef(o, byKey)
			if err != nil {
				errs = append(errs, fmt.Sprintf("HelmRelease %s/%s: %v", ns(o), str(o, "metadata", "name"), err))
				continue
			}
			if ref != "" {
				out = append(out, found{ref: ref, chart: true})
			}
		}
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, errors.New(strings.Join(errs, "; "))
	}
	return out, nil
}

// podSpecs returns the pod specs in o: a Pod's spec, spec.template.spec of every
// workload (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job,
// ReplicationController, and any custom kind shaped like them) and CronJob's
// spec.jobTemplate.spec.template.spec.
func podSpecs(o map[string]any) []map[string]any {
	var out []map[string]any
	if str(o, "kind") == "Pod" {
		if s := obj(o, "spec"); s != nil {
			out = append(out, s)
		}
	}
	if s := obj(o, "spec", "template", "spec"); s != nil {
		out = append(out, s)
	}
	if s := obj(o, "spec", "jobTemplate", "spec", "template", "spec"); s != nil {
		out = append(out, s)
	}
	return out
}

// chartRef returns the oci:// reference of a HelmRelease's chart, or "" when
// the chart does not come from an OCI registry this build defines.
func chartRef(hr map[string]any, byKey map[string]map[string]any) (string, error) {
	if ref := obj(hr, "spec", "chartRef"); ref != nil {
		if str(ref, "kind") != "OCIRepository" {
			return "", nil
		}
		src := byKey[objKey("OCIRepository", nsOr(str(ref, "namespace"), ns(hr)), str(ref, "name"))]
		if src == nil {
			return "", nil
		}
		return ociRepositoryRef(src)
	}
	spec := obj(hr, "spec", "chart", "spec")
	if spec == nil {
		return "", nil
	}
	sr := obj(spec, "sourceRef")
	if sr == nil || str(sr, "kind") != "HelmRepository" {
		return "", nil
	}
	repo := byKey[objKey("HelmRepository", nsOr(str(sr, "namespace"), ns(hr)), str(sr, "name"))]
	if repo == nil {
		return "", nil
	}
	url := str(repo, "spec", "url")
	if str(repo, "spec", "type") != "oci" && !strings.HasPrefix(url, "oci://") {
		return "", nil // an HTTP chart repository: nothing to mirror
	}
	version := str(spec, "version")
	if !exactTag(version) {
		return "", fmt.Errorf("chart %s version %q is not an exact version: an OCI chart is mirrored by tag", str(spec, "chart"), version)
	}
	return strings.TrimSuffix(url, "/") + "/" + str(spec, "chart") + ":" + version, nil
}

// ociRepositoryRef returns oci://…:tag or oci://…@digest for a Flux
// OCIRepository.
func ociRepositoryRef(src map[string]any) (string, error) {
	url := str(src, "spec", "url")
	switch {
	case str(src, "spec", "ref", "digest") != "":
		return url + "@" + str(src, "spec", "ref", "digest"), nil
	case str(src, "spec", "ref", "tag") != "":
		return url + ":" + str(src, "spec", "ref", "tag"), nil
	case str(src, "spec", "ref", "semver") != "":
		return "", fmt.Errorf("OCIRepository %s/%s: ref.semver %q is not an exact version: an OCI chart is mirrored by tag or digest", ns(src), str(src, "metadata", "name"), str(src, "spec", "ref", "semver"))
	}
	return url + ":latest", nil // Flux's default
}

// exactTag reports whether v names one tag rather than a semver range.
func exactTag(v string) bool {
	if v == "" || strings.ContainsAny(v, "*^~<>=|, ") || v == "x" || strings.Contains(v, ".x") || strings.Contains(v, ".X") {
		return false
	}
	_, err := name.NewTag("example.com/chart:" + v)
	return err == nil
}

func objKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

func ns(o map[string]any) string { return nsOr(str(o, "metadata", "namespace"), "") }

func nsOr(n, def string) string {
	if n != "" {
		return n
	}
	return def
}

func obj(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}

func str(m map[string]any, keys ...string) string {
	if o := obj(m, keys[:len(keys)-1]...); o != nil {
		s, _ := o[keys[len(keys)-1]].(string)
		return s
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
