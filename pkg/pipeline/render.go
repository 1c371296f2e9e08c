package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/diff"

	"fleetgen.dev/fleetgen/internal/safefs"
	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/secrets"
	"fleetgen.dev/fleetgen/pkg/shard"
	"fleetgen.dev/fleetgen/pkg/tree"
)

// DefaultFile is fleet.yaml's path when Config.File is empty.
const DefaultFile = "fleet.yaml"

// Validate loads fleet.yaml, its lock and its layers, and runs every check a
// later step would apply to them (schema.Validate, then Loaded.check); it
// writes nothing. Nothing that passes Validate fails later for a reason found
// in the input.
//
// It finds every problem of every phase in one run (SPEC §1): a problem in
// one part (a misspelled field, a missing file, a broken lock) never hides
// the problems of another (a layer that does not build, an image the lock
// lacks, a target that selects nothing); what cannot be checked because of
// an earlier problem is skipped for that part only. It returns the warnings
// (schema.Warnings: what validate accepts but is likely a mistake, and
// layers.Model.Warnings: what the model of what each cluster receives could
// not follow; neither fails a command) beside the problems, which are the
// error (problem.Errors); warnings are nil only when fleet.yaml holds no
// Fleet.
func Validate(ctx context.Context, cfg Config) (problem.Errors, error) {
	ld, ws, err := validateAll(ctx, cfg)
	if ld != nil && err == nil {
		logValid(cfg, ld)
	}
	return ws, err
}

func logValid(cfg Config, ld *Loaded) {
	f := ld.Fleet
	cfg.logger().Info("valid", "file", f.File, "clusters", len(f.Spec.Clusters),
		"layers", len(f.Spec.Layers), "groups", len(f.Spec.Groups), "images", len(ld.Images.Images),
		"lockedImages", len(ld.Lock.Images))
}

// validateAll is Validate's work: what loadAll loaded (nil when fleet.yaml
// holds no Fleet, or a problem stopped it), the warnings, and the problems of
// every phase as one sorted problem.Errors (or a runtime error).
func validateAll(ctx context.Context, cfg Config) (*Loaded, problem.Errors, error) {
	ld, errs, err := loadAll(ctx, cfg, false)
	if err != nil {
		return nil, nil, err
	}
	if ld == nil {
		return nil, nil, errs
	}
	ws := ld.warnings()
	if err := ld.check(verifyRules); err != nil {
		var es problem.Errors
		switch {
		case errors.As(err, &es) && err.Error() == es.Error():
			errs = append(errs, afterSchema(es, errs, ld.Fleet)...)
		case problem.IsInvalid(err) && len(errs) > 0:
			// A check that stops at its first input problem (publish's
			// scan of the layer folders, when one is missing) on a fleet
			// whose earlier problems explain it.
		default:
			return ld, ws, err
		}
	}
	if len(errs) > 0 {
		return ld, ws, sortProblems(errs, ld.Fleet.File)
	}
	return ld, ws, nil
}

func validate(cfg Config, ld *Loaded, r rules) (problem.Errors, error) {
	if err := ld.check(r); err != nil {
		return nil, err
	}
	logValid(cfg, ld)
	return ld.warnings(), nil
}

// RenderOptions are the options of Render, Check, Diff and RenderStream.
type RenderOptions struct {
	// OutDir is the output folder (required but for RenderStream), which
	// Render writes and Check and Diff compare with.
	OutDir string
	// Clusters limits what Diff reports and RenderStream writes to these
	// clusters (`--cluster`: names of spec.clusters or the manager's; the
	// manager's adds its shared files and changes); nil means all. An
	// unknown name is an input error.
	Clusters []string
	// wholeTree makes Diff read all of OutDir with Clusters too, as it did
	// before it read only those clusters' part: tests compare the two.
	wholeTree bool
}

// only returns the filter of o.Clusters over f (nil: keep everything), as
// a test on the slash paths of the output tree (layout.ClusterOf), with the
// set and whether the manager is named.
func (o RenderOptions) only(f *schema.Fleet) (func(string) bool, map[string]bool, bool, error) {
	keep, manager, err := f.SelectClusters(o.Clusters)
	if err != nil || keep == nil {
		return nil, nil, false, err
	}
	return func(p string) bool {
		c := layout.ClusterOf(p)
		return keep[c] || (c == "" && manager)
	}, keep, manager, nil
}

// Render loads fleet.yaml and its lock, adds client IDs the lock lacks (the only
// lock change a render makes), finds each layer's images, renders, seals
// secrets, scans the result and writes it to o.OutDir. Nothing is written when any
// step fails.
//
// The input is loaded and checked before OutDir is touched: a bad fleet.yaml
// never takes the folder's lock (tree.WriteWith locks, recovers and reads the
// folder when the render is done).
func Render(ctx context.Context, cfg Config, o RenderOptions) error {
	ld, err := loadFor(ctx, cfg, "render", o.OutDir)
	if err != nil {
		return err
	}
	if err := ld.check(allRules); err != nil {
		return err
	}
	r, err := render(ctx, cfg, ld, o.OutDir, false)
	if err != nil {
		return err
	}
	// The write needs only r: from here the model (at 10,000 clusters a
	// third of the heap) is the collector's, not held beside the tree.
	_, err = r.write(cfg, o.OutDir)
	return err
}

// renderLoaded renders ld into dir, and gives ld the lock it wrote.
func renderLoaded(ctx context.Context, cfg Config, ld *Loaded, dir string) error {
	r, err := render(ctx, cfg, ld, dir, false)
	if err != nil {
		return err
	}
	newLock, err := r.write(cfg, dir)
	if err != nil {
		return err
	}
	if newLock != nil {
		ld.Lock, ld.LockBytes = r.lock, newLock
	}
	return nil
}

// write writes r into dir with its lock, and returns the lock's new bytes
// when it changed (nil when not).
func (r *rendered) write(cfg Config, dir string) ([]byte, error) {
	// The lock is committed with the tree, never before it: a failed render
	// leaves both as they were.
	start := time.Now()
	lk := &tree.Lock{Path: r.lockPath, Old: r.lockBytes, New: r.lockBytes}
	if r.lockChanged {
		lk.New = r.lock.Marshal()
	}
	opt := tree.Options{Lock: lk, Waiting: cfg.waiting(dir)}
	st, err := tree.WriteWith(dir, r.files, opt)
	if err != nil {
		return nil, err
	}
	var newLock []byte
	if r.lockChanged {
		newLock = lk.New
		cfg.logger().Info("lock updated", "file", r.lockPath, "newClientIDs", r.newClientIDs, "newShards", r.newShards, "movedShards", len(r.shardMoves))
	}
	if len(r.forged) > 0 {
		cfg.logger().Warn("re-sealed Secrets whose ciphertext did not decrypt to the render", "files", r.forged)
	}
	cfg.logger().Info("wrote", "dir", dir, "written", st.Written,
		"unchanged", st.Unchanged, "removed", st.Removed, "duration", time.Since(start).Round(time.Millisecond))
	return newLock, nil
}

// loadFor is Load for command cmd, which writes or reads the output folder
// dir: dir is required, and checked (checkOutDir) before anything is read.
func loadFor(ctx context.Context, cfg Config, cmd, dir string) (*Loaded, error) {
	if dir == "" {
		return nil, problem.Invalid(fmt.Errorf("%s: no output folder (-o DIR)", cmd))
	}
	if err := checkOutDir(cfg, dir); err != nil {
		return nil, err
	}
	// build mirrors before it renders: a chart not mirrored yet is its
	// mirror step's to bring, not an input error.
	return loadPending(ctx, cfg, cmd == "build")
}

// checkOutDir refuses an output folder that is the fleet's folder or holds
// fleet.yaml (a render would mix its files with the input), and one that is,
// or is reached through, a symlink below the current folder or the fleet's
// (a checkout can plant one: the tree would be written, or read, wherever it
// points). It writes nothing.
func checkOutDir(cfg Config, dir string) error {
	file := cfg.file()
	// Compare real paths where they exist, so that a symlink cannot hide it.
	fleetDir, err := realAbs(filepath.Dir(file))
	if err != nil {
		return err
	}
	out, err := realAbs(dir)
	if err != nil {
		return err
	}
	inside := within(out, fleetDir)
	if _, err := os.Lstat(filepath.Join(out, filepath.Base(file))); err == nil {
		inside = true
	}
	if inside {
		return problem.Invalid(fmt.Errorf("-o %s: the output folder may not be the folder of %s or hold it; choose a folder of its own (e.g. %s)",
			dir, filepath.Base(file), filepath.Join(filepath.Dir(file), "out")))
	}
	if link, err := symlinkOnTheWay(dir, filepath.Dir(file)); err != nil {
		return err
	} else if link != "" {
		return problem.Invalid(fmt.Errorf("-o %s: %s is a symlink; the output folder must be reached through real folders (name the folder it points to instead)",
			dir, link))
	}
	return nil
}

// Check renders in memory and returns the diff from o.OutDir ("" when none).
// It writes nothing, not even the lock.
//
// A lock that lacks a client ID a render would add is drift too, but Check
// invents no ID: the diff starts with the lock's change, in which each missing
// client ID reads NewClientIDPlaceholder, and the tree's diff shows the same
// placeholder where the ID goes. `fleetgen render` mints the real one.
func Check(ctx context.Context, cfg Config, o RenderOptions) (string, error) {
	ld, err := loadFor(ctx, cfg, "check", o.OutDir)
	if err != nil {
		return "", err
	}
	r, d, err := checkLoaded(ctx, cfg, ld, o.OutDir, nil)
	if err != nil {
		return "", err
	}
	cfg.logger().Info("checked", "dir", o.OutDir, "files", len(r.files), "drift", d != "")
	return d, nil
}

// NewClientIDPlaceholder stands, in Check's diff, for a client ID that a
// render would generate.
const NewClientIDPlaceholder = "(generated by fleetgen render)"

// checkLoaded is Check on loaded input; it also returns the render it
// compared, which publish pushes, with what dir held (r.had), which diff
// reviews. It logs nothing: drift is its caller's to say (diff's counts
// the objects clusters receive too).
//
// With scope, the render's files and what is read of dir are only the paths
// scope accepts, and the diff is left to the caller ("").
func checkLoaded(ctx context.Context, cfg Config, ld *Loaded, dir string, scope func(string) bool) (*rendered, string, error) {
	r, err := render(ctx, cfg, ld, dir, true)
	if err != nil {
		return nil, "", err
	}
	if scope != nil {
		var files []layout.File
		for _, f := range r.files {
			if scope(f.Path) {
				files = append(files, f)
			}
		}
		r.files = files
	}
	if r.had, err = tree.Read(dir, tree.Options{Lock: &tree.Lock{Path: r.lockPath}, Waiting: cfg.waiting(dir), Files: r.files, Keep: scope}); err != nil {
		return nil, "", err
	}
	if scope != nil {
		return r, "", nil
	}
	d, err := r.fileDiff(dir, nil)
	if err != nil {
		return nil, "", err
	}
	return r, d, nil
}

// fileDiff is the unified diff from what dir held (r.had) to r's files: the
// lock's change first, then a note per sealed Secret that did not decrypt
// to the render. With keep (`--cluster`), only the paths keep accepts, and
// no lock change.
func (r *rendered) fileDiff(dir string, keep func(string) bool) (string, error) {
	had, files := r.had, r.files
	if keep != nil {
		had = map[string][]byte{}
		for p, b := range r.had {
			if keep(p) {
				had[p] = b
			}
		}
		files = nil
		for _, f := range r.files {
			if keep(f.Path) {
				files = append(files, f)
			}
		}
	}
	d, err := tree.Compare(dir, had, files)
	if err != nil {
		return "", err
	}
	if r.lockChanged && keep == nil {
		name := filepath.ToSlash(r.lockPath)
		old, oldName := r.lockBytes, "a/"+name
		if old == nil {
			oldName = "/dev/null"
		}
		d = string(diff.Diff(oldName, old, "b/"+name, r.lock.Marshal())) + d
	}
	var note strings.Builder
	for _, p := range r.forged {
		if keep == nil || keep(p) {
			fmt.Fprintf(&note, "# %s: the sealed Secret does not decrypt to what fleet.yaml renders (checked with the age key file)\n", p)
		}
	}
	return note.String() + d, nil
}

// BuildOptions are Build's: the options of its mirror and publish steps.
type BuildOptions struct {
	// Mirror is the mirror step's (DryRun is ignored).
	Mirror MirrorOptions
	// Publish is the render and publish steps': OutDir is the output folder
	// (required); the others count only with Push.
	Publish PublishOptions
	// Push publishes after render.
	Push bool
}

// Build runs validate, mirror, render and, with o.Push, publish, stopping at
// the first failure; it logs the warnings validate returns. It loads
// fleet.yaml, the lock and the layers once; the lock mirror writes is the one
// render and publish read.
func Build(ctx context.Context, cfg Config, o BuildOptions) error {
	dir, log, start := o.Publish.OutDir, cfg.logger(), time.Now()
	ld, err := loadFor(ctx, cfg, "build", dir)
	if err != nil {
		return err
	}
	log.Info("step done", "step", "load", "duration", time.Since(start).Round(time.Millisecond))
	type step struct {
		name string
		run  func() error
	}
	steps := []step{
		// The lock's rules wait for render: mirror is what brings the lock
		// up to date, unless --locked forbids that, when an incomplete lock
		// is refused before anything is copied.
		{"validate", func() error {
			r := outputRules
			if cfg.Locked {
				r = allRules
			}
			ws, err := validate(cfg, ld, r)
			for _, w := range ws {
				log.Warn(w.Msg, "file", w.File, "line", w.Line, "column", w.Column, "field", w.Path, "code", w.ErrorCode())
			}
			return err
		}},
		{"mirror", func() error { o.Mirror.DryRun = false; _, err := mirrorLoaded(ctx, cfg, ld, o.Mirror); return err }},
		{"render", func() error { return renderLoaded(ctx, cfg, ld, dir) }},
	}
	if o.Push {
		steps = append(steps, step{"publish", func() error { _, err := publishLoaded(ctx, cfg, ld, o.Publish); return err }})
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
	files        []layout.File
	// plain is the render before its Secrets were sealed, for publish to
	// keep the published ciphertext (keepPublished).
	plain []layout.File
	// forged are the sealed Secrets of dir whose annotation matched the
	// render but whose ciphertext, decrypted with cfg's age key, did not.
	forged []string
	// had is what dir held (tree.Read), set by checkLoaded.
	had map[string][]byte
	// generated are the clusters whose client ID the lock lacked, which
	// Check's render holds as NewClientIDPlaceholder (review.Options).
	generated []string
	// shardMoves are the shard assignments the render changed (a pin, or
	// --rebalance), which diff reports.
	shardMoves []shard.Assignment
	newShards  int
}

// render runs every step of a render except writing, on a copy of ld's lock;
// Secrets keep the ciphertext dir holds where it still seals them. With
// placeholders (Check), a client ID the lock lacks becomes
// NewClientIDPlaceholder rather than a random one.
func render(ctx context.Context, cfg Config, ld *Loaded, dir string, placeholders bool) (*rendered, error) {
	log := cfg.logger()
	start := time.Now()
	if err := ld.check(allRules); err != nil {
		return nil, err
	}
	// The checks have read every object; what the render and diff still
	// read of the model is made again when asked, beside the tree.
	ld.Model.Compact()
	f, l := ld.Fleet, ld.Lock.Clone()
	r := &rendered{fleet: f, lock: l, lockPath: ld.LockPath, lockBytes: ld.LockBytes}

	var auto []string
	for i := range f.Spec.Clusters {
		c := &f.Spec.Clusters[i]
		if m := c.ModeOf(); m != nil && m.Agent && (c.Registration.ClientID == "" || c.Registration.ClientID == "auto") {
			auto = append(auto, c.Name)
		}
	}
	before := len(l.Clients)
	for _, c := range auto {
		if _, ok := l.ClientID(c); !ok {
			r.generated = append(r.generated, c)
		}
	}
	var err error
	if placeholders {
		r.lockChanged = l.AssignPlaceholders(auto, NewClientIDPlaceholder)
	} else {
		r.lockChanged, err = l.AssignClientIDs(auto, nil)
		if err != nil {
			return nil, err
		}
	}
	r.newClientIDs = len(l.Clients) - before
	if cfg.Locked && r.lockChanged {
		return nil, lockedError(ld.Lock, auto)
	}
	// Shards are assigned once and kept (SPEC §8): a new cluster's is the
	// only one a render adds, unless --rebalance.
	if sp := ld.shardPlan(); sp.Changed {
		if cfg.Locked {
			return nil, lockedShards(sp)
		}
		sp.Apply(l)
		r.lockChanged = true
		r.newShards, r.shardMoves = len(sp.Added), sp.Moved
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Every check that places its problems in fleet.yaml has run: the
	// positions are found again should a later step need one.
	f.DropPositions()
	patches, _ := ld.chartPatches()
	files, err := generate.Render(f, l, generate.Options{LayerImages: ld.Images.LayerImages, LayerDecryption: ld.Model.Decrypts,
		HelmReleases: func(cluster, layer string) []generate.HelmRelease { return patches[[2]string{cluster, layer}] },
		Nested:       nestedOf(f, ld.Model, ld.Images, ld.nestedReleases)})
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
	r.plain = files
	files, err = secrets.Seal(files, enc, previous(dir),
		secrets.WithDecryptCheck(ids, func(p string) { r.forged = append(r.forged, p) }))
	if err != nil {
		return nil, err
	}
	// Argo CD cluster Secrets hold no credential (secrets.ExceptPublic).
	if err := secrets.Scan(secrets.ExceptPublic(files), cfg.AllowPlaintextSecrets); err != nil {
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
		"layers", len(f.Spec.Layers), "images", len(ld.Images.Images), "files", len(files),
		"secrets", secretFiles, "sops", enc != nil, "decryptCheck", ids != nil, "duration", time.Since(start).Round(time.Millisecond))
	return r, nil
}

// load reads fleet.yaml as schema.LoadPartial does: the Fleet (nil when
// there is none) with every problem of fleet.yaml itself.
func load(cfg Config) (*schema.Fleet, problem.Errors, error) {
	file := cfg.file()
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, problem.Invalid(fmt.Errorf("%s: no such file (use -f to name fleet.yaml)", file))
	}
	return schema.LoadPartial(file, schema.LoadOptions{LookupEnv: cfg.LookupEnv, EnvPrefix: cfg.KubeconfigEnvPrefix})
}

// loadLock reads fleet.lock.yaml beside fleet.yaml (in dir) and returns it
// with its bytes (nil when there is none). A lock that does not parse, is not
// a regular file or leads out of the folder is an input error (lock.Read).
func loadLock(dir string) (*lock.Lock, []byte, error) {
	return lock.Read(filepath.Join(dir, lock.FileName))
}

// maxPrevious bounds what previous reads: a sealed kubeconfig Secret is a
// few KiB, and one of a 1 MiB kubeconfig (schema.MaxRefSize) under 2 MiB.
const maxPrevious = 4 << 20

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
		return nil, problem.Invalid(err)
	}
	return ids, nil
}

// previous returns what a path of the output folder holds now, for
// secrets.Seal to keep unchanged ciphertext. DIR's content is untrusted: a
// symlink out of DIR, a FIFO, a device or an oversized file counts as no
// previous file (the Secret is sealed afresh), and is never read.
func previous(outDir string) func(string) ([]byte, bool) {
	return func(p string) ([]byte, bool) {
		if outDir == "" {
			return nil, false
		}
		b, err := safefs.ReadFile(outDir, filepath.FromSlash(p), maxPrevious)
		if err != nil {
			return nil, false
		}
		return b, true
	}
}

// file is Config.File, or DefaultFile.
func (cfg Config) file() string {
	if cfg.File == "" {
		return DefaultFile
	}
	return cfg.File
}

// waiting logs that another render holds the output folder dir.
func (cfg Config) waiting(dir string) func() {
	return func() { cfg.logger().Info("waiting for another render of the output folder", "dir", dir) }
}
