package publish

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/tree"
)

// renderedTopLevel are the entries a render writes at the top of its output
// (SPEC §3). With spec.source.path "" they are owned by the publisher even when
// this render has none of them (so a folder that went away is removed), and
// nothing else at the repository root is.
var renderedTopLevel = []string{".sops.yaml", "agents", "clusters", "manager"}

// file is one published file.
type file struct {
	data []byte
	exec bool
}

// content is the published tree: files by slash path relative to the source
// root, and the subtrees it owns (replaced as a whole; everything else in the
// target is left alone).
type content struct {
	files map[string]file
	roots []string // sorted, none inside another
}

// paths returns the file paths, sorted.
func (c *content) paths() []string {
	out := make([]string, 0, len(c.files))
	for p := range c.files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// collect reads the rendered tree in outDir (placed at spec.source.path) and
// the top-level folder of every layer path from the source root f.Dir.
//
// A layer's whole top-level folder is copied, not just its expanded path, so
// that every ${label} expansion and every `../base` a kustomization refers to
// resolves. When the rendered tree and a layer folder hold the same path, the
// rendered file wins.
func collect(f *schema.Fleet, outDir string, log *slog.Logger) (*content, error) {
	base, err := cleanRel(f.Spec.Source.Path)
	if err != nil {
		return nil, schema.Invalid(fmt.Errorf("spec.source.path %q: %w", f.Spec.Source.Path, err))
	}
	c := &content{files: map[string]file{}}
	roots := map[string]bool{}

	info, err := os.Stat(outDir)
	if err != nil {
		return nil, fmt.Errorf("read rendered tree: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("read rendered tree: %s is not a folder", outDir)
	}
	if err := readTree(outDir, "", func(rel string, fl file) {
		c.files[path.Join(base, rel)] = fl
		if base == "" {
			roots[strings.SplitN(rel, "/", 2)[0]] = true
		}
	}, "", log); err != nil {
		return nil, fmt.Errorf("read rendered tree %s: %w", outDir, err)
	}
	if len(c.files) == 0 {
		return nil, fmt.Errorf("read rendered tree %s: no files (run `fleetgen render -o %s` first)", outDir, outDir)
	}
	if base == "" {
		for _, r := range renderedTopLevel {
			roots[r] = true
		}
	} else {
		roots[base] = true
	}

	layerRoots, err := layerFolders(f)
	if err != nil {
		return nil, err
	}
	absOut, _ := filepath.Abs(outDir)
	for _, lr := range layerRoots {
		dir := filepath.Join(f.Dir, filepath.FromSlash(lr.root))
		info, err := os.Stat(dir)
		if err != nil || !info.IsDir() {
			return nil, schema.Invalid(fmt.Errorf("layer %s: folder %s not found in the source root %s", lr.layer, lr.root, f.Dir))
		}
		roots[lr.root] = true
		if err := readTree(dir, lr.root, func(rel string, fl file) {
			if _, ok := c.files[rel]; ok {
				log.Warn("rendered file shadows a layer file", "path", rel, "layer", lr.layer)
				return
			}
			c.files[rel] = fl
		}, absOut, log); err != nil {
			return nil, fmt.Errorf("read layer %s folder %s: %w", lr.layer, lr.root, err)
		}
	}

	// Keep only outermost roots.
	all := make([]string, 0, len(roots))
	for r := range roots {
		all = append(all, r)
	}
	sort.Strings(all)
	for _, r := range all {
		if len(c.roots) > 0 && within(r, c.roots[len(c.roots)-1]) {
			continue
		}
		c.roots = append(c.roots, r)
	}
	return c, nil
}

// within reports whether p is root or inside it (slash paths).
func within(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/")
}

type layerRoot struct{ layer, root string }

// layerFolders returns, sorted by folder, the top-level folder of every layer
// path; a path whose first element holds a ${variable} gives the expansion for
// every cluster the layer selects.
func layerFolders(f *schema.Fleet) ([]layerRoot, error) {
	seen := map[string]bool{}
	var out []layerRoot
	add := func(layer, p string) error {
		rel, err := cleanRel(p)
		if err != nil || rel == "" {
			return schema.Invalid(fmt.Errorf("layer %s: path %q must be a folder inside the source root", layer, p))
		}
		top := strings.SplitN(rel, "/", 2)[0]
		if top == ".git" {
			return schema.Invalid(fmt.Errorf("layer %s: path %q must not be in .git", layer, p))
		}
		if !seen[top] {
			seen[top] = true
			out = append(out, layerRoot{layer: layer, root: top})
		}
		return nil
	}
	for _, l := range f.Spec.Layers {
		rel := strings.TrimPrefix(l.Path, "./")
		first := strings.SplitN(rel, "/", 2)[0]
		if !strings.Contains(first, "${") {
			if err := add(l.Name, l.Path); err != nil {
				return nil, err
			}
			continue
		}
		for i := range f.Spec.Clusters {
			cl := &f.Spec.Clusters[i]
			if !schema.Selects(l.Selector, cl.Labels) {
				continue
			}
			if err := add(l.Name, schema.ExpandPath(l.Path, cl)); err != nil {
				return nil, err
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].root < out[j].root })
	return out, nil
}

// cleanRel cleans a slash path relative to a root: "" for the root itself; an
// absolute path or one that leaves the root is an error.
func cleanRel(p string) (string, error) {
	p = strings.ReplaceAll(p, "\\", "/")
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("must be relative")
	}
	c := path.Clean(p)
	if c == "." {
		return "", nil
	}
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("must stay inside the root")
	}
	return c, nil
}

// readTree calls add for every regular file under dir with its slash path
// (prefixed with prefix). It skips .git folders, the folder skip (an absolute
// path, e.g. the output folder inside a layer folder) and, with a warning,
// symlinks and other non-regular files.
func readTree(dir, prefix string, add func(rel string, f file), skip string, log *slog.Logger) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && d.Name() == ".git" {
				return filepath.SkipDir
			}
			// fleetgen's own files (lock, journal, stat cache) are never content.
			if filepath.Dir(p) == dir && d.Name() == tree.MetaDir {
				return filepath.SkipDir
			}
			if skip != "" && p != dir {
				if abs, err := filepath.Abs(p); err == nil && abs == skip {
					return filepath.SkipDir
				}
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if tree.IsInternal(filepath.ToSlash(rel)) {
			return nil // a leftover of a killed render
		}
		rel = path.Join(prefix, filepath.ToSlash(rel))
		if !d.Type().IsRegular() {
			log.Warn("not publishing a file that is not regular (symlink?)", "path", rel)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		add(rel, file{data: data, exec: info.Mode()&0o111 != 0})
		return nil
	})
}
