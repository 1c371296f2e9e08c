package pipeline

import (
	"context"
	"io"
	"slices"
	"strings"

	"fleetgen.dev/fleetgen/pkg/generate"
)

// RenderStream renders in memory and writes every file to w as one YAML
// stream: files in path order, each document preceded by "---" and a
// "# Source: <path>" comment (as `helm template` does). It writes nothing to
// disk, so it refuses, as cfg.Locked does, a render that would add a client ID
// to the lock: run `fleetgen render -o DIR` to mint it.
func RenderStream(ctx context.Context, cfg Config, w io.Writer) error {
	ld, err := Load(ctx, cfg)
	if err != nil {
		return err
	}
	cfg.Locked = true
	r, err := render(ctx, cfg, ld, false)
	if err != nil {
		return err
	}
	files := slices.Clone(r.files)
	slices.SortFunc(files, func(a, b generate.File) int { return strings.Compare(a.Path, b.Path) })
	var b strings.Builder
	for _, f := range files {
		b.WriteString("---\n# Source: ")
		b.WriteString(f.Path)
		b.WriteString("\n")
		b.Write(f.Data)
	}
	_, err = io.WriteString(w, b.String())
	return err
}
