package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"fleetgen.dev/fleetgen/internal/safefs"
	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/review"
	"fleetgen.dev/fleetgen/pkg/schema"
	"fleetgen.dev/fleetgen/pkg/tree"
)

// maxReviewFiles bounds how many files Diff reads from the output folder,
// which a pull request may have filled.
const maxReviewFiles = 100_000

// Diff renders in memory, as `render --check` does (no client ID invented:
// one a render would generate reads review.GeneratedClientID), and compares
// the render with cfg.OutDir, a previous render or a checkout of the
// published tree. It returns the per-cluster report and the unified file
// diff (Secret contents elided, as Check prints it). It writes nothing.
//
// Only files of OutDir that carry generate.Header take part: fleetgen's
// files. OutDir is untrusted: symlinks, FIFOs, devices and files over 4 MiB
// are skipped, never followed or read, and nothing outside it is opened.
func Diff(ctx context.Context, cfg Config) (review.Report, string, error) {
	if cfg.OutDir == "" {
		return review.Report{}, "", schema.Invalid(errors.New("diff: no output folder (-o DIR)"))
	}
	if err := checkOutDir(cfg); err != nil {
		return review.Report{}, "", err
	}
	ld, err := Load(ctx, cfg)
	if err != nil {
		return review.Report{}, "", err
	}
	r, d, err := checkLoaded(ctx, cfg, ld)
	if err != nil {
		return review.Report{}, "", err
	}
	old, err := readRendered(cfg.OutDir)
	if err != nil {
		return review.Report{}, "", err
	}
	rep := review.Compare(old, filesMap(r.files), review.Options{ClientIDPlaceholder: NewClientIDPlaceholder})
	return rep, d, nil
}

func filesMap(files []generate.File) map[string][]byte {
	m := make(map[string][]byte, len(files))
	for _, f := range files {
		m[f.Path] = f.Data
	}
	return m
}

// readRendered returns the fleetgen files of dir (those starting with
// generate.Header) by slash path; a missing dir is an empty tree.
func readRendered(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	root, err := safefs.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("diff: open %s: %w", dir, err)
	}
	defer root.Close()
	n := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && (d.Name() == ".git" || d.Name() == tree.MetaDir || d.Name() == "flux-system") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // a symlink, FIFO or device: never followed or read
		}
		if n++; n > maxReviewFiles {
			return fmt.Errorf("more than %d files", maxReviewFiles)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := root.ReadFile(rel, maxPrevious)
		if err != nil {
			return nil // swapped or too large: not one of fleetgen's files
		}
		if bytes.HasPrefix(b, []byte(generate.Header)) {
			out[filepath.ToSlash(rel)] = b
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("diff: read %s: %w", dir, err)
	}
	return out, nil
}
