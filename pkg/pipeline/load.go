package pipeline

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/publish"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/secrets"
	"fleetgen.dev/fleetgen/pkg/shard"
	"fleetgen.dev/fleetgen/pkg/verify"
)

// Loaded is one command's input, read once and handed to every step (build
// --publish reads fleet.yaml, the lock and the layer folders once).
type Loaded struct {
	// Fleet is fleet.yaml, loaded, defaulted and validated.
	Fleet *schema.Fleet
	// Lock is fleet.lock.yaml (empty when there is none).
	Lock *lock.Lock
	// LockPath is where the lock lives, beside fleet.yaml.
	LockPath string
	// LockBytes is the lock file as read; nil when there was none.
	LockBytes []byte
	// Model is what each cluster receives from its layers (pkg/layers): the
	// one model the input checks, image discovery, render's decryption and
	// diff read.
	Model *layers.Model
	// Images is every image the fleet needs, found in Model.
	Images *images.Result

	// units are the units Model holds (loadAll's, without skipLayers'),
	// without their Vars; layerOpts the options it was built with (the deliveries that are
	// sound), but the chart renderer.
	units     []layers.Unit
	layerOpts layers.Options
	// charts renders the charts of the HelmReleases the Model holds.
	charts *chartRenderer
	// patches caches chartPatches.
	patches   map[[2]string][]generate.HelmRelease
	patchErrs problem.Errors
	// nestedReleases are, per cluster and followed set, its HelmReleases
	// pinned (chartPatches makes them with patches).
	nestedReleases map[nestedKey]nestedReleases
	patchesDone    bool

	// allowPlaintext is Config.AllowPlaintextSecrets: the command line's
	// leave to write credential Secrets unencrypted.
	allowPlaintext bool
	// rebalance is Config.Rebalance; shards is the shard plan of the lock
	// shardsOf (shardPlan).
	rebalance bool
	shards    *shard.Plan
	shardsOf  *lock.Lock
	// lockBad says the lock did not load (loadAll reported why): Lock is
	// empty, and the checks against it are skipped.
	lockBad bool
	// skipLayers names the layers loadAll left out of Model (brokenLayers):
	// the scan of the layer folders leaves them out too.
	skipLayers map[string]bool

	// input caches the checks that do not read the lock (the lock changes
	// when build mirrors; fleet.yaml and the layers do not).
	input     problem.Errors
	inputDone bool
	// files caches layerFileProblems.
	files     problem.Errors
	filesDone bool

	// pol is spec.verify compiled (Policies, verify.go).
	pol     verify.Policies
	polErr  error
	polDone bool
}

// Load reads fleet.yaml, its lock and its layers (built with kustomize,
// confined to the folder of fleet.yaml). Any problem found there is an input
// error, located in fleet.yaml where it can be.
func Load(ctx context.Context, cfg Config) (*Loaded, error) { return loadPending(ctx, cfg, false) }

// loadPending is Load; with pending (mirror, build: what brings the lock up
// to date) a chart the lock or the chart cache lacks is left out of the
// model rather than an input error.
func loadPending(ctx context.Context, cfg Config, pending bool) (*Loaded, error) {
	ld, errs, err := loadAll(ctx, cfg, pending)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return ld, nil
}

// loadAll is Load that goes on past problems, for validate and targets
// (SPEC §1: a problem in one part never hides the problems of another): it
// returns what it could load (nil when fleet.yaml holds no Fleet at all)
// with every problem of fleet.yaml, the lock, the layer builds and image
// discovery, sorted (sortProblems). A part that cannot be loaded is left
// out of what it returns, and the checks that need it skip it (a broken
// lock: Loaded.lockBad; a folder that does not build gives no objects and
// no images). err is a runtime failure, or an input error no problem list
// holds (a missing fleet.yaml, a bound).
//
// What it returns from an invalid fleet.yaml is for checks only: nothing may
// be rendered from it.
func loadAll(ctx context.Context, cfg Config, pending bool) (*Loaded, problem.Errors, error) {
	// The lock, beside fleet.yaml, is read and parsed while fleet.yaml is.
	type lockRead struct {
		l    *lock.Lock
		data []byte
		err  error
	}
	lockc := make(chan lockRead, 1)
	go func() {
		var r lockRead
		r.l, r.data, r.err = loadLock(filepath.Dir(cfg.file()))
		lockc <- r
	}()
	f, errs, err := load(cfg)
	lr := <-lockc
	if err != nil {
		return nil, nil, err
	}
	// Later phases add what they find beyond what fleet.yaml's own rules
	// said: a field that is wrong is said once (later).
	later := func(err error) error {
		var es problem.Errors
		if !errors.As(err, &es) || err.Error() != es.Error() {
			return err
		}
		errs = append(errs, afterSchema(es, errs, f)...)
		return nil
	}
	if lr.err != nil {
		if err := later(lr.err); err != nil {
			return nil, nil, err
		}
	}
	if f == nil {
		return nil, sortProblems(errs, cfg.file()), nil
	}
	for _, e := range errs {
		if e.ErrorCode() == problem.CodeTooLarge && e.File == f.File {
			// Past a bound of fleet.yaml: the later phases would be as large.
			return nil, sortProblems(errs, f.File), nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	skip := brokenLayers(f, errs)
	opts := layers.DefaultOptions()
	opts.Deliveries, opts.Clusters = layers.DeliveriesOf(f)
	if bad := brokenDeliveries(f, errs); len(bad) > 0 {
		opts.Deliveries = slices.DeleteFunc(opts.Deliveries, func(d layers.Delivery) bool { return bad[d.Name] })
	}
	ld := &Loaded{Fleet: f, Lock: lr.l, LockPath: filepath.Join(f.Dir, lock.FileName), LockBytes: lr.data,
		allowPlaintext: cfg.AllowPlaintextSecrets, skipLayers: skip, layerOpts: opts, rebalance: cfg.Rebalance}
	if lr.err != nil {
		ld.Lock, ld.LockBytes, ld.lockBad = lock.New(), nil, true
	}
	ld.liveLabels()
	lerr, derr, err := ld.model(ctx, cfg, pending)
	if err != nil {
		return nil, nil, err
	}
	if later(lerr) != nil {
		return nil, nil, lerr
	}
	if ld.Images == nil || later(derr) != nil {
		return nil, nil, derr
	}
	return ld, sortProblems(errs, f.File), nil
}

// model builds ld's model of what each of ld.units receives, the charts of
// its HelmReleases rendered from the charts ld.Lock pins (chartRenderer),
// and finds its images. lerr and derr are the problems of the layer builds
// and of image discovery (problem.Errors; Model and Images hold what did
// build); err is a failure that is not the input's (the chart cache, the
// mirror) or an input error no problem list holds. With pending (mirror's
// first pass) a chart the lock or the chart cache lacks is left out rather
// than a problem.
func (ld *Loaded) model(ctx context.Context, cfg Config, pending bool) (lerr, derr, err error) {
	f := ld.Fleet
	r := newChartRenderer(f, ld.Lock, cfg)
	r.pending = pending
	if cfg.FetchCharts != "" {
		if !strings.EqualFold(cfg.FetchCharts, f.Spec.Registry.Host) {
			return nil, nil, problem.Invalid(fmt.Errorf("--fetch-charts %s: spec.registry.host is %s: charts are fetched only from the mirror the job names, not from one fleet.yaml names (a pull request may change it)",
				inert.Quote(cfg.FetchCharts), inert.Quote(f.Spec.Registry.Host)))
		}
		if r.remote, err = mirror.Remote(ctx, f.Spec.Registry, registryCredentials(cfg)); err != nil {
			return nil, nil, err
		}
	}
	opts := ld.layerOpts
	opts.Charts = r.render
	opts.BundleCharts = r.renderBundle
	units := layers.FromFleet(f)
	if len(ld.skipLayers) > 0 {
		units = slices.DeleteFunc(units, func(u layers.Unit) bool { return ld.skipLayers[u.Layer] })
	}
	// The model takes each unit's variables (a map per cluster and layer)
	// as it substitutes them; the rest of the command reads only who
	// receives what.
	m, lerr := layers.LoadUnits(f, units, opts)
	ld.units = units
	if m == nil {
		return nil, nil, lerr
	}
	if r.fatal != nil {
		return nil, nil, r.fatal
	}
	found, derr := images.Discover(f, m)
	ld.Model, ld.Images, ld.charts = m, found, r
	ld.inputDone, ld.filesDone, ld.patchesDone = false, false, false
	return lerr, derr, nil
}

// remodel builds ld's model again (mirror, once it brought the charts): a
// problem is an error.
func (ld *Loaded) remodel(ctx context.Context, cfg Config) error {
	lerr, derr, err := ld.model(ctx, cfg, false)
	if err == nil {
		err = lerr
	}
	if err == nil {
		err = derr
	}
	return err
}

// brokenLayers names the layers whose path fleet.yaml's own rules found
// wrong (errs): loadAll builds none of their units, as no later step would
// (a label one cluster lacks is not the path's fault: that cluster's unit
// keeps its ${label} and is not built, the others are).
func brokenLayers(f *schema.Fleet, errs problem.Errors) map[string]bool {
	return broken(f, errs, "spec.layers[%d].path", len(f.Spec.Layers), func(i int) string { return f.Spec.Layers[i].Name })
}

// brokenDeliveries names the deliveries that fleet.yaml's own rules found
// wrong in any field (errs): the model renders none of their bundles.
func brokenDeliveries(f *schema.Fleet, errs problem.Errors) map[string]bool {
	return broken(f, errs, "spec.deliveries[%d]", len(f.Spec.Deliveries), func(i int) string { return f.Spec.Deliveries[i].Name })
}

// broken names the items of a list of fleet.yaml (n of them, field a
// format of their index, name their names) that a problem of errs is about
// (its field or one below it); a missing label is no item's fault.
func broken(f *schema.Fleet, errs problem.Errors, field string, n int, name func(int) string) map[string]bool {
	skip := map[string]bool{}
	for i := 0; i < n; i++ {
		p := fmt.Sprintf(field, i)
		for _, e := range errs {
			if e.File == f.File && e.ErrorCode() != problem.CodeMissingLabel && (e.Path == p || strings.HasPrefix(e.Path, p+".") || strings.HasPrefix(e.Path, p+"[")) {
				skip[name(i)] = true
			}
		}
	}
	return skip
}

// afterSchema returns the problems of es that are not about a field
// fleet.yaml's own rules (in before) already found wrong: none at or below
// such a field's path in fleet.yaml (a key file that cannot be read is not
// also a policy that does not compile). A label one cluster lacks is not
// the field's fault, and hides nothing.
func afterSchema(es, before problem.Errors, f *schema.Fleet) problem.Errors {
	var out problem.Errors
next:
	for _, e := range es {
		if f != nil && e.File == f.File && e.Path != "" {
			for _, b := range before {
				if b.File == e.File && b.Path != "" && b.ErrorCode() != problem.CodeMissingLabel &&
					(e.Path == b.Path || strings.HasPrefix(e.Path, b.Path+".") || strings.HasPrefix(e.Path, b.Path+"[")) {
					continue next
				}
			}
		}
		out = append(out, e)
	}
	return out
}

// sortProblems puts errs in the order validate prints them: fleet.yaml's
// (file) in document order first, then the other files' (the lock, layer
// files) by file, line and column; problems without a file first. nil when
// there are none.
func sortProblems(errs problem.Errors, file string) problem.Errors {
	if len(errs) == 0 {
		return nil
	}
	rank := func(e *problem.FieldError) int {
		switch e.File {
		case "":
			return 0
		case file:
			return 1
		}
		return 2
	}
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i], errs[j]
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra < rb
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return errs
}

// rules chooses which input checks a command needs.
type rules int

const (
	// inputRules are the checks of fleet.yaml and the layers; mirror
	// (which writes the lock and no Secret) runs only these.
	inputRules rules = iota
	// outputRules add the output's: no credential in plaintext unless
	// allowed. build runs them before it copies anything.
	outputRules
	// allRules add the lock's: every image locked, every target on
	// spec.registry.
	allRules
	// verifyRules add that every image a spec.verify policy covers is locked
	// with a signature verified under the policy as it is now: validate's
	// (publish refuses such an image at the mirror; render and diff, whose
	// output does not depend on it, show it instead).
	verifyRules
)

// check runs every rule a later step applies to the input, so that nothing
// that passes `validate` fails later for a reason found in the input. It is
// the one home of these rules; schema.Validate holds those that need no
// layer build or lock.
func (ld *Loaded) check(r rules) error {
	if !ld.inputDone {
		ld.input = append(ld.collisions(), ld.Model.Check(ld.Fleet)...)
		ld.input = append(ld.input, ld.verifyInput()...)
		ld.inputDone = true
	}
	errs := append(problem.Errors(nil), ld.input...)
	if r >= outputRules {
		if e := ld.Fleet.PlaintextCredentials(); e != nil && !ld.allowPlaintext {
			errs = append(errs, e)
		}
		found, err := ld.layerFileProblems()
		if err != nil {
			return err
		}
		errs = append(errs, found...)
	}
	if r >= allRules && !ld.lockBad {
		errs = append(errs, ld.lockErrors()...)
		errs = append(errs, ld.shardPlan().Problems(ld.Fleet)...)
		errs = append(errs, generate.ImageClashes(ld.Fleet, ld.Lock, ld.Images.LayerImages)...)
		_, perrs := ld.chartPatches()
		errs = append(errs, perrs...)
	}
	if r == verifyRules && !ld.lockBad {
		errs = append(errs, ld.verifyLock()...)
	}
	if errs = sortProblems(errs, ld.Fleet.File); errs != nil {
		return errs
	}
	return nil
}

// layerFileProblems scans every file publish would copy from the layer
// folders on its own, as publish does, whether a build uses it or not (SPEC
// §5): a plaintext Secret there is refused by validate, render and diff too,
// not first by the merge job. A finding the model's guard (Model.Check)
// already reports for the same file and object is left out.
func (ld *Loaded) layerFileProblems() (problem.Errors, error) {
	if !ld.filesDone {
		f := ld.Fleet
		if len(ld.skipLayers) > 0 {
			c := *f
			c.Spec.Layers = slices.DeleteFunc(slices.Clone(f.Spec.Layers), func(l schema.Layer) bool { return ld.skipLayers[l.Name] })
			f = &c
		}
		files, err := publish.LayerFiles(f, ld.Model.Files(), "", nil)
		if err != nil {
			return nil, err
		}
		// A rendered chart's templates are checked through what they render.
		files = slices.DeleteFunc(files, func(f layout.File) bool { return ld.Model.ChartTemplate(f.Path) })
		found, err := secrets.Plaintext(files)
		if err != nil {
			return nil, err
		}
		for _, p := range secrets.Unreported(found, ld.Model.Plaintext(ld.Fleet)) {
			ld.files = append(ld.files, p.FieldError(ld.Fleet))
		}
		ld.filesDone = true
	}
	return ld.files, nil
}

// targets returns each image's mirror target per spec.registry.
func (ld *Loaded) targets() map[string]string {
	out := make(map[string]string, len(ld.Images.Images))
	for _, u := range ld.Images.Images {
		// One image at a time: collisions are reported by collisions, with
		// their place in fleet.yaml.
		pairs, err := mirror.Plan(ld.Fleet.Spec.Registry, []string{u.Ref})
		if err == nil && len(pairs) == 1 {
			out[u.Ref] = pairs[0].Target
		}
	}
	return out
}

// collisions reports two source repositories that would be mirrored to one
// target repository, at the first field asking for each.
func (ld *Loaded) collisions() problem.Errors {
	targets := ld.targets()
	bySource := map[string]images.Use{}
	owners := map[string]map[string]bool{} // target repository → source repositories
	for _, u := range ld.Images.Images {
		t, ok := targets[u.Ref]
		if !ok {
			continue
		}
		src, _ := lock.SplitRef(u.Ref)
		repo, _ := lock.SplitRef(t)
		if owners[repo] == nil {
			owners[repo] = map[string]bool{}
		}
		owners[repo][src] = true
		if _, ok := bySource[src]; !ok {
			bySource[src] = u
		}
	}
	var errs problem.Errors
	for repo, srcs := range owners {
		if len(srcs) < 2 {
			continue
		}
		names := make([]string, 0, len(srcs))
		quote := true // every source is spelled in fleet.yaml's spec.images too
		for s := range srcs {
			names = append(names, s)
			quote = quote && fromFleet(bySource[s])
		}
		sort.Strings(names)
		for _, s := range names {
			u := bySource[s]
			if quote {
				errs = append(errs, ld.Fleet.At(problem.Other(u.Fields[0], "image %s would be mirrored to %s, as would %s: want spec.registry.layout %s, or images from distinct repositories",
					u.Ref, repo, strings.Join(others(names, s), " and "), schema.LayoutPreserveHost)))
				continue
			}
			// A layer's image: named by who uses it, not quoted.
			var who []string
			for _, o := range others(names, s) {
				who = append(who, "the one "+whoUses(bySource[o])+" uses")
			}
			errs = append(errs, ld.Fleet.At(problem.Other(u.Fields[0], "%s uses an image that would be mirrored to the same repository as %s: want spec.registry.layout %s, or images from distinct repositories",
				whoUses(u), strings.Join(who, " and "), schema.LayoutPreserveHost)))
		}
	}
	return errs
}

// fromFleet reports whether spec.images asks for u: its reference is then
// (normalised) fleet.yaml's own text, which a message may quote.
func fromFleet(u images.Use) bool {
	for _, f := range u.Fields {
		if strings.HasPrefix(f, "spec.images[") {
			return true
		}
	}
	return false
}

func others(all []string, not string) []string {
	var out []string
	for _, s := range all {
		if s != not {
			out = append(out, s)
		}
	}
	return out
}

// lockErrors reports images the lock lacks and lock targets that are not
// where spec.registry says (a lock made for another registry). Each names
// the image (quoted inert: a layer, which a pull request may fill, spells
// it) and who uses it; an image a layer's object asks for is located where
// that object's file spells it (file:line:col and the field in the object,
// imageAt), one that spec.images lists at its entry in fleet.yaml.
func (ld *Loaded) lockErrors() problem.Errors {
	f := ld.Fleet
	targets := ld.targets()
	var errs problem.Errors
	var stale []images.Use
	for _, u := range ld.Images.Images {
		img, ok := ld.Lock.Image(u.Ref)
		if !ok {
			errs = append(errs, ld.imageProblem(u, fmt.Sprintf("is not in %s: run `fleetgen mirror`", lock.FileName)))
			continue
		}
		if t, ok := targets[u.Ref]; ok && t != img.Target {
			stale = append(stale, u)
		}
	}
	if len(stale) > 0 {
		r := f.Spec.Registry
		at := r.Host
		if r.Prefix != "" {
			at += "/" + r.Prefix
		}
		errs = append(errs, f.At(problem.Other("spec.registry", "%s was made for another registry: %d image(s) are locked at targets off %s (layout %s), e.g. image %s, which %s uses: run `fleetgen mirror`",
			lock.FileName, len(stale), at, r.Layout, inert.Quote(stale[0].Ref), whoUses(stale[0]))))
	}
	return errs
}

// imageProblem is a problem about image u, "… image <ref> <what>": at the
// first layer file that asks for it (its line and column when imageAt finds
// them, and the field in the object), or at its first field in fleet.yaml
// when spec.images lists it or no file is known. The reference is quoted
// inert: a layer, which a pull request may fill, spells it.
func (ld *Loaded) imageProblem(u images.Use, what string) *problem.FieldError {
	f := ld.Fleet
	ref := inert.Quote(u.Ref)
	if fromFleet(u) || len(u.Sources) == 0 || u.Sources[0].File == "" {
		if len(u.Why) == 1 && u.Why[0] == u.Fields[0] {
			return f.At(problem.Other(u.Fields[0], "image %s %s", ref, what))
		}
		return f.At(problem.Other(u.Fields[0], "image %s, which %s uses, %s", ref, whoUses(u), what))
	}
	src := u.Sources[0]
	line, col := imageAt(f.Dir, src)
	return problem.Other(src.Field, "%s: %s uses image %s, which %s", whoUses(u), src.Object, ref, what).
		At(filepath.Join(f.Dir, filepath.FromSlash(src.File)), line, col)
}

// whoUses names who asks for an image: "layer web (web/prod)",
// "spec.images[0]", with "and N more" when several do.
func whoUses(u images.Use) string {
	if len(u.Why) == 0 {
		return strings.Join(u.Fields, ", ")
	}
	if len(u.Why) == 1 {
		return u.Why[0]
	}
	return fmt.Sprintf("%s (and %d more)", u.Why[0], len(u.Why)-1)
}
