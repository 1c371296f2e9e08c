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
	if err := checkOutDir(cfg); err != nil {
		return err
	}
	r, err := render(ctx, cfg)
	if err != nil {
		return err
	}
	// The lock is committed with the tree, never before it: a failed render
	// leaves both as they were.
	start := time.Now()
	lk := &tree.Lock{Path: r.lockPath, Old: r.lockBytes, New: r.lockBytes}
	if r.lockChanged {
		lk.New = r.lock.Marshal()
	}
	st, err := tree.WriteWith(cfg.OutDir, r.files, tree.Options{Lock: lk, Waiting: func() {
		cfg.logger().Info("waiting for another render of the output folder", "dir", cfg.OutDir)
	}})
	if err != nil {
		return err
	}
	if r.lockChanged {
		cfg.logger().Info("lock updated", "file", r.lockPath, "newClientIDs", r.newClientIDs)
	}
	cfg.logger().Info("wrote", "dir", cfg.OutDir, "written", st.Written,
		"unchanged", st.Unchanged, "removed", st.Removed, "duration", time.Since(start).Round(time.Millisecond),
		"plan", st.Plan.Round(time.Millisecond), "write", st.Write.Round(time.Millisecond),
		"flush", st.Flush.Round(time.Millisecond), "commit", st.Commit.Round(time.Millisecond))
	return nil
}

// checkOutDir refuses an output folder that is the fleet's folder or holds
// fleet.yaml: a render would mix its files with the input. It reads nothing.
func checkOutDir(cfg Config) error {
	file := cfg.File
	if file == "" {
		file = DefaultFile
	}
	fleetDir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return err
	}
	out, err := filepath.Abs(cfg.OutDir)
	if err != nil {
		return err
	}
	// Compare real paths where they exist, so that a symlink cannot hide it.
	if r, err := filepath.EvalSymlinks(fleetDir); err == nil {
		fleetDir = r
	}
	if r, err := filepath.EvalSymlinks(out); err == nil {
		out = r
	}
	rel, err := filepath.Rel(out, fleetDir)
	inside := err == nil && (rel == "." || !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != "..")
	if _, err := os.Lstat(filepath.Join(out, filepath.Base(file))); err == nil {
		inside = true
	}
	if inside {
		return schema.Invalid(fmt.Errorf("-o %s: the output folder may not be the folder of %s or hold it; choose a folder of its own (e.g. %s)",
			cfg.OutDir, filepath.Base(file), filepath.Join(filepath.Dir(file), "out")))
	}
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
	if err := checkOutDir(cfg); err != nil {
		return "", err
	}
	r, err := render(ctx, cfg)
	if err != nil {
		return "", err
	}
	d, err := tree.DiffWith(cfg.OutDir, r.files, tree.Options{Lock: &tree.Lock{Path: r.lockPath}})
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
	files, err = secrets.Seal(files, enc, previous(cfg.OutDir))
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
		"secrets", secretFiles, "sops", enc != nil, "duration", time.Since(start).Round(time.Millisecond))
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
