package charts

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"fleetgen.dev/fleetgen/internal/inert"
)

// filenameAnnotation is where Helm keeps a document's template file across
// a post-renderer (helm.sh/helm/v4 pkg/action).
const filenameAnnotation = "postrenderer.helm.sh/postrender-filename"

// postRender applies the HelmRelease's post-renderers to the rendered files
// by spec.postRenderStrategy, as Helm's install does with the post-renderer
// helm-controller builds (its kustomize post-renderers in order, then
// commonMetadata, then the origin labels: there is always one), and returns
// the objects in Helm's install order, hooks last.
func postRender(files map[string]string, rel *Release) ([]*Object, error) {
	strategy := rel.Spec.PostRenderStrategy
	switch strategy {
	case "", "combined":
		out, err := runPostRenderers(files, rel, "")
		if err != nil {
			return nil, err
		}
		return objects(out, true, true)
	case "nohooks", "separate":
		hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
		if err != nil {
			return nil, fmt.Errorf("render: %s", inert.Prose(err.Error()))
		}
		hookFiles, manifestFiles := map[string]string{}, map[string]string{}
		for _, h := range hooks {
			join(hookFiles, h.Path, h.Manifest)
		}
		for _, m := range manifests {
			join(manifestFiles, m.Name, m.Content)
		}
		if manifestFiles, err = runPostRenderers(manifestFiles, rel, "manifests"); err != nil {
			return nil, err
		}
		if strategy == "separate" {
			if hookFiles, err = runPostRenderers(hookFiles, rel, "hooks"); err != nil {
				return nil, err
			}
		}
		m, err := objects(manifestFiles, true, false)
		if err != nil {
			return nil, err
		}
		h, err := objects(hookFiles, strategy == "separate", true)
		if err != nil {
			return nil, err
		}
		return append(m, h...), nil
	}
	return nil, fmt.Errorf("spec.postRenderStrategy %s: want combined, nohooks or separate", inert.Quote(strategy))
}

func join(files map[string]string, name, content string) {
	if prev, ok := files[name]; ok {
		files[name] = prev + "\n---\n" + content
		return
	}
	files[name] = content
}

// objects sorts files into manifests and hooks with Helm's sorter and
// parses them.
func objects(files map[string]string, postRendered, withHooks bool) ([]*Object, error) {
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("render: %s", inert.Prose(err.Error()))
	}
	var out []*Object
	for _, m := range manifests {
		docs, err := parseDocs(m.Name, m.Content)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			out = append(out, &Object{Template: m.Name, PostRendered: postRendered, Map: d})
		}
	}
	if !withHooks {
		return out, nil
	}
	for _, h := range hooks {
		docs, err := parseDocs(h.Path, h.Manifest)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			out = append(out, &Object{Template: h.Path, Hook: true, PostRendered: postRendered, Map: d})
		}
	}
	return out, nil
}

// runPostRenderers is Helm's annotateAndMerge, the post-renderers
// helm-controller's BuildPostRenderers makes, then splitAndDeannotate.
func runPostRenderers(files map[string]string, rel *Release, group string) (map[string]string, error) {
	if len(files) == 0 {
		return files, nil
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var nodes []*kyaml.RNode
	for _, n := range names {
		if strings.HasPrefix(path.Base(n), "_") || strings.TrimSpace(files[n]) == "" {
			continue
		}
		docs := releaseutil.SplitManifests(files[n])
		keys := make([]string, 0, len(docs))
		for k := range docs {
			keys = append(keys, k)
		}
		sortSplit(keys)
		for _, k := range keys {
			if strings.TrimSpace(docs[k]) == "" {
				continue
			}
			parsed, err := kio.ParseAll(docs[k])
			if err != nil {
				return nil, fmt.Errorf("post-render: %s: %s", inert.Quote(n), inert.Prose(err.Error()))
			}
			for _, node := range parsed {
				if err := node.PipeE(kyaml.SetAnnotation(filenameAnnotation, n)); err != nil {
					return nil, fmt.Errorf("post-render: %s: %s", inert.Quote(n), inert.Prose(err.Error()))
				}
				nodes = append(nodes, node)
			}
		}
	}
	stream, err := kio.StringAll(nodes)
	if err != nil {
		return nil, fmt.Errorf("post-render: %w", err)
	}
	for i, pr := range rel.Spec.PostRenderers {
		if pr.Kustomize == nil {
			continue
		}
		if stream, err = kustomizePostRender(stream, pr.Kustomize); err != nil {
			return nil, fmt.Errorf("spec.postRenderers[%d]: %s", i, inert.Prose(err.Error()))
		}
	}
	var labels, annotations map[string]string
	if cm := rel.Spec.CommonMetadata; cm != nil {
		labels, annotations = cm.Labels, cm.Annotations
	}
	// The origin labels come last, so they win over commonMetadata's.
	// Fleet's agent sets none (its own bookkeeping labels are not modelled).
	origin := map[string]string{
		"helm.toolkit.fluxcd.io/name":      rel.Name,
		"helm.toolkit.fluxcd.io/namespace": rel.Namespace,
	}
	if rel.Fleet {
		origin = nil
	}
	if stream, err = transform(stream, labels, annotations); err != nil {
		return nil, fmt.Errorf("spec.commonMetadata: %s", inert.Prose(err.Error()))
	}
	if stream, err = transform(stream, origin, nil); err != nil {
		return nil, fmt.Errorf("post-render: %s", inert.Prose(err.Error()))
	}
	return split(stream, group)
}

// split is Helm's splitAndDeannotate.
func split(stream, group string) (map[string]string, error) {
	nodes, err := kio.ParseAll(stream)
	if err != nil {
		return nil, fmt.Errorf("post-render: %s", inert.Prose(err.Error()))
	}
	byFile := map[string][]*kyaml.RNode{}
	for i, n := range nodes {
		meta, err := n.GetMeta()
		if err != nil {
			return nil, fmt.Errorf("post-render: %s", inert.Prose(err.Error()))
		}
		name := meta.Annotations[filenameAnnotation]
		if name == "" {
			if group == "" {
				name = fmt.Sprintf("generated-by-postrender-%d.yaml", i)
			} else {
				name = fmt.Sprintf("generated-by-postrender-%s-%d.yaml", group, i)
			}
		}
		if err := n.PipeE(kyaml.ClearAnnotation(filenameAnnotation)); err != nil {
			return nil, fmt.Errorf("post-render: %s", inert.Prose(err.Error()))
		}
		byFile[name] = append(byFile[name], n)
	}
	out := make(map[string]string, len(byFile))
	for name, docs := range byFile {
		s, err := kio.StringAll(docs)
		if err != nil {
			return nil, fmt.Errorf("post-render: %w", err)
		}
		out[name] = s
	}
	return out, nil
}

// kustomizeMu serialises krusty runs, as helm-controller does: kustomize's
// builtins are not safe for concurrent use.
var kustomizeMu sync.Mutex

// kustomizePostRender is helm-controller's Kustomize post-renderer: the
// stream as the one resource of an in-memory kustomization with the patches
// and images. The file system holds nothing else, so no patch reads a file.
func kustomizePostRender(stream string, k *Kustomize) (string, error) {
	fs := filesys.MakeFsInMemory()
	cfg := kustypes.Kustomization{}
	cfg.APIVersion = kustypes.KustomizationVersion
	cfg.Kind = kustypes.KustomizationKind
	cfg.Resources = []string{"helm-output.yaml"}
	for _, im := range k.Images {
		cfg.Images = append(cfg.Images, kustypes.Image{Name: im.Name, NewName: im.NewName, NewTag: im.NewTag, Digest: im.Digest})
	}
	for _, p := range k.Patches {
		kp := kustypes.Patch{Patch: p.Patch}
		if t := p.Target; t != nil {
			kp.Target = &kustypes.Selector{LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector}
			kp.Target.Group, kp.Target.Version, kp.Target.Kind = t.Group, t.Version, t.Kind
			kp.Target.Name, kp.Target.Namespace = t.Name, t.Namespace
		}
		cfg.Patches = append(cfg.Patches, kp)
	}
	kb, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	if err := fs.WriteFile("helm-output.yaml", []byte(stream)); err != nil {
		return "", err
	}
	if err := fs.WriteFile("kustomization.yaml", kb); err != nil {
		return "", err
	}
	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	m, err := krusty.MakeKustomizer(&krusty.Options{
		LoadRestrictions: kustypes.LoadRestrictionsRootOnly,
		PluginConfig:     kustypes.DisabledPluginConfig(),
	}).Run(fs, ".")
	if err != nil {
		return "", err
	}
	out, err := m.AsYaml()
	return string(out), err
}

// transform sets labels and annotations on metadata of every object, as
// helm-controller's CommonRenderer and OriginLabels do (kustomize's
// builtin label and annotation transformers on metadata only).
func transform(stream string, labels, annotations map[string]string) (string, error) {
	if len(labels) == 0 && len(annotations) == 0 {
		return stream, nil
	}
	rf := resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory())
	m, err := rf.NewResMapFromBytes([]byte(stream))
	if err != nil {
		return "", err
	}
	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	if len(labels) > 0 {
		t := &builtins.LabelTransformerPlugin{Labels: labels, FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/labels", CreateIfNotPresent: true}}}
		if err := t.Transform(m); err != nil {
			return "", err
		}
	}
	if len(annotations) > 0 {
		t := &builtins.AnnotationsTransformerPlugin{Annotations: annotations, FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/annotations", CreateIfNotPresent: true}}}
		if err := t.Transform(m); err != nil {
			return "", err
		}
	}
	out, err := m.AsYaml()
	return string(out), err
}
