package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"fleetgen.dev/fleetgen/pkg/layout"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/mirror"
	"fleetgen.dev/fleetgen/pkg/problem"
	"fleetgen.dev/fleetgen/pkg/publish"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/tree"
)

// PublishOptions are the options of Publish.
type PublishOptions struct {
	// OutDir is the output folder (required).
	OutDir string
	// PushURL overrides where publish pushes (spec.source.url).
	PushURL string
	// AllowDirty lets publish push while fleet.yaml, the lock or a layer
	// folder has uncommitted changes in the Git work tree that holds them.
	AllowDirty bool
	// DryRun does everything but push: PublishResult.DryRun says what the
	// commit (or artifact) would change.
	DryRun bool
	// Jobs bounds how many images are checked in the registry at once; 0
	// means the default.
	Jobs int
}

// PublishResult is what Publish did (publish.Result).
type PublishResult struct {
	publish.Result
	// DryRun is, with PublishOptions.DryRun, what the push would change, as
	// publish words it (file names quoted with inert.Quote).
	DryRun string
}

// Publish renders in memory, checks that o.OutDir holds exactly that render,
// checks that every locked image is in the registry at its digest, and
// publishes the render (from memory, never from OutDir) plus the layer
// folders to spec.source.
//
// When fleet.yaml's folder is inside a Git work tree (publish.InspectSource),
// publish first refuses (an input error) while fleet.yaml, the lock or a layer
// folder has uncommitted changes, unless o.AllowDirty; the commit message
// names the fleet repository's HEAD ("(dirty)" with AllowDirty). With
// o.DryRun it does everything but push and returns what would change there.
// With cfg.Locked a lock that lacks a client ID refuses (as render --locked).
//
// Pre-flight, in order, each refusing with nothing pushed: the render (as
// `render --check` runs it) equals OutDir, hand edits and stale fleetgen files
// included; every image digest a rendered file names is in the lock (a mirror
// reference repo@sha256:… must match its lock entry); every lock image is
// present in the registry at its digest (mirror.Check) and, under
// spec.verify, its signature verifies there (mirror.Verify): the only checks
// that need the network. Each sealed Secret then keeps the ciphertext already
// published at its path when that still seals the same plaintext
// (keepPublished): a merge job from a fresh clone, with no OutDir before it,
// makes no commit for an unchanged fleet. Files in OutDir that the render does not write (a file
// dropped there, leftovers of a killed run) are never pushed; Publish logs
// them. Then it commits and pushes (spec.source.kind git) or pushes a Flux
// artifact (oci) to spec.source.url, or o.PushURL; both scan everything
// they push and refuse a Secret with plaintext data. Further checks on the
// pushed content plug in as publish.WithContentCheck options.
func Publish(ctx context.Context, cfg Config, o PublishOptions) (*PublishResult, error) {
	if o.OutDir == "" {
		return nil, problem.Invalid(errors.New("publish: the output folder (-o DIR) is required"))
	}
	ld, err := Load(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return publishLoaded(ctx, cfg, ld, o)
}

func publishLoaded(ctx context.Context, cfg Config, ld *Loaded, o PublishOptions) (*PublishResult, error) {
	log := cfg.logger()
	src, err := publish.InspectSource(ld.Fleet, ld.Model.Files())
	if err != nil {
		return nil, err
	}
	if len(src.Dirty) > 0 {
		if !o.AllowDirty {
			return nil, problem.Invalid(fmt.Errorf("publish: nothing pushed: the fleet repository has uncommitted changes in what publish reads (commit them, or give --allow-dirty):\n  %s",
				strings.Join(truncateList(src.Dirty, maxReported), "\n  ")))
		}
		log.Warn("publishing uncommitted changes (--allow-dirty)", "commit", src.Commit, "files", truncateList(src.Dirty, maxReported))
	}
	// Local checks first: a hand-edited tree fails without a registry round trip.
	r, diff, err := checkLoaded(ctx, cfg, ld, o.OutDir, nil)
	if err != nil {
		return nil, err
	}
	log.Info("checked", "dir", o.OutDir, "files", len(r.files), "drift", diff != "")
	if diff != "" {
		return nil, fmt.Errorf("publish: nothing pushed: %s differs from a fresh render (hand edits, or run `fleetgen render -o %s`):\n%s",
			o.OutDir, o.OutDir, truncateLines(diff, 40))
	}
	f, l := r.fleet, r.lock
	if err := checkReferences(f, l, r.files); err != nil {
		return nil, err
	}
	if err := reportUnrendered(o.OutDir, r.files, log); err != nil {
		return nil, err
	}
	opts := []publish.Option{publish.WithLogger(log), publish.WithOutDir(o.OutDir), publish.WithInput(ld.Model.Files()), publish.WithTemplates(ld.Model.ChartTemplate)}
	if src.InRepo {
		opts = append(opts, publish.WithSourceCommit(src.Commit, len(src.Dirty) > 0))
	}
	if cfg.LookupEnv != nil {
		opts = append(opts, publish.WithLookupEnv(cfg.LookupEnv))
	}
	mopts := []mirror.Option{mirror.WithLogger(log), mirror.WithJobs(o.Jobs), registryCredentials(cfg)}
	if err := mirror.Check(ctx, f.Spec.Registry, l.Images, mopts...); err != nil {
		return nil, fmt.Errorf("publish: nothing pushed: %w", err)
	}
	if ps, err := ld.Policies(); err != nil {
		return nil, err
	} else if err := mirror.Verify(ctx, f.Spec.Registry, l.Images, ps, mopts...); err != nil {
		return nil, fmt.Errorf("publish: nothing pushed: %w", err)
	}

	if o.PushURL != "" {
		opts = append(opts, publish.WithPushURL(o.PushURL))
	}
	start := time.Now()
	files, pub, kept, err := keepPublished(ctx, cfg, r, opts)
	if err != nil {
		return nil, err
	}
	if pub != nil {
		log.Info("read the published sealed Secrets", "found", pub.Len(), "kept", kept, "elapsed", time.Since(start).Round(time.Millisecond))
		opts = append(opts, publish.WithPublished(pub))
	}
	var dry strings.Builder
	if o.DryRun {
		opts = append(opts, publish.WithDryRun(&dry))
	}
	start = time.Now()
	var res publish.Result
	switch f.Spec.Source.Kind {
	case schema.SourceGit:
		res, err = publish.Git(ctx, f, l, files, opts...)
	case schema.SourceOCI:
		res, err = publish.OCI(ctx, f, l, files, opts...)
	default:
		return nil, problem.Invalid(fmt.Errorf("publish: spec.source.kind %q: want git or oci", f.Spec.Source.Kind))
	}
	if err != nil {
		return nil, err
	}
	log.Info("published", "kind", f.Spec.Source.Kind, "ref", f.Spec.Source.Ref, "revision", res.Revision,
		"changed", res.Changed, "files", res.Files, "elapsed", time.Since(start).Round(time.Millisecond))
	return &PublishResult{Result: res, DryRun: dry.String()}, nil
}

// maxReported bounds how many unrendered files Publish names.
const maxReported = 20

// reportUnrendered logs the files of outDir that the render does not write:
// they stay out of the publish. It names paths, never content.
func reportUnrendered(outDir string, files []layout.File, log *slog.Logger) error {
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f.Path] = true
	}
	var extra []string
	err := filepath.WalkDir(outDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || p == filepath.Join(outDir, tree.MetaDir) {
				return filepath.SkipDir // fleetgen's own lock, journal and cache
			}
			return nil
		}
		rel, err := filepath.Rel(outDir, p)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); !want[rel] {
			extra = append(extra, rel)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("publish: read %s: %w", outDir, err)
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	shown := extra[:min(len(extra), maxReported)]
	log.Warn("not publishing files in the output folder that render does not write", "dir", outDir, "count", len(extra), "paths", shown)
	return nil
}

var digestRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// checkReferences finds every sha256 digest in the rendered files: each must
// be the digest of a lock image, and one written as <registry
// host>/<repo>[:tag]@sha256:… must be that repository's lock entry. fleetgen
// writes no other digests.
func checkReferences(f *schema.Fleet, l *lock.Lock, files []layout.File) error {
	byDigest := map[string][]lock.Image{}
	for _, img := range l.Images {
		byDigest[img.Digest] = append(byDigest[img.Digest], img)
	}
	host := f.Spec.Registry.Host
	problems := map[string]bool{}
	for _, file := range files {
		data := file.Data
		for _, loc := range digestRE.FindAllIndex(data, -1) {
			digest := string(data[loc[0]:loc[1]])
			entries := byDigest[digest]
			repo := refBefore(data, loc[0])
			if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
				repo = repo[:i]
			}
			switch {
			case strings.HasPrefix(repo, host+"/"):
				found := false
				for _, e := range entries {
					found = found || e.Repository() == repo
				}
				if !found {
					problems[fmt.Sprintf("%s: %s@%s", file.Path, repo, digest)] = true
				}
			case len(entries) == 0:
				problems[fmt.Sprintf("%s: %s", file.Path, digest)] = true
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	list := make([]string, 0, len(problems))
	for p := range problems {
		list = append(list, p)
	}
	sort.Strings(list)
	return fmt.Errorf("publish: nothing pushed: the render references %d image digest(s) that %s lacks (run `fleetgen mirror`, then `fleetgen render`):\n  %s",
		len(list), lock.FileName, strings.Join(list, "\n  "))
}

// refBefore returns the image repository written right before "@" at i
// (data[i-1] == '@'), or "".
func refBefore(data []byte, i int) string {
	if i == 0 || data[i-1] != '@' {
		return ""
	}
	j := i - 1
	for j > 0 && !strings.ContainsRune(" \t\r\n\"'=,[]{}", rune(data[j-1])) {
		j--
	}
	return string(data[j : i-1])
}

// truncateList returns at most n of list, the last one saying how many more
// there are.
func truncateList(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(slices.Clone(list[:n]), fmt.Sprintf("… (%d more)", len(list)-n))
}

func truncateLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("… (%d more lines)\n", len(lines)-n)
}
