package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/diff"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/secrets"
	"fleetgen.dev/fleetgen/pkg/tree"
)

// DefaultFile is fleet.yaml's path when Config.File is empty.
const DefaultFile = "fleet.yaml"

// Validate loads and validates fleet.yaml and the files it refers to; it writes
// nothing.
//
// It also parses fleet.lock.yaml when there is one, so that a broken lock shows
// up here rather than at render time.
func Validate(ctx context.Context, cfg Config) error {
	f, err := load(cfg)
	if err != nil {
		return err
	}
	l, _, err := loadLock(f)
	if err != nil {
		return err
	}
	cfg.logger().Info("valid", "file", f.File, "clusters", len(f.Spec.Clusters),
		"layers", len(f.Spec.Layers), "groups", len(f.Spec.Groups), "lockedImages", len(l.Images))
	return nil
}

// Render loads fleet.yaml and its lock, adds client IDs the lock lacks (the only
// lock change a render makes), finds each layer's images, renders, seals
// secrets, scans the result and writes it to OutDir. Nothing is written when any
// step fails.
func Render(ctx context.Context, cfg Config) error {
	if cfg.OutDir == "" {
		return schema.Invalid(errors.New("render: no output folder (-o DIR)"))
	}
	r, err := render(ctx, cfg)
	if err != nil {
		return err
	}
	// The lock goes first: the tree names the new client IDs, and a tree that
	// names IDs the lock lost would make the next render mint different ones.
	if r.lockChanged {
		if err := lock.Write(r.lockPath, r.lock); err != nil {
			return err
		}
		cfg.logger().Info("lock updated", "file", r.lockPath, "newClientIDs", r.newClientIDs)
	}
	start := time.Now()
	st, err := tree.Write(cfg.OutDir, r.files)
	if err != nil {
		return err
	}
	if len(r.forged) > 0 {
		cfg.logger().Warn("re-sealed Secrets whose ciphertext did not decrypt to the render", "files", r.forged)
	}
	cfg.logger().Info("wrote", "dir", cfg.OutDir, "written", st.Written,
		"unchanged", st.Unchanged, "removed", st.Removed, "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// Check renders in memory and returns the diff from OutDir ("" when none).
// It writes nothing, not even the lock.
//
// A lock that lacks a client ID a render would add is drift too: the diff then
// starts with the lock's change.
func Check(ctx context.Context, cfg Config) (string, error) {
	if cfg.OutDir == "" {
		return "", schema.Invalid(errors.New("check: no output folder (-o DIR)"))
	}
	r, err := render(ctx, cfg)
	if err != nil {
		return "", err
	}
	d, err := tree.Diff(cfg.OutDir, r.files)
	if err != nil {
		return "", err
	}
	if r.lockChanged {
		name := filepath.ToSlash(r.lockPath)
		old, oldName := r.lockBytes, "a/"+name
		if old == nil {
			oldName = "/dev/null"
		}
		d = string(diff.Diff(oldName, old, "b/"+name, r.lock.Marshal())) + d
	}
	if len(r.forged) > 0 {
		var note strings.Builder
		for _, p := range r.forged {
			fmt.Fprintf(&note, "# %s: the sealed Secret does not decrypt to what fleet.yaml renders (checked with the age key file)\n", p)
		}
		d = note.String() + d
	}
	cfg.logger().Info("checked", "dir", cfg.OutDir, "files", len(r.files), "drift", d != "")
	return d, nil
}

// Build runs validate, mirror, render and, with publish, publish, stopping at
// the first failure.
func Build(ctx context.Context, cfg Config, publish bool) error {
	if cfg.OutDir == "" {
		return schema.Invalid(errors.New("build: no output folder (-o DIR)"))
	}
	log := cfg.logger()
	steps := []struct {
		name string
		run  func() error
	}{
		{"validate", func() error { return Validate(ctx, cfg) }},
		{"mirror", func() error { return Mirror(ctx, cfg, io.Discard, false) }},
		{"render", func() error { return Render(ctx, cfg) }},
	}
	if publish {
		steps = append(steps, struct {
			name string
			run  func() error
		}{"publish", func() error { return Publish(ctx, cfg) }})
	}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		if err := s.run(); err != nil {
			return err
		}
		log.Info("step done", "step", s.name, "duration", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// rendered is a render held in memory.
type rendered struct {
	fleet        *schema.Fleet
	lock         *lock.Lock
	lockPath     string
	lockBytes    []byte // the lock file as it was; nil when there was none
	lockChanged  bool
	newClientIDs int
	files        []generate.File
	// forged are the sealed Secrets of OutDir whose annotation matched the
	// render but whose ciphertext, decrypted with cfg's age key, did not.
	forged []string
}

// render runs every step of a render except writing.
func render(ctx context.Context, cfg Config) (*rendered, error) {
	log := cfg.logger()
	start := time.Now()
	f, err := load(cfg)
	if err != nil {
		return nil, err
	}
	l, lockBytes, err := loadLock(f)
	if err != nil {
		return nil, err
	}
	r := &rendered{fleet: f, lock: l, lockPath: filepath.Join(f.Dir, lock.FileName), lockBytes: lockBytes}

	var auto []string
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		if c.Registration.Mode == schema.ModeAgent && (c.Registration.ClientID == "" || c.Registration.ClientID == "auto") {
			auto = append(auto, c.Name)
		}
	}
	before := len(l.Clients)
	r.lockChanged, err = l.AssignClientIDs(auto, nil)
	if err != nil {
		return nil, err
	}
	r.newClientIDs = len(l.Clients) - before
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	found, err := images.Discover(f)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	files, err := generate.Render(f, l, generate.Options{LayerImages: found.LayerImages})
	if err != nil {
		return nil, err
	}
	var enc *schema.SOPS
	if f.Spec.Encryption != nil {
		enc = f.Spec.Encryption.SOPS
	}
	ids, err := cfg.ageIdentities()
	if err != nil {
		return nil, err
	}
	files, err = secrets.Seal(files, enc, previous(cfg.OutDir),
		secrets.Verify(ids, func(p string) { r.forged = append(r.forged, p) }))
	if err != nil {
		return nil, err
	}
	if err := secrets.Scan(files, cfg.AllowPlaintextSecrets); err != nil {
		return nil, err
	}
	r.files = files
	secretFiles := 0
	for _, file := range files {
		if file.Secret {
			secretFiles++
		}
	}
	log.Info("rendered", "fleet", f.Metadata.Name, "clusters", len(f.Spec.Clusters),
		"layers", len(f.Spec.Layers), "images", len(found.Images), "files", len(files),
		"secrets", secretFiles, "sops", enc != nil, "decryptCheck", ids != nil, "duration", time.Since(start).Round(time.Millisecond))
	return r, nil
}

func load(cfg Config) (*schema.Fleet, error) {
	file := cfg.File
	if file == "" {
		file = DefaultFile
	}
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil, schema.Invalid(fmt.Errorf("%s: no such file (use -f to name fleet.yaml)", file))
	}
	return schema.Load(file, schema.LoadOptions{LookupEnv: cfg.LookupEnv})
}

// loadLock reads fleet.lock.yaml beside fleet.yaml and returns it with its bytes
// (nil when there is none). A lock that does not parse is an input error.
func loadLock(f *schema.Fleet) (*lock.Lock, []byte, error) {
	path := filepath.Join(f.Dir, lock.FileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return lock.New(), nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	l, err := lock.Parse(data)
	if err != nil {
		return nil, nil, schema.Invalid(fmt.Errorf("%s: %w", path, err))
	}
	return l, data, nil
}

// ageIdentities loads cfg.AgeKeyFile, or $SOPS_AGE_KEY_FILE; nil when
// neither is set. The path is trusted configuration; a file that does not
// load is an input error, and the message never quotes it.
func (cfg Config) ageIdentities() (*secrets.Identities, error) {
	path := cfg.AgeKeyFile
	if path == "" {
		path, _ = cfg.lookupEnv("SOPS_AGE_KEY_FILE")
	}
	if path == "" {
		return nil, nil
	}
	ids, err := secrets.LoadIdentities(path)
	if err != nil {
		return nil, schema.Invalid(err)
	}
	return ids, nil
}

// previous returns what a path of the output folder holds now, for
// secrets.Seal to keep unchanged ciphertext.
func previous(outDir string) func(string) ([]byte, bool) {
	return func(p string) ([]byte, bool) {
		if outDir == "" {
			return nil, false
		}
		b, err := os.ReadFile(filepath.Join(outDir, filepath.FromSlash(p)))
		if err != nil {
			return nil, false
		}
		return b, true
	}
}
