package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"go.yaml.in/yaml/v3"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"
)

// renderBundle renders bn with opts as Fleet's agent does; why says what
// the model does not render (a Helm chart).
func renderBundle(b *builder, bn *bundle, opts deployOptions) (objs []*Object, why string, err error) {
	if _, _, why, ok := chartFolder(bn, opts); ok {
		return nil, why, nil // helmBundleSet renders the others
	}
	kdir := "."
	if opts.Kustomize != nil && opts.Kustomize.Dir != "" {
		kdir = path.Clean(strings.TrimPrefix(opts.Kustomize.Dir, "/"))
	}
	if _, ok := bn.files[path.Join(kdir, "kustomization.yaml")]; ok {
		objs, err = kustomizeBundle(b, bn, kdir)
	} else {
		objs, why, err = rawBundle(bn, opts)
	}
	if err != nil || why != "" {
		return nil, why, err
	}
	if opts.TargetNamespace != "" {
		for i, o := range objs {
			m := cloneMeta(o.Map())
			m["metadata"].(map[string]any)["namespace"] = opts.TargetNamespace
			n := *o
			n.value, n.made, n.Namespace = m, made{}, opts.TargetNamespace
			objs[i] = &n
		}
	}
	return objs, "", nil
}

// cloneMeta copies m and its metadata.
func cloneMeta(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	md, _ := m["metadata"].(map[string]any)
	nmd := make(map[string]any, len(md)+1)
	for k, v := range md {
		nmd[k] = v
	}
	out["metadata"] = nmd
	return out
}

// kustomizeBundle builds the kustomization at kdir over the bundle's files
// alone, as Fleet's agent does (in memory, load restrictions root-only,
// plugins off), refusing anything kustomize would fetch.
func kustomizeBundle(b *builder, bn *bundle, kdir string) ([]*Object, error) {
	mem := filesys.MakeFsInMemory()
	for p, data := range bn.files {
		if err := mem.WriteFile("/"+p, data); err != nil {
			return nil, err
		}
	}
	dir := path.Join("/", kdir)
	kfile := path.Join(dir, "kustomization.yaml")
	sc := &scan{seen: map[string]bool{}}
	if err := sc.refuseRemote(mem, "/", dir, kfile, bn.files[path.Join(kdir, "kustomization.yaml")]); err != nil {
		return nil, err
	}
	rm, err := run(mem, dir, sc.openAPI, false)
	if err != nil {
		return nil, err
	}
	var out []*Object
	for _, r := range rm.Resources() {
		_ = r.SetOrigin(nil)
		o, err := buildObject(r, bn.dir+"/"+kdir)
		if err != nil {
			return nil, err
		}
		o.tp = nil
		out = append(out, o)
	}
	return out, nil
}

// rawBundle reads the bundle's raw manifests, after the overlays of opts.
func rawBundle(bn *bundle, opts deployOptions) ([]*Object, string, error) {
	files := bn.files
	if opts.YAML != nil && len(opts.YAML.Overlays) > 0 {
		var err error
		if files, err = overlays(files, opts.YAML.Overlays); err != nil {
			return nil, "", err
		}
	}
	var skip []string // folders with their own fleet.yaml or Chart.yaml
	for p := range files {
		if b := path.Base(p); p != b && (b == "fleet.yaml" || b == "fleet.yml" || b == "Chart.yaml") {
			skip = append(skip, path.Dir(p)+"/")
		}
	}
	var names []string
	for p := range files {
		switch {
		case p == "fleet.yaml" || p == "fleet.yml", strings.HasPrefix(p, "overlays/"):
		case !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") && !strings.HasSuffix(p, ".json"):
		case slices.ContainsFunc(skip, func(s string) bool { return strings.HasPrefix(p, s) }):
		case strings.HasPrefix(p, "templates/"):
			return nil, "has Helm templates (" + inert.Quote(p) + ")", nil
		default:
			names = append(names, p)
		}
	}
	sort.Strings(names)
	var out []*Object
	for _, p := range names {
		dec := yaml.NewDecoder(bytes.NewReader(files[p]))
		for n := 1; ; n++ {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, "", fmt.Errorf("%s: document %d is not valid YAML", path.Join(bn.dir, p), n)
			}
			if doc == nil {
				continue
			}
			data, err := json.Marshal(doc)
			if err != nil {
				return nil, "", fmt.Errorf("%s: document %d is not an object", path.Join(bn.dir, p), n)
			}
			m, err := decodeJSON(data)
			if err != nil {
				return nil, "", fmt.Errorf("%s: document %d is not an object", path.Join(bn.dir, p), n)
			}
			if av, _ := m["apiVersion"].(string); av == "" {
				continue // Fleet skips what has no apiVersion or kind
			}
			if k, _ := m["kind"].(string); k == "" {
				continue
			}
			o, err := NewObject(m, path.Join(bn.dir, p))
			if err != nil {
				return nil, "", fmt.Errorf("%s: document %d: %v", path.Join(bn.dir, p), n, err)
			}
			out = append(out, o)
		}
	}
	return out, "", nil
}

// overlays applies the named overlays to files as Fleet's patch.Process
// does: each file of overlays/<name>/ replaces the file of the same path,
// and a <file>_patch.<ext> patches <file>.<ext> (a JSON patch when it is a
// list, else a JSON merge patch).
func overlays(files map[string][]byte, names []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(files))
	for p, d := range files {
		out[p] = d
	}
	for _, name := range names {
		prefix := "overlays/" + name + "/"
		var ps []string
		for p := range out {
			if strings.HasPrefix(p, prefix) {
				ps = append(ps, p)
			}
		}
		sort.Strings(ps)
		for _, p := range ps {
			data := out[p]
			rel := strings.TrimPrefix(p, prefix)
			base := path.Base(rel)
			if !strings.Contains(base, "_patch.") {
				out[rel] = data
				continue
			}
			target := path.Join(path.Dir(rel), strings.Replace(base, "_patch.", ".", 1))
			orig, ok := out[target]
			if !ok {
				return nil, fmt.Errorf("overlay %s: failed to find base file %s to patch", name, target)
			}
			oj, err1 := sigsyaml.YAMLToJSON(orig)
			pj, err2 := sigsyaml.YAMLToJSON(data)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("overlay %s: %s is not YAML", name, p)
			}
			var patched []byte
			var err error
			if bytes.HasPrefix(bytes.TrimSpace(pj), []byte("[")) {
				var jp jsonpatch.Patch
				if jp, err = jsonpatch.DecodePatch(pj); err == nil {
					patched, err = jp.Apply(oj)
				}
				if err != nil {
					return nil, fmt.Errorf("overlay %s: failed to patch %s", name, target)
				}
			} else if patched, err = jsonpatch.MergePatch(oj, pj); err != nil {
				return nil, fmt.Errorf("overlay %s: failed to patch %s", name, target)
			}
			out[target] = patched
		}
	}
	return out, nil
}
