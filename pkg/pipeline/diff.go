package pipeline

import (
	"bytes"
	"context"
	"errors"

	"fleetgen.dev/fleetgen/pkg/generate"
	"fleetgen.dev/fleetgen/pkg/review"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// Diff renders in memory, as `render --check` does (no client ID invented:
// one a render would generate reads review.GeneratedClientID), and compares
// the render with cfg.OutDir, a previous render or a checkout of the
// published tree. It returns the per-cluster report and the unified file
// diff (Secret contents elided, as Check prints it). It writes nothing.
//
// Only files of OutDir that carry generate.Header take part: fleetgen's
// files, as tree.Read reads them for the file diff (OutDir is untrusted:
// symlinks, FIFOs and devices are never followed or read, nothing outside it
// is opened).
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
	rep := review.Compare(owned(r.had), filesMap(r.files), review.Options{ClientIDPlaceholder: NewClientIDPlaceholder})
	rep.AddImageVerification(ld.verificationChanges())
	return rep, d, nil
}

func filesMap(files []generate.File) map[string][]byte {
	m := make(map[string][]byte, len(files))
	for _, f := range files {
		m[f.Path] = f.Data
	}
	return m
}

// owned keeps the files of a tree.Read that carry generate.Header.
func owned(had map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for p, b := range had {
		if bytes.HasPrefix(b, []byte(generate.Header)) {
			out[p] = b
		}
	}
	return out
}
