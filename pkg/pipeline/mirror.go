package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
)

// Environment variables with the target registry's credentials (CI). The
// Docker config and its credential helpers serve everything else.
const (
	EnvRegistryUsername = "FLEETGEN_REGISTRY_USERNAME"
	EnvRegistryPassword = "FLEETGEN_REGISTRY_PASSWORD"
)

// Images writes the fleet's images to w, one per line, sorted; with why, each
// followed by a tab and who asked for it ("spec.images[0], layer apps (apps)").
func Images(ctx context.Context, cfg Config, w io.Writer, why bool) error {
	ld, err := Load(ctx, cfg)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, u := range ld.Images.Images {
		b.WriteString(u.Ref)
		if why {
			b.WriteString("\t")
			b.WriteString(strings.Join(u.Why, ", "))
		}
		b.WriteString("\n")
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// Mirror plans and copies every image, then writes fleet.lock.yaml atomically,
// only if everything succeeded. dryRun prints the plan to w and copies nothing.
//
// The lock's image entries are replaced by this run's (one per image the fleet
// needs now); its client IDs are kept. The target registry's credentials come
// from FLEETGEN_REGISTRY_USERNAME and FLEETGEN_REGISTRY_PASSWORD when set, and
// from the Docker config and credential helpers otherwise.
//
// It runs every input check but the lock's (Validate), the lock being what it
// brings up to date.
func Mirror(ctx context.Context, cfg Config, w io.Writer, dryRun bool) error {
	ld, err := Load(ctx, cfg)
	if err != nil {
		return err
	}
	if err := ld.check(inputRules); err != nil {
		return err
	}
	return mirrorLoaded(ctx, cfg, ld, w, dryRun)
}

// mirrorLoaded mirrors ld's images and, unless dryRun, writes the lock and
// makes it ld's.
func mirrorLoaded(ctx context.Context, cfg Config, ld *Loaded, w io.Writer, dryRun bool) error {
	f := ld.Fleet
	pairs, err := mirror.Plan(f.Spec.Registry, ld.Images.Refs())
	if err != nil {
		return err
	}
	if dryRun {
		var b strings.Builder
		for _, p := range pairs {
			fmt.Fprintf(&b, "%s -> %s\n", p.Source, p.Target)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}

	log := cfg.logger()
	opts := []mirror.Option{
		mirror.WithLogger(log),
		mirror.WithJobs(cfg.Jobs),
		mirror.WithInsecure(f.Spec.Registry.Insecure),
	}
	if user, ok := cfg.lookupEnv(EnvRegistryUsername); ok && user != "" {
		pass, _ := cfg.lookupEnv(EnvRegistryPassword)
		opts = append(opts, mirror.WithTargetCredentials(user, pass))
	}
	var display *mirrorDisplay
	if cfg.Progress != nil {
		display = newMirrorDisplay(cfg.Progress, isTerminal(cfg.Progress), len(pairs))
		opts = append(opts, mirror.WithProgress(display.event))
	}
	entries, stats, err := mirror.Run(ctx, pairs, opts...)
	if display != nil {
		display.close()
	}
	if err != nil {
		return mirrorFailures(err, len(pairs))
	}
	l := ld.Lock.Clone()
	l.SetImages(entries)
	if cfg.Locked {
		if err := lockedImages(ld.Lock, l); err != nil {
			return err
		}
	}
	if err := lock.Write(ld.LockPath, l); err != nil {
		return err
	}
	ld.Lock, ld.LockBytes = l, l.Marshal()
	log.Info(fmt.Sprintf("mirrored %d images to %s: %d copied, %d already present, %s pushed in %s",
		len(pairs), f.Spec.Registry.Host, stats.Copied, stats.Present, mirrorBytes(stats.BytesPushed), stats.Elapsed.Round(10*time.Millisecond)),
		"copied", stats.Copied, "present", stats.Present, "bytes", stats.BytesPushed, "elapsed", stats.Elapsed)
	return nil
}

// mirrorDisplay shows a mirror's progress: on a terminal one live bar
// (images done/total, bytes pushed, rate), otherwise one line per finished
// image: "[3/126] copied src -> dst (12.0 MiB)".
type mirrorDisplay struct {
	w     io.Writer
	total int
	start time.Time
	bytes atomic.Int64

	mu      sync.Mutex
	done    int
	inPair  map[mirror.Pair]int64 // bytes already counted for pairs in flight
	bar     *mpb.Bar
	barPool *mpb.Progress
}

func newMirrorDisplay(w io.Writer, live bool, total int) *mirrorDisplay {
	d := &mirrorDisplay{w: w, total: total, start: time.Now(), inPair: map[mirror.Pair]int64{}}
	if !live {
		return d
	}
	width := 100
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			width = cols
		}
	}
	d.barPool = mpb.New(mpb.WithOutput(w), mpb.WithWidth(width), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithAutoRefresh())
	d.bar = d.barPool.New(int64(total),
		mpb.BarStyle().Lbound("[").Filler("=").Tip(">").Padding(" ").Rbound("]"),
		mpb.PrependDecorators(
			decor.Name("mirror "),
			decor.CountersNoUnit("%d/%d images", decor.WCSyncSpace),
		),
		mpb.AppendDecorators(
			decor.Any(func(decor.Statistics) string { return d.rate() }, decor.WCSyncSpace),
		),
	)
	return d
}

// rate is "312.4 MiB, 41.2 MiB/s" so far.
func (d *mirrorDisplay) rate() string {
	n := d.bytes.Load()
	secs := time.Since(d.start).Seconds()
	if secs <= 0 {
		secs = 1
	}
	return fmt.Sprintf("%s, %s/s", mirrorBytes(n), mirrorBytes(int64(float64(n)/secs)))
}

func (d *mirrorDisplay) event(e mirror.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !e.Done {
		d.inPair[e.Pair] += e.Bytes
		d.bytes.Add(e.Bytes)
		return
	}
	d.bytes.Add(e.Bytes - d.inPair[e.Pair])
	delete(d.inPair, e.Pair)
	d.done++
	if d.bar != nil {
		d.bar.Increment()
		return
	}
	switch {
	case e.Err != nil:
		fmt.Fprintf(d.w, "[%d/%d] failed %s -> %s\n", d.done, d.total, e.Pair.Source, e.Pair.Target)
	case e.Present:
		fmt.Fprintf(d.w, "[%d/%d] present %s\n", d.done, d.total, e.Pair.Target)
	default:
		fmt.Fprintf(d.w, "[%d/%d] copied %s -> %s (%s)\n", d.done, d.total, e.Pair.Source, e.Pair.Target, mirrorBytes(e.Bytes))
	}
}

// close draws the bar a last time and leaves it on screen.
func (d *mirrorDisplay) close() {
	if d.bar == nil {
		return
	}
	if !d.bar.Completed() {
		d.bar.Abort(false) // failures: keep the bar where it stopped
	}
	d.barPool.Wait()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// mirrorFailures turns mirror.Run's joined errors into one line per failing
// image that names the registry and the reason once. go-containerregistry
// tries a loopback or insecure registry over https:// and then http:// and
// reports both attempts; the first is the same failure.
func mirrorFailures(err error, total int) error {
	multi, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	errs := multi.Unwrap()
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = failureLine(e)
	}
	return &mirrorError{msg: fmt.Sprintf("%d of %d images not mirrored:\n  %s", len(errs), total, strings.Join(lines, "\n  ")), errs: errs}
}

// mirrorError keeps the failures for errors.Is and errors.As.
type mirrorError struct {
	msg  string
	errs []error
}

func (e *mirrorError) Error() string   { return e.msg }
func (e *mirrorError) Unwrap() []error { return e.errs }

// failureLine shortens a network failure to "mirror SRC -> DST: registry
// HOST: REASON"; other errors keep their text.
func failureLine(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return oneLine(err.Error())
	}
	host := ue.URL
	if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
		host = u.Host
	}
	reason := ue.Err.Error()
	var oe *net.OpError
	if errors.As(ue.Err, &oe) && oe.Err != nil {
		reason = oe.Err.Error()
	}
	// The text before go-containerregistry's first attempt: "mirror SRC -> DST".
	msg := err.Error()
	prefix := msg
	if i := strings.Index(msg, ue.Op+` "`); i > 0 {
		prefix = strings.TrimSuffix(msg[:i], ": ")
	}
	return fmt.Sprintf("%s: registry %s: %s", prefix, host, oneLine(reason))
}

func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

func mirrorBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
