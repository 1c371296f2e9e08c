package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"fleetgen.dev/fleetgen/internal/inert"
	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/pkg/layers"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/publish"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/secrets"
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

	// charts renders the charts of the HelmReleases the Model holds.
	charts *chartRenderer
	// patches caches chartPatches.
	patches     map[[2]string][]generate.HelmRelease
	patchErrs   problem.Errors
	patchesDone bool

	// allowPlaintext is Config.AllowPlaintextSecrets: the command line's
	// leave to write credential Secrets unencrypted.
	allowPlaintext bool

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
func Load(ctx context.Context, cfg Config) (*Loaded, error) { return load2(ctx, cfg, false) }

// load2 is Load; with pending (mirror, build: what brings the lock up to
// date) a chart the lock or the chart cache lacks is left out of the model
// rather than an input error.
func load2(ctx context.Context, cfg Config, pending bool) (*Loaded, error) {
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
	f, err := load(cfg)
	lr := <-lockc
	if err != nil {
		return nil, err
	}
	l, data, err := lr.l, lr.data, lr.err
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ld := &Loaded{Fleet: f, Lock: l, LockPath: filepath.Join(f.Dir, lock.FileName), LockBytes: data, allowPlaintext: cfg.AllowPlaintextSecrets}
	if err := ld.model(ctx, cfg, pending); err != nil {
		return nil, err
	}
	return ld, nil
}

// model builds ld's model of what each cluster receives, its charts
// rendered from the charts ld.Lock pins, and finds its images. With pending
// (mirror's first pass) a chart the lock or the chart cache lacks is left
// out rather than an error.
func (ld *Loaded) model(ctx context.Context, cfg Config, pending bool) error {
	r := newChartRenderer(ld.Fleet, ld.Lock, cfg)
	r.pending = pending
	var err error
	if cfg.FetchCharts != "" {
		if !strings.EqualFold(cfg.FetchCharts, ld.Fleet.Spec.Registry.Host) {
			return problem.Invalid(fmt.Errorf("--fetch-charts %s: spec.registry.host is %s: charts are fetched only from the mirror the job names, not from one fleet.yaml names (a pull request may change it)",
				inert.Quote(cfg.FetchCharts), inert.Quote(ld.Fleet.Spec.Registry.Host)))
		}
		if r.remote, err = mirror.Remote(ctx, ld.Fleet.Spec.Registry, registryCredentials(cfg)); err != nil {
			return err
		}
	}
	m, err := layers.Load(ld.Fleet, layers.Options{Charts: r.render})
	if err != nil {
		return err
	}
	if r.fatal != nil {
		return r.fatal
	}
	found, err := images.Discover(ld.Fleet, m)
	if err != nil {
		return err
	}
	ld.Model, ld.Images, ld.charts = m, found, r
	ld.inputDone, ld.filesDone, ld.patchesDone = false, false, false
	return nil
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
	if r >= allRules {
		errs = append(errs, ld.lockErrors()...)
		errs = append(errs, generate.ImageClashes(ld.Fleet, ld.Lock, ld.Images.LayerImages)...)
		_, perrs := ld.chartPatches()
		errs = append(errs, perrs...)
	}
	if r == verifyRules {
		errs = append(errs, ld.verifyLock()...)
	}
	return schema.Sorted(errs)
}

// layerFileProblems scans every file publish would copy from the layer
// folders on its own, as publish does, whether a build uses it or not (SPEC
// §5): a plaintext Secret there is refused by validate, render and diff too,
// not first by the merge job. A finding the model's guard (Model.Check)
// already reports for the same file and object is left out.
func (ld *Loaded) layerFileProblems() (problem.Errors, error) {
	if !ld.filesDone {
		files, err := publish.LayerFiles(ld.Fleet, "", nil)
		if err != nil {
			return nil, err
		}
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
// where spec.registry says (a lock made for another registry). Neither names
// the image nor the target: they come from a layer or the lock, which a pull
// request may fill with anything; the field, who uses the image and the
// file:line do (`fleetgen images --why` lists the images).
func (ld *Loaded) lockErrors() problem.Errors {
	f := ld.Fleet
	targets := ld.targets()
	var errs problem.Errors
	type where struct{ field, who string }
	missing := map[where]int{}
	var order []where
	var stale []images.Use
	for _, u := range ld.Images.Images {
		img, ok := ld.Lock.Image(u.Ref)
		if !ok {
			w := where{u.Fields[0], whoUses(u)}
			if missing[w] == 0 {
				order = append(order, w)
			}
			missing[w]++
			continue
		}
		if t, ok := targets[u.Ref]; ok && t != img.Target {
			stale = append(stale, u)
		}
	}
	for _, w := range order {
		what := "an image that is"
		if n := missing[w]; n > 1 {
			what = fmt.Sprintf("%d images that are", n)
		}
		errs = append(errs, f.At(problem.Other(w.field, "%s uses %s not in %s: run `fleetgen mirror`", w.who, what, lock.FileName)))
	}
	if len(stale) > 0 {
		r := f.Spec.Registry
		at := r.Host
		if r.Prefix != "" {
			at += "/" + r.Prefix
		}
		errs = append(errs, f.At(problem.Other("spec.registry", "%s was made for another registry: %d image(s) are locked at targets off %s (layout %s), e.g. the one %s uses: run `fleetgen mirror`",
			lock.FileName, len(stale), at, r.Layout, whoUses(stale[0]))))
	}
	return errs
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
