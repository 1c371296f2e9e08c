package layers

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"fleetgen.dev/fleetgen/internal/safefs"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// MaxFileSize is the largest file a layer build reads, as for fleet.yaml: a
// bigger one (a sparse 8 GiB file costs nothing to commit) is an input error
// found with fstat(2), before any byte is read.
const MaxFileSize = schema.MaxFileSize

// remote reports whether kustomize would fetch s rather than read it from
// disk, whatever is on disk under that name. It is a superset of kustomize's
// own two tests (api v0.21, internal/loader and internal/git):
//
//   - FileLoader.Load fetches s over HTTP when url.Parse gives it the scheme
//     http or https (IsRemoteFile);
//   - FileLoader.New (resources, bases, components, generators, …) clones s
//     with `git fetch` when git.NewRepoSpecFromURL parses it, which it does,
//     after cutting "?query" and one "git::" prefix, for a scheme
//     (ssh://, https://, http://, file://, any case), a user name
//     (`x@host:repo`: ^[a-zA-Z][a-zA-Z0-9-]*@) or github.com/ or github.com:.
//
// A folder named "x@127.0.0.1:repo.git" exists on disk, passes a local-folder
// check, and still makes kustomize run git: the name decides, not the disk.
func remote(s string) bool {
	if strings.Contains(s, "://") || strings.HasPrefix(strings.ToLower(s), "git::") {
		return true
	}
	if u, err := url.Parse(s); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return true
	}
	if filepath.IsAbs(s) {
		return false // NewRepoSpecFromURL refuses absolute paths
	}
	s, _, _ = strings.Cut(s, "?")
	if gitUser.MatchString(s) {
		return true
	}
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "github.com/") || strings.HasPrefix(l, "github.com:")
}

// gitUser is kustomize's user name pattern of an scp-style Git address.
var gitUser = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@`)

// kustomizationNames are the file names kustomize reads a kustomization from.
var kustomizationNames = konfig.RecognizedKustomizationFileNames()

// guardFS is the file system a build reads through: Flux's secure file system
// for every question about paths (it refuses anything outside root, symlinks
// resolved), and safefs for every read, so that only regular files of at most
// MaxFileSize bytes are read, opened without blocking (a FIFO would block
// open(2) until a writer comes) and read through a limit (a file that grows).
//
// The first refusal and the first I/O failure of a build are kept: kustomize
// wraps or swallows errors (a failed read of a resource is retried as a
// folder), and the build must report the file, as an input error for a
// refusal and as a runtime failure otherwise.
type guardFS struct {
	filesys.FileSystem
	root string // absolute, symlinks resolved
	sr   *safefs.Root

	mu      sync.Mutex
	refused error // first refusal: not regular, too large
	failed  error // first I/O failure that is not the input's fault
	// budget bounds the bytes read in all (0: no bound); read counts them.
	// Past it every read fails and the builds stop with a *LimitError.
	budget, read int64
	// files are the files read, relative to the root, slash-separated;
	// since those read since the last take.
	files map[string]bool
	since map[string]bool
}

// take returns the files read since the last take, sorted.
func (g *guardFS) take() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := keys(g.since)
	g.since = nil
	return out
}

func newGuardFS(inner filesys.FileSystem, root string) (*guardFS, error) {
	sr, err := safefs.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	return &guardFS{FileSystem: inner, root: root, sr: sr, files: map[string]bool{}}, nil
}

// reset forgets the refusals and failures of the previous build.
func (g *guardFS) reset() (refused, failed error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	refused, failed = g.refused, g.failed
	g.refused, g.failed = nil, nil
	return refused, failed
}

// rel returns p relative to the root, or ok false when it is not inside.
func (g *guardFS) rel(p string) (string, bool) {
	if !filepath.IsAbs(p) {
		var err error
		if p, err = filepath.Abs(p); err != nil {
			return "", false
		}
	}
	r, err := filepath.Rel(g.root, filepath.Clean(p))
	if err != nil || !filepath.IsLocal(r) {
		return "", false
	}
	return r, true
}

// ReadFile reads p through safefs, confined to the root.
func (g *guardFS) ReadFile(p string) ([]byte, error) {
	r, ok := g.rel(p)
	if !ok {
		// Outside the root: the secure file system refuses it with its own
		// message (kustomize reports that).
		return g.FileSystem.ReadFile(p)
	}
	data, err := g.sr.ReadFile(r, MaxFileSize)
	if errors.Is(err, safefs.ErrOutside) {
		// os.Root refuses every absolute symlink, also one that leads to a
		// file inside the root, which the secure file system allows: read
		// that one at its real place. Anything else outside is the secure
		// file system's to refuse, with its own message.
		r2, inside := g.realInside(r)
		if !inside {
			return g.FileSystem.ReadFile(p)
		}
		r = r2
		data, err = g.sr.ReadFile(r, MaxFileSize)
	}
	if errors.Is(err, safefs.ErrNotRegular) && g.FileSystem.IsDir(p) {
		// kustomize tries every resource as a file first, then as a folder.
		return nil, err
	}
	if err != nil {
		return nil, g.note(r, err)
	}
	if err := g.spend(len(data)); err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.files[filepath.ToSlash(r)] = true
	if g.since == nil {
		g.since = map[string]bool{}
	}
	g.since[filepath.ToSlash(r)] = true
	g.mu.Unlock()
	return data, nil
}

// spend counts n bytes read against the budget.
func (g *guardFS) spend(n int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.read += int64(n)
	if g.budget > 0 && g.read > g.budget {
		if g.refused == nil {
			g.refused = &LimitError{fmt.Sprintf("the layer builds read more than %d MiB in all: want smaller layer folders", g.budget>>20)}
		}
		return g.refused
	}
	return nil
}

// Open checks p as ReadFile does before the secure file system opens it.
// kustomize's build does not call it; it is here so that nothing reads past
// the guard.
func (g *guardFS) Open(p string) (filesys.File, error) {
	if r, ok := g.rel(p); ok {
		if err := g.check(r); err != nil {
			return nil, err
		}
	}
	return g.FileSystem.Open(p)
}

// check checks r (relative to the root) as ReadFile would, without reading
// it: opened without blocking inside the root, and fstat(2) says a regular
// file of at most MaxFileSize bytes (or a folder).
func (g *guardFS) check(r string) error {
	err := g.sr.Check(r, MaxFileSize)
	if errors.Is(err, safefs.ErrOutside) {
		if r2, inside := g.realInside(r); inside {
			r = r2
			err = g.sr.Check(r, MaxFileSize)
		}
	}
	if err != nil {
		return g.note(r, err)
	}
	return nil
}

// realInside returns r's real path (every symlink resolved, without opening
// anything) relative to the root, and whether that is inside the root.
func (g *guardFS) realInside(r string) (string, bool) {
	real, err := filepath.EvalSymlinks(filepath.Join(g.root, r))
	if err != nil {
		return "", false
	}
	return g.rel(real)
}

// note keeps the first refusal or failure and returns err for kustomize.
func (g *guardFS) note(r string, err error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case errors.Is(err, safefs.ErrNotRegular):
		if g.refused == nil {
			g.refused = fmt.Errorf("%s is not a regular file (a FIFO, device or socket): want a regular file", filepath.ToSlash(r))
		}
	case errors.Is(err, safefs.ErrTooLarge):
		if g.refused == nil {
			g.refused = fmt.Errorf("%s is larger than %d MiB: want a smaller file", filepath.ToSlash(r), MaxFileSize>>20)
		}
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, safefs.ErrOutside), errors.Is(err, syscall.ENOTDIR),
		errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENAMETOOLONG):
		// The input's doing: kustomize tries a resource as a file, then as a
		// folder, and reports what is missing.
	default:
		if g.failed == nil {
			g.failed = err // a *fs.PathError naming r
		}
	}
	return err
}
