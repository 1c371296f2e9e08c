package layers

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/provider"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"
)

// kustomizationFor returns the kustomization kustomize-controller builds
// folder dir with, and where it stands: what Flux's generator
// (fluxcd/pkg/kustomize Generator.GenerateManifest, v1.35, which
// kustomize-controller v1.9.5 runs in its reconcile before the build) makes
// of it for a Kustomization whose spec adds ov (nil for fleetgen's own layer
// Kustomizations, which set only spec.images: the model leaves that out, see
// Model).
//
// That is the folder's own kustomization file, decoded into kustomize's
// Kustomization type and encoded again (fields kustomize does not know are
// dropped; one without resources gets buildMetadata originAnnotations, so
// that kustomize does not call it empty), or, for a folder without one, a
// kustomization listing every Kubernetes manifest below it (findOrGenerate);
// then the spec's targetNamespace, namePrefix, nameSuffix, patches,
// components, images and buildMetadata, in the generator's order. Reads go
// through fs, the confined file system of the build.
func kustomizationFor(fs filesys.FileSystem, root, dir string, ov *overlay) ([]byte, string, error) {
	data, kfile, created, err := findOrGenerate(fs, root, dir)
	if err != nil {
		return nil, "", err
	}
	kus := kustypes.Kustomization{TypeMeta: kustypes.TypeMeta{
		APIVersion: kustypes.KustomizationVersion,
		Kind:       kustypes.KustomizationKind,
	}}
	if err := yaml.Unmarshal(data, &kus); err != nil {
		return nil, "", err
	}
	if !created && len(kus.Resources) == 0 {
		kus.BuildMetadata = []string{"originAnnotations"}
	}
	if ov != nil {
		if err := ov.apply(fs, dir, &kus); err != nil {
			return nil, "", err
		}
	}
	manifest, err := yaml.Marshal(kus)
	return manifest, kfile, err
}

// overlay is what a Flux Kustomization's spec adds to the kustomization of
// its folder (kustomize.toolkit.fluxcd.io/v1 field names). A pointer is a
// field that counts when set, even to "".
type overlay struct {
	TargetNamespace         *string          `json:"targetNamespace,omitempty"`
	NamePrefix              *string          `json:"namePrefix,omitempty"`
	NameSuffix              *string          `json:"nameSuffix,omitempty"`
	Patches                 []patch          `json:"patches,omitempty"`
	Components              []string         `json:"components,omitempty"`
	IgnoreMissingComponents bool             `json:"ignoreMissingComponents,omitempty"`
	Images                  []kustypes.Image `json:"images,omitempty"`
	BuildMetadata           []string         `json:"buildMetadata,omitempty"`
}

// patch is a Kustomization's spec.patches entry (fluxcd/pkg/apis/kustomize
// Patch).
type patch struct {
	Patch  string    `json:"patch"`
	Target *selector `json:"target,omitempty"`
}

// selector is fluxcd/pkg/apis/kustomize Selector.
type selector struct {
	Group              string `json:"group,omitempty"`
	Version            string `json:"version,omitempty"`
	Kind               string `json:"kind,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	Name               string `json:"name,omitempty"`
	AnnotationSelector string `json:"annotationSelector,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty"`
}

// apply sets ov's fields on kus as Flux's generator does.
func (ov *overlay) apply(fs filesys.FileSystem, dir string, kus *kustypes.Kustomization) error {
	if ov.TargetNamespace != nil {
		kus.Namespace = *ov.TargetNamespace
	}
	if ov.NamePrefix != nil {
		kus.NamePrefix = *ov.NamePrefix
	}
	if ov.NameSuffix != nil {
		kus.NameSuffix = *ov.NameSuffix
	}
	for _, p := range ov.Patches {
		kp := kustypes.Patch{Patch: p.Patch}
		if t := p.Target; t != nil {
			kp.Target = &kustypes.Selector{
				ResId:              resid.ResId{Gvk: resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind}, Name: t.Name, Namespace: t.Namespace},
				AnnotationSelector: t.AnnotationSelector, LabelSelector: t.LabelSelector,
			}
		}
		kus.Patches = append(kus.Patches, kp)
	}
	for _, c := range ov.Components {
		if !localRelative(c) {
			return fmt.Errorf("component path '%s' must be local and relative", c)
		}
		if ov.IgnoreMissingComponents && !fs.Exists(filepath.Join(dir, c)) {
			continue
		}
		kus.Components = append(kus.Components, c)
	}
	for _, img := range ov.Images {
		i := slices.IndexFunc(kus.Images, func(e kustypes.Image) bool { return e.Name == img.Name })
		if i < 0 {
			kus.Images = append(kus.Images, kustypes.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
			continue
		}
		if img.NewName != "" {
			kus.Images[i].NewName = img.NewName
		}
		if img.NewTag != "" || img.Digest != "" {
			kus.Images[i].NewTag, kus.Images[i].Digest = img.NewTag, img.Digest
		}
	}
	if len(ov.BuildMetadata) > 0 {
		kus.BuildMetadata = ov.BuildMetadata
	}
	return nil
}

// localRelative is Flux's IsLocalRelativePath: a component may not be
// remote or absolute.
func localRelative(p string) bool {
	for _, prefix := range []string{"git::", "gh:", "ssh://", "https://", "http://", "git@", "github.com:", "github.com/"} {
		if len(prefix) < len(p) && strings.ToLower(p[:len(prefix)]) == prefix {
			return false
		}
	}
	return !filepath.IsAbs(p) && !filepath.IsAbs(strings.TrimPrefix(strings.ToLower(p), "file://"))
}

// findOrGenerate returns dir's kustomization file, or generates one (created
// true) whose resources are every .yaml and .yml file below dir that parses
// as Kubernetes objects and every sub-folder that holds a kustomization file
// (not descended into), as Flux's findOrGenerateKustomization does. A folder
// with none gets the namespace "_placeholder", which keeps kustomize from
// refusing an empty kustomization.
func findOrGenerate(fs filesys.FileSystem, root, dir string) (data []byte, kfile string, created bool, err error) {
	for _, n := range kustomizationNames {
		p := filepath.Join(dir, n)
		if fs.Exists(p) && !fs.IsDir(p) {
			data, err := fs.ReadFile(p)
			return data, p, false, err
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", false, err
	}
	files, err := scanManifests(fs, root, abs)
	if err != nil {
		return nil, "", false, err
	}
	kus := kustypes.Kustomization{TypeMeta: kustypes.TypeMeta{
		APIVersion: kustypes.KustomizationVersion,
		Kind:       kustypes.KustomizationKind,
	}}
	for _, f := range files {
		kus.Resources = append(kus.Resources, strings.Replace(f, abs, ".", 1))
	}
	if len(kus.Resources) == 0 {
		kus.Namespace = "_placeholder"
	}
	data, err = yaml.Marshal(kus)
	return data, filepath.Join(dir, konfig.DefaultKustomizationFileName()), true, err
}

// scanManifests lists the resources of a generated kustomization for folder
// base (absolute), as Flux's scanManifests does: walking it in lexical order,
// a sub-folder holding a kustomization file is listed and not descended
// into; a .yaml or .yml file is listed when kustomize's resource factory
// reads it, and one it cannot read fails the build (named relative to root).
func scanManifests(fs filesys.FileSystem, root, base string) ([]string, error) {
	var paths []string
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	err := fs.Walk(base, func(p string, info os.FileInfo, err error) (walkErr error) {
		if err != nil || p == base {
			return err
		}
		if info.IsDir() {
			for _, n := range kustomizationNames {
				if k := filepath.Join(p, n); fs.Exists(k) && !fs.IsDir(k) {
					paths = append(paths, p)
					return filepath.SkipDir
				}
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := fs.ReadFile(p)
		if err != nil {
			return err
		}
		// kustomize's YAML parser may panic on odd input, as Flux notes.
		defer func() {
			if r := recover(); r != nil {
				walkErr = fmt.Errorf("%s: kustomize cannot read it as Kubernetes YAML", relTo(root, p))
			}
		}()
		if _, err := rf.SliceFromBytes(data); err != nil {
			return fmt.Errorf("%s: kustomize cannot read it as Kubernetes YAML: %w", relTo(root, p), err)
		}
		paths = append(paths, p)
		return nil
	})
	return paths, err
}
