package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"filippo.io/age"

	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/scaffold"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// InitOptions are `fleetgen init`'s: the folder and what the starting fleet
// names (scaffold.Options; empty fields take its placeholders).
type InitOptions struct {
	// Dir is the fleet's folder, made when missing; its name is the
	// fleet's (scaffold.Name).
	Dir           string
	Manager       string
	Registry      string
	Source        string
	AgeRecipients []string
}

// InitResult is what Init wrote.
type InitResult struct {
	// Files are the paths written, slash-separated and relative to Dir,
	// sorted.
	Files []string
	// AgeKey is the identity file Init generated because no recipient was
	// given (relative to Dir, listed in .gitignore), or "".
	AgeKey string
}

// Files of the starting fleet besides scaffold's when Init generates the
// age key.
const (
	initAgeKey    = "age.agekey"
	initGitignore = ".gitignore"
)

// Init writes a starting fleet into o.Dir (`fleetgen init`): scaffold's
// files and, without an age recipient, a new age identity (age.agekey, mode
// 0600, kept out of Git by .gitignore) whose recipient the fleet encrypts
// for. It never overwrites: when any of its files exists (or a symlink
// stands there) it writes nothing and returns an input error naming them.
// The options are checked as validate checks fleet.yaml, before anything is
// written; an error names the flag. A write that fails removes what Init
// wrote.
func Init(ctx context.Context, o InitOptions) (*InitResult, error) {
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	so := scaffold.Options{Name: scaffold.Name(filepath.Base(abs)), Manager: o.Manager, Registry: o.Registry, Source: o.Source, AgeRecipients: o.AgeRecipients}
	var extra []scaffold.File
	res := &InitResult{}
	if len(so.AgeRecipients) == 0 {
		id, err := age.GenerateX25519Identity()
		if err != nil {
			return nil, fmt.Errorf("init: generate an age key: %w", err)
		}
		so.AgeRecipients = []string{id.Recipient().String()}
		extra = append(extra,
			scaffold.File{Path: initAgeKey, Data: []byte("# The age identity of fleet " + so.Name + " (fleetgen init): Flux decrypts the sealed\n# Secrets with it. Keep it out of Git; load it into each cluster's flux-system\n# namespace as the Secret sops-age (docs/secrets.md).\n# public key: " + id.Recipient().String() + "\n" + id.String() + "\n")},
			scaffold.File{Path: initGitignore, Data: []byte("# The age identity fleetgen init generated: never commit it.\n" + initAgeKey + "\n")})
		res.AgeKey = initAgeKey
	}
	files, err := scaffold.Files(so)
	if err != nil {
		return nil, err
	}
	files = append(files, extra...)
	if err := checkInit(files); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var exists []string
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(o.Dir, filepath.FromSlash(f.Path))); err == nil || !errors.Is(err, fs.ErrNotExist) {
			exists = append(exists, filepath.Join(o.Dir, filepath.FromSlash(f.Path)))
		}
	}
	if len(exists) > 0 {
		return nil, problem.Invalid(fmt.Errorf("init: %s already exist(s): init never overwrites a file; give an empty or new folder", strings.Join(exists, ", ")))
	}
	if err := writeNew(o.Dir, files); err != nil {
		return nil, err
	}
	for _, f := range files {
		res.Files = append(res.Files, f.Path)
	}
	slices.Sort(res.Files)
	return res, nil
}

// checkInit loads the starting fleet from a scratch folder as validate
// loads fleet.yaml, so that a flag value the fleet cannot take (a registry
// host with a scheme, an http:// manager) is an input error naming the flag.
func checkInit(files []scaffold.File) error {
	tmp, err := os.MkdirTemp("", "fleetgen-init-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := writeNew(tmp, files); err != nil {
		return err
	}
	_, err = schema.Load(filepath.Join(tmp, scaffold.FleetFile), schema.LoadOptions{})
	var es problem.Errors
	if !errors.As(err, &es) {
		return err
	}
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "\n  %s: %s: %s", initFlag(e.Path), e.Path, e.Msg)
	}
	return problem.Invalid(fmt.Errorf("init: the fleet would not validate:%s", b.String()))
}

// initFlag names the flag (or the folder) a field of the starting fleet
// comes from.
func initFlag(field string) string {
	for _, f := range []struct{ prefix, flag string }{
		{"metadata.name", "the folder's name"}, {"spec.manager", "--manager"}, {"spec.registry", "--registry"},
		{"spec.source.", "--source"}, {"spec.encryption", "--age-recipient"},
	} {
		if strings.HasPrefix(field, f.prefix) {
			return f.flag
		}
	}
	return "fleetgen init"
}

// writeNew creates each file below dir (made when missing), never through a
// symlink nor over an existing file (O_EXCL through os.Root); when a write
// fails it removes the files it created.
func writeNew(dir string, files []scaffold.File) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	defer root.Close()
	var made []string
	defer func() {
		if err != nil {
			for _, p := range made {
				_ = root.Remove(p)
			}
		}
	}()
	for _, f := range files {
		p := filepath.FromSlash(f.Path)
		if d := path.Dir(f.Path); d != "." {
			if err := root.MkdirAll(filepath.FromSlash(d), 0o755); err != nil {
				return fmt.Errorf("init: %w", err)
			}
		}
		mode := fs.FileMode(0o644)
		if f.Path == initAgeKey {
			mode = 0o600
		}
		w, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			if errors.Is(err, fs.ErrExist) {
				return problem.Invalid(fmt.Errorf("init: %s already exists: init never overwrites a file", filepath.Join(dir, p)))
			}
			return fmt.Errorf("init: %w", err)
		}
		made = append(made, p)
		_, err = w.Write(f.Data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("init: write %s: %w", filepath.Join(dir, p), err)
		}
	}
	return nil
}
