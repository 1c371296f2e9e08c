package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/lock"
	"fleetgen.dev/fleetgen/pkg/publish"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Publish verifies that every locked image is in the registry at its digest and
// that OutDir matches a fresh render, then publishes OutDir to spec.source.
//
// Pre-flight, in order, each refusing with nothing pushed: every image digest
// a fleetgen-written file of OutDir names is in the lock (a mirror reference
// repo@sha256:… must match its lock entry); OutDir equals what `render` would
// write now (Check); every lock image is present in the registry at its
// digest (publish.Verify), the only check that needs the network. Then it
// commits and pushes (spec.source.kind git) or pushes a Flux artifact (oci)
// to spec.source.url, or cfg.PushURL.
func Publish(ctx context.Context, cfg Config) error {
	if cfg.OutDir == "" {
		return schema.Invalid(errors.New("publish: the output folder (-o DIR) is required"))
	}
	ld, err := Load(ctx, cfg)
	if err != nil {
		return err
	}
	return publishLoaded(ctx, cfg, ld)
}

func publishLoaded(ctx context.Context, cfg Config, ld *Loaded) error {
	log := cfg.logger()
	f, l := ld.Fleet, ld.Lock
	opts := []publish.Option{publish.WithLogger(log)}
	if cfg.LookupEnv != nil {
		opts = append(opts, publish.WithLookupEnv(cfg.LookupEnv))
	}

	if err := checkReferences(f, l, cfg.OutDir); err != nil {
		return err
	}
	// Local checks first: a hand-edited tree fails without a registry round trip.
	diff, err := checkLoaded(ctx, cfg, ld)
	if err != nil {
		return err
	}
	if diff != "" {
		return fmt.Errorf("publish: nothing pushed: %s differs from a fresh render (hand edits, or run `fleetgen render -o %s`):\n%s",
			cfg.OutDir, cfg.OutDir, truncateLines(diff, 40))
	}
	vopts := opts
	if cfg.Jobs > 0 {
		vopts = append(vopts, publish.WithJobs(cfg.Jobs))
	}
	if err := publish.Verify(ctx, f.Spec.Registry, l.Images, vopts...); err != nil {
		return fmt.Errorf("publish: nothing pushed: %w", err)
	}

	if cfg.PushURL != "" {
		opts = append(opts, publish.WithPushURL(cfg.PushURL))
	}
	start := time.Now()
	var res publish.Result
	switch f.Spec.Source.Kind {
	case schema.SourceGit:
		res, err = publish.Git(ctx, f, l, cfg.OutDir, opts...)
	case schema.SourceOCI:
		res, err = publish.OCI(ctx, f, l, cfg.OutDir, opts...)
	default:
		return schema.Invalid(fmt.Errorf("publish: spec.source.kind %q: want git or oci", f.Spec.Source.Kind))
	}
	if err != nil {
		return err
	}
	log.Info("published", "kind", f.Spec.Source.Kind, "ref", f.Spec.Source.Ref, "revision", res.Revision,
		"changed", res.Changed, "files", res.Files, "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

var digestRE = regexp.MustCompile(`sha256:[0-9a-f]{64}`)

// checkReferences finds every sha256 digest in the fleetgen-written files of
// outDir (those starting with generate.Header): each must be the digest of a
// lock image, and one written as <registry host>/<repo>[:tag]@sha256:… must
// be that repository's lock entry. fleetgen writes no other digests.
func checkReferences(f *schema.Fleet, l *lock.Lock, outDir string) error {
	byDigest := map[string][]lock.Image{}
	for _, img := range l.Images {
		byDigest[img.Digest] = append(byDigest[img.Digest], img)
	}
	host := f.Spec.Registry.Host
	problems := map[string]bool{}
	err := filepath.WalkDir(outDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(data, []byte(generate.Header)) {
			return nil
		}
		rel, _ := filepath.Rel(outDir, p)
		rel = filepath.ToSlash(rel)
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
					problems[fmt.Sprintf("%s: %s@%s", rel, repo, digest)] = true
				}
			case len(entries) == 0:
				problems[fmt.Sprintf("%s: %s", rel, digest)] = true
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("publish: read %s: %w", outDir, err)
	}
	if len(problems) == 0 {
		return nil
	}
	list := make([]string, 0, len(problems))
	for p := range problems {
		list = append(list, p)
	}
	sort.Strings(list)
	return fmt.Errorf("publish: nothing pushed: %s references %d image digest(s) that %s lacks (run `fleetgen mirror`, then `fleetgen render`):\n  %s",
		outDir, len(list), lock.FileName, strings.Join(list, "\n  "))
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

func truncateLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("… (%d more lines)\n", len(lines)-n)
}
