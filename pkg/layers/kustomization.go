package layers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/provider"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizationFor returns the kustomization kustomize-controller builds
// folder dir with, and where it stands: what Flux's generator
// (fluxcd/pkg/kustomize Generator.GenerateManifest, v1.35) makes of it for a
// Kustomization that sets none of the fields it copies in (fleetgen's set
// only spec.images, which the model leaves out: see Model).
//
// That is the folder's own kustomization file, decoded into kustomize's
// Kustomization type and encoded again (fields kustomize does not know are
// dropped; one without resources gets buildMetadata originAnnotations, so
// that kustomize does not call it empty), or, for a folder without one, a
// kustomization listing every Kubernetes manifest below it (findOrGenerate).
// Reads go through fs, the confined file system of the build.
func kustomizationFor(fs filesys.FileSystem, root, dir string) ([]byte, string, error) {
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
	manifest, err := yaml.Marshal(kus)
	return manifest, kfile, err
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
