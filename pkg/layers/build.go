package layers

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	securefs "github.com/fluxcd/pkg/kustomize/filesys"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/yaml"
)

// builder runs kustomize confined to one folder (the folder of fleet.yaml).
type builder struct {
	root  string // absolute, symlinks resolved
	fs    filesys.FileSystem
	guard *guardFS
}

// newBuilder returns a builder confined to root.
//
// Reads go through Flux's secure file system (fluxcd/pkg/kustomize/filesys),
// the one kustomize-controller builds with: every path, symlinks resolved, must
// stay inside root. Without MakeFsOnDiskSecureBuild's allowance for kustomize's
// temporary clone folders, a remote base cannot be read even if cloned; and
// refuseRemote rejects remote references before kustomize could fetch them.
// Every read goes through guardFS (regular files of bounded size only).
func newBuilder(root string) (*builder, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if ev, err := filepath.EvalSymlinks(abs); err == nil {
		abs = ev
	}
	fs, err := securefs.MakeFsOnDiskSecure(abs)
	if err != nil {
		return nil, err
	}
	guard, err := newGuardFS(fs, abs)
	if err != nil {
		return nil, err
	}
	return &builder{root: abs, fs: guard, guard: guard}, nil
}

// build runs kustomize on the folder rel (slash-separated, relative to root)
// as kustomize-controller does for a Kustomization whose spec adds ov (nil
// for a layer's): a folder without a kustomization.yaml gets a generated one
// listing its manifests, the spec's fields are set on it, plugins are off,
// and files outside the kustomization folder (but inside root) may be
// loaded.
//
// A file the build may not read (not regular, too large) is an error that
// names it; an I/O failure of the file system, or a panic in kustomize, is a
// *Failure (not the input's fault).
func (b *builder) build(rel string, ov *overlay) (objs []*Object, err error) {
	defer func() {
		refused, failed := b.guard.reset()
		switch {
		case refused != nil:
			objs, err = nil, refused
		case failed != nil:
			objs, err = nil, &Failure{failed}
		}
	}()
	dir := filepath.Join(b.root, filepath.FromSlash(rel))
	if !b.fs.Exists(dir) {
		if _, err := os.Lstat(dir); err == nil {
			return nil, errors.New("it resolves to a path that is not in or below the folder of fleet.yaml (a symlink): want a folder inside it")
		}
		return nil, errNoFolder
	}
	if !b.fs.IsDir(dir) {
		return nil, errors.New("not a folder")
	}
	manifest, kfile, err := kustomizationFor(b.fs, b.root, dir, ov)
	if err != nil {
		return nil, err
	}
	scan := &scan{seen: map[string]bool{}}
	if err := scan.refuseRemote(b.fs, b.root, dir, kfile, manifest); err != nil {
		return nil, err
	}
	// Ask kustomize to record each object's file, for messages that name it.
	var k map[string]any
	if err := yaml.Unmarshal(manifest, &k); err != nil {
		return nil, err
	}
	if k == nil {
		k = map[string]any{}
	}
	meta, _ := k["buildMetadata"].([]any)
	k["buildMetadata"] = append(meta, "originAnnotations")
	manifest, err = yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	// Writes go to memory only: the layer folder is never changed.
	mem := securefs.MakeFsInMemory(b.fs)
	if err := mem.WriteFile(kfile, manifest); err != nil {
		return nil, err
	}
	rm, err := run(mem, dir, scan.openAPI, true)
	if errors.Is(err, errPanic) {
		return nil, &Failure{err}
	}
	if err != nil {
		return nil, err
	}
	keepOrigin := ov != nil && slices.Contains(ov.BuildMetadata, "originAnnotations")
	var out []*Object
	for _, r := range rm.Resources() {
		var origin string
		o, err := r.GetOrigin()
		if err != nil {
			return nil, err
		}
		if o != nil {
			// kustomize records the file relative to the folder built.
			origin = filepath.ToSlash(o.Path)
			if origin == "" && o.ConfiguredIn != "" {
				origin = filepath.ToSlash(o.ConfiguredIn)
			}
			if origin != "" {
				origin = path.Join(rel, origin)
			}
			// Flux's build carries no such annotation unless the
			// Kustomization asks for it: drop it.
			if !keepOrigin {
				if err := r.SetOrigin(nil); err != nil {
					return nil, err
				}
			}
		}
		obj, err := buildObject(r, origin)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

var errNoFolder = errors.New("no such folder")

// buildMu serialises kustomize builds: kustomize keeps global state (its
// OpenAPI schema) and is not safe for concurrent builds.
var buildMu sync.Mutex

// errPanic marks a panic in kustomize, recovered: a bug, not the input's fault.
var errPanic = errors.New("kustomize build panicked")

// Failure is a build error that is not the input's fault: an I/O error of the
// file system, a panic in kustomize. Discover returns it as a runtime error
// (exit 1), not as a problem of fleet.yaml.
type Failure struct{ err error }

func (e *Failure) Error() string { return e.err.Error() }
func (e *Failure) Unwrap() error { return e.err }

// Kustomization fields whose entries kustomize loads as folders (another
// kustomization) or files, and which kustomize would fetch when they name a
// URL or a Git repository.
var (
	treeFields = []string{"resources", "bases", "components", "generators", "transformers", "validators"}
	fileFields = []string{"crds", "configurations", "patchesStrategicMerge"}
	pathFields = []string{"patches", "patchesJson6902", "replacements"}
	genFields  = []string{"configMapGenerator", "secretGenerator"}
)

// scan is one walk over the kustomizations a build reads.
type scan struct {
	seen map[string]bool // folders already checked
	// openAPI is set when a kustomization brings its own OpenAPI schema,
	// which kustomize keeps in a global for the builds that follow.
	openAPI bool
}

// run builds dir with the options of fluxcd/pkg/kustomize.Build (files
// outside the kustomization folder allowed, plugins off, panics recovered),
// one build at a time (kustomize keeps global state). Flux resets kustomize's
// global OpenAPI schema around every build, which costs about 0.1 s of CPU
// each; fleetgen builds one layer after another in one process, so it resets
// only around a build whose kustomizations set openapi, the only way a build
// changes that global, and then as Flux does: built-in schema loaded first,
// reset again afterwards.
//
// Outside (false for a Fleet bundle, built root-only) allows files outside
// the kustomization folder.
func run(fs filesys.FileSystem, dir string, resetOpenAPI, outside bool) (rm resmap.ResMap, err error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			// Not quoted: a panic's message may hold what a layer says.
			rm, err = nil, errPanic
		}
	}()
	if resetOpenAPI {
		openapi.ResetOpenAPI()
		_ = openapi.Schema()
		defer openapi.ResetOpenAPI()
	}
	lr := types.LoadRestrictionsRootOnly
	if outside {
		lr = types.LoadRestrictionsNone
	}
	k := krusty.MakeKustomizer(&krusty.Options{
		LoadRestrictions: lr,
		PluginConfig:     types.DisabledPluginConfig(),
	})
	return k.Run(fs, dir)
}

// refuseRemote checks the kustomization data of folder dir, and every local
// kustomization it includes, for anything kustomize would fetch from the
// network (http(s) files, Git repositories): fleetgen builds fetch nothing.
// Reads outside root are left to the secure file system, which refuses them.
func (sc *scan) refuseRemote(fs filesys.FileSystem, root, dir, kfile string, data []byte) error {
	if sc.seen[dir] {
		return nil
	}
	sc.seen[dir] = true
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("%s: %w", relTo(root, kfile), err)
	}
	where := func(field string) string { return relTo(root, kfile) + ": " + field }
	var errs []string
	for _, field := range treeFields {
		for _, e := range strs(k[field]) {
			if strings.Contains(e, "\n") { // an inline generator or transformer
				if hasURL(e) {
					errs = append(errs, fmt.Sprintf("%s: an inline configuration names a URL: fleetgen fetches nothing remote", where(field)))
				}
				continue
			}
			if remote(e) {
				// Whatever is on disk under that name: kustomize decides by
				// the name (see remote).
				errs = append(errs, fmt.Sprintf("%s[%d]: kustomize would fetch this entry with git or HTTP (a remote base, a URL or user@host:repo): fleetgen fetches nothing remote, want a file or folder inside the folder of fleet.yaml", where(field), index(k[field], e)))
				continue
			}
			p := filepath.Join(dir, filepath.FromSlash(e))
			switch {
			case fs.IsDir(p):
				sub, subFile, err := kustomizationIn(fs, p)
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: %v", where(field), err))
				} else if sub != nil {
					if err := sc.refuseRemote(fs, root, p, subFile, sub); err != nil {
						errs = append(errs, err.Error())
					}
				}
			case fs.Exists(p):
				if field == "generators" || field == "transformers" || field == "validators" {
					if b, err := fs.ReadFile(p); err == nil && hasURL(string(b)) {
						errs = append(errs, fmt.Sprintf("%s: %s names a URL: fleetgen fetches nothing remote", where(field), relTo(root, p)))
					}
				}
			default:
				// Not a local file or folder: kustomize would try it as a
				// Git repository or URL.
				errs = append(errs, fmt.Sprintf("%s: %q is neither a file nor a folder inside the folder of fleet.yaml (fleetgen fetches nothing remote)", where(field), e))
			}
		}
	}
	for _, field := range fileFields {
		for _, e := range strs(k[field]) {
			if !strings.Contains(e, "\n") && remote(e) {
				errs = append(errs, fmt.Sprintf("%s: entry %d is remote: fleetgen fetches nothing remote", where(field), index(k[field], e)))
			}
		}
	}
	for _, field := range pathFields {
		for i, e := range list(k[field]) {
			if m, ok := e.(map[string]any); ok {
				if p, _ := m["path"].(string); remote(p) {
					errs = append(errs, fmt.Sprintf("%s[%d].path is remote: fleetgen fetches nothing remote", where(field), i))
				}
			}
		}
	}
	for _, field := range genFields {
		for i, e := range list(k[field]) {
			m, _ := e.(map[string]any)
			files := append(strs(m["files"]), strs(m["envs"])...)
			if env, _ := m["env"].(string); env != "" {
				files = append(files, env)
			}
			for _, f := range files {
				if _, v, ok := strings.Cut(f, "="); ok {
					f = v
				}
				if remote(f) {
					errs = append(errs, fmt.Sprintf("%s[%d]: a file is remote: fleetgen fetches nothing remote", where(field), i))
					break
				}
			}
		}
	}
	if k["openapi"] != nil {
		sc.openAPI = true
	}
	if o, ok := k["openapi"].(map[string]any); ok {
		if p, _ := o["path"].(string); remote(p) {
			errs = append(errs, fmt.Sprintf("%s.path is remote: fleetgen fetches nothing remote", where("openapi")))
		}
	}
	if k["helmCharts"] != nil || k["helmGlobals"] != nil {
		errs = append(errs, fmt.Sprintf("%s: Helm charts are not inflated by Flux's kustomize-controller (plugins are off): want a HelmRelease", where("helmCharts")))
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// kustomizationIn returns the kustomization file of folder dir and its path,
// nil when it has none (a folder of plain manifests kustomize would reject
// anyway).
func kustomizationIn(fs filesys.FileSystem, dir string) ([]byte, string, error) {
	for _, n := range kustomizationNames {
		p := filepath.Join(dir, n)
		if fs.Exists(p) && !fs.IsDir(p) {
			data, err := fs.ReadFile(p)
			return data, p, err
		}
	}
	return nil, "", nil
}

// hasURL reports whether text holds a URL kustomize could fetch.
func hasURL(s string) bool {
	return strings.Contains(s, "://") || strings.Contains(s, "git@")
}

func relTo(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func strs(v any) []string {
	var out []string
	for _, e := range list(v) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func index(v any, s string) int {
	for i, e := range list(v) {
		if e == s {
			return i
		}
	}
	return -1
}
