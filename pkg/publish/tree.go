package publish

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/safefs"
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/secrets"
	"fleetgen.dev/fleetgen/pkg/tree"
)

// file is one published file.
type file struct {
	data   []byte
	exec   bool
	secret bool // a credential file of the render (layout.File.Secret)
	layer  bool // copied from a layer folder of the source root
}

// content is the published tree: the render and the layer folders' files by
// slash path relative to the source root, and where each ownership rule
// applies in the target.
type content struct {
	files map[string]file
	// rendered are the folders (or files) where a file carrying
	// layout.Header that this render lacks is removed, sorted: spec.source.path,
	// or with path "" only what a render writes at the top (layout.Top, .sops.yaml).
	rendered []string
	// layers are the layer paths' top-level folders, where a file the source
	// root lacks is removed when a publish of this fleet put it there. Sorted.
	layers []string
	// base is spec.source.path, cleaned ("" for the root): where the
	// rendered tree sits.
	base string
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

// generateFiles returns c as generate.Files, sorted, for the content checks.
func (c *content) generateFiles() []layout.File {
	out := make([]layout.File, 0, len(c.files))
	for _, p := range c.paths() {
		fl := c.files[p]
		out = append(out, layout.File{Path: p, Data: fl.data, Secret: fl.secret})
	}
	return out
}

// PlaintextError refuses a publish whose content holds a Secret with
// plaintext data, in the render or in a layer folder.
type PlaintextError struct {
	// Found names each file and Secret, never content.
	Found []secrets.Finding
}

func (e *PlaintextError) Error() string {
	return fmt.Sprintf("nothing pushed: %d Secret(s) with plaintext data would be published (encrypt them with SOPS, see docs/secrets.md; "+
		"publish never pushes plaintext credentials):%s", len(e.Found), secrets.List(e.Found))
}

// collect builds what a publish pushes: the rendered files (placed at
// spec.source.path) and every file of the top-level folder of every layer
// path, read from the source root f.Dir, and nothing else. It then runs the
// content checks on all of it: a Secret with plaintext data anywhere refuses
// the publish (*PlaintextError), then every WithContentCheck.
//
// A layer's whole top-level folder is copied, not just its expanded path, so
// that every ${label} expansion and every `../base` a kustomization refers to
// resolves. When the render and a layer folder hold the same path, the
// rendered file wins. A layer folder must be a real folder inside f.Dir (not a
// symlink); inside it only regular files are read (symlinks and the like are
// skipped with a warning), .git folders and the output folder (WithOutDir)
// are skipped.
func collect(f *schema.Fleet, rendered []layout.File, o *options) (*content, error) {
	base, err := cleanRel(f.Spec.Source.Path)
	if err != nil {
		return nil, problem.Invalid(fmt.Errorf("spec.source.path %q: %w", f.Spec.Source.Path, err))
	}
	if len(rendered) == 0 {
		return nil, errors.New("publish: the render holds no files")
	}
	c := &content{files: make(map[string]file, len(rendered)), base: base}
	for _, r := range rendered {
		rel, err := cleanRel(r.Path)
		if err != nil || rel == "" || rel != r.Path {
			return nil, fmt.Errorf("publish: rendered path %q is not a clean relative path", r.Path)
		}
		c.files[path.Join(base, rel)] = file{data: r.Data, secret: r.Secret}
	}
	if base == "" {
		c.rendered = slices.Sorted(slices.Values(append([]string{layout.SOPSConfig.Path()}, layout.Top...)))
	} else {
		c.rendered = []string{base}
	}

	err = readLayers(f, o.input, o.outDir, o.logger, func(root string) { c.layers = append(c.layers, root) }, func(rel, layer string, fl file) {
		if _, ok := c.files[rel]; ok {
			o.logger.Warn("rendered file shadows a layer file", "path", rel, "layer", layer)
			return
		}
		fl.layer = true
		c.files[rel] = fl
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(c.layers)

	files := c.generateFiles()
	scan := secrets.ExceptPublic(files) // Argo CD cluster Secrets hold no credential
	if o.templates != nil {
		scan = slices.DeleteFunc(slices.Clone(scan), func(f layout.File) bool { return c.files[f.Path].layer && o.templates(f.Path) })
	}
	found, err := secrets.Plaintext(scan)
	if err != nil {
		return nil, fmt.Errorf("publish: nothing pushed: %w", err)
	}
	if len(found) > 0 {
		return nil, &PlaintextError{Found: found}
	}
	for _, check := range o.checks {
		if err := check(files); err != nil {
			return nil, fmt.Errorf("publish: nothing pushed: %w", err)
		}
	}
	return c, nil
}

// LayerFiles returns, sorted by path, the files publish copies from f's layer
// folders and input (WithInput's files), relative to the source root: every
// file of the top-level folder of every layer path and each input file,
// inside a Git work tree only those Git tracks, outDir and the rendered tree
// skipped. The input checks scan them as publish will (SPEC §5: every file
// publish copies, whether a build uses it or not). A layer folder that is
// missing or a symlink is an input error.
func LayerFiles(f *schema.Fleet, input []string, outDir string, log *slog.Logger) ([]layout.File, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var out []layout.File
	err := readLayers(f, input, outDir, log, func(string) {}, func(rel, _ string, fl file) {
		out = append(out, layout.File{Path: rel, Data: fl.data})
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// readLayers reads the files publish copies from f's layer folders and
// input: for each top-level folder (root, in order), add gets every regular
// file publish takes from it (see collect), then each input file outside
// them. Nothing in the rendered tree is read: it is output, never input
// (SPEC §6), whatever a layer folder that shares its top-level folder holds.
func readLayers(f *schema.Fleet, input []string, outDir string, log *slog.Logger, root func(string), add func(rel, layer string, fl file)) error {
	layerRoots, err := layerFolders(f)
	if err != nil {
		return err
	}
	skip := ""
	if outDir != "" {
		if skip, err = filepath.Abs(outDir); err != nil {
			return err
		}
	}
	// Inside a Git work tree, only what Git tracks is published (SPEC §6):
	// an ignored or untracked file never is, so that the commit the message
	// names holds everything pushed.
	tracked, err := trackedFilter(f.Dir)
	if err != nil {
		return err
	}
	keep := func(rel string) bool {
		return f.InRendered(rel) == "" && (tracked == nil || tracked(rel))
	}
	var roots []string
	for _, lr := range layerRoots {
		dir := filepath.Join(f.Dir, filepath.FromSlash(lr.root))
		info, err := os.Lstat(dir)
		switch {
		case err != nil || info.Mode()&fs.ModeSymlink == 0 && !info.IsDir():
			return problem.Invalid(fmt.Errorf("layer %s: folder %s not found in the source root %s", lr.layer, lr.root, f.Dir))
		case info.Mode()&fs.ModeSymlink != 0:
			return problem.Invalid(fmt.Errorf("layer %s: folder %s is a symlink: a layer folder must be a folder inside the source root %s", lr.layer, lr.root, f.Dir))
		}
		root(lr.root)
		roots = append(roots, lr.root)
		if err := readTree(dir, lr.root, func(rel string, fl file) { add(rel, lr.layer, fl) }, keep, skip, log); err != nil {
			return fmt.Errorf("read layer %s folder %s: %w", lr.layer, lr.root, err)
		}
	}
	return readInput(f, input, roots, keep, root, add)
}

// readInput reads each input file outside roots (the layer folders read
// already), confined to the source root; the top-level folder of each is a
// root of what publish owns.
func readInput(f *schema.Fleet, input, roots []string, keep func(string) bool, root func(string), add func(rel, layer string, fl file)) error {
	var todo []string
	for _, p := range input {
		rel, err := cleanRel(p)
		if err != nil || rel == "" || strings.SplitN(rel, "/", 2)[0] == ".git" || !keep(rel) {
			continue
		}
		if !slices.ContainsFunc(roots, func(r string) bool { return within(rel, r) }) {
			todo = append(todo, rel)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	sr, err := safefs.OpenRoot(f.Dir)
	if err != nil {
		return err
	}
	defer sr.Close()
	tops := map[string]bool{}
	for _, rel := range todo {
		data, err := sr.ReadFile(filepath.FromSlash(rel), maxLayerFile)
		switch {
		case errors.Is(err, safefs.ErrTooLarge):
			return problem.Invalid(fmt.Errorf("%s is larger than %d MiB: want a smaller file", rel, maxLayerFile>>20))
		case errors.Is(err, safefs.ErrNotRegular), errors.Is(err, safefs.ErrOutside):
			return problem.Invalid(fmt.Errorf("%s is not a regular file inside the source root %s: want regular files only", rel, f.Dir))
		case err != nil:
			return fmt.Errorf("read %s: %w", rel, err)
		}
		if top := strings.SplitN(rel, "/", 2)[0]; top != rel && !tops[top] {
			tops[top] = true
			root(top)
		}
		add(rel, "", file{data: data})
	}
	return nil
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
			return problem.Invalid(fmt.Errorf("layer %s: path %q must be a folder inside the source root", layer, p))
		}
		top := strings.SplitN(rel, "/", 2)[0]
		if top == ".git" {
			return problem.Invalid(fmt.Errorf("layer %s: path %q must not be in .git", layer, p))
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

// maxLayerFile is the largest layer file publish reads, as for fleet.yaml (and
// as the layer builds allow).
const maxLayerFile = schema.MaxFileSize

// readTree calls add for every regular file under dir with its slash path
// (prefixed with prefix) that keep accepts (nil: all). It skips .git folders, the folder skip (an absolute
// path, e.g. the output folder inside a layer folder) and, with a warning,
// symlinks. A FIFO, device or socket, or a file larger than maxLayerFile, is
// an input error naming it (a pull request can commit a FIFO or a sparse 8 GiB
// file); files are read through safefs: opened without blocking, checked with
// fstat(2), read through a limit.
func readTree(dir, prefix string, add func(rel string, f file), keep func(rel string) bool, skip string, log *slog.Logger) error {
	root, err := safefs.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
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
		local := rel
		rel = path.Join(prefix, filepath.ToSlash(rel))
		if keep != nil && !keep(rel) {
			log.Debug("not publishing a file Git does not track, or of the rendered tree", "path", rel)
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			log.Warn("not publishing a symlink", "path", rel)
			return nil
		}
		if !d.Type().IsRegular() {
			return problem.Invalid(fmt.Errorf("%s is not a regular file (a FIFO, device or socket): want regular files only in a layer folder", rel))
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := root.ReadFile(local, maxLayerFile)
		switch {
		case errors.Is(err, safefs.ErrTooLarge):
			return problem.Invalid(fmt.Errorf("%s is larger than %d MiB: want a smaller file", rel, maxLayerFile>>20))
		case errors.Is(err, safefs.ErrNotRegular):
			return problem.Invalid(fmt.Errorf("%s is not a regular file (a FIFO, device or socket): want regular files only in a layer folder", rel))
		case err != nil:
			return err
		}
		add(rel, file{data: data, exec: info.Mode()&0o111 != 0})
		return nil
	})
}
