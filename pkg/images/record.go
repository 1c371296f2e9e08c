package images

import (
	"path/filepath"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// recordFS passes every call to the file system a build reads through and
// notes each path asked about (Result.Touched).
type recordFS struct {
	filesys.FileSystem
	seen map[string]bool
}

func (r *recordFS) note(p string) {
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[filepath.Clean(p)] = true
}

func (r *recordFS) Open(p string) (filesys.File, error) { r.note(p); return r.FileSystem.Open(p) }
func (r *recordFS) IsDir(p string) bool                 { r.note(p); return r.FileSystem.IsDir(p) }
func (r *recordFS) Exists(p string) bool                { r.note(p); return r.FileSystem.Exists(p) }
func (r *recordFS) ReadFile(p string) ([]byte, error)   { r.note(p); return r.FileSystem.ReadFile(p) }

func (r *recordFS) ReadDir(p string) ([]string, error) {
	r.note(p)
	return r.FileSystem.ReadDir(p)
}

func (r *recordFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	r.note(p)
	return r.FileSystem.CleanedAbs(p)
}

func (r *recordFS) Glob(pattern string) ([]string, error) {
	r.note(pattern)
	m, err := r.FileSystem.Glob(pattern)
	for _, p := range m {
		r.note(p)
	}
	return m, err
}

func (r *recordFS) Walk(p string, fn filepath.WalkFunc) error {
	r.note(p)
	return r.FileSystem.Walk(p, fn)
}
