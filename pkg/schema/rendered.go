package schema

import (
	"path"
	"strings"

	"fleetgen.dev/fleetgen/pkg/layout"
)

// Input apart from output (SPEC §6): the folders fleetgen renders into,
// within the source root, may neither hold nor lie in a folder fleetgen reads
// as input.

// RenderedDirs returns the top-level folders of the rendered tree in the
// source root (spec.source.path's manager/, clusters/ and agents/), cleaned
// and slash-separated.
func (f *Fleet) RenderedDirs() []string {
	out := make([]string, 0, len(layout.Top))
	for _, d := range layout.Top {
		out = append(out, CleanPath(path.Join(f.Spec.Source.Path, d)))
	}
	return out
}

// InRendered returns the folder of the rendered tree that the slash path p
// (relative to the source root) lies in or is, "" when none.
func (f *Fleet) InRendered(p string) string {
	p = CleanPath(p)
	for _, d := range f.RenderedDirs() {
		if p == d || strings.HasPrefix(p, d+"/") {
			return d
		}
	}
	return ""
}

// HoldsRendered returns the folder of the rendered tree that the folder p
// (relative to the source root) holds, "" when none.
func (f *Fleet) HoldsRendered(p string) string {
	p = CleanPath(p)
	for _, d := range f.RenderedDirs() {
		if p == "." || strings.HasPrefix(d, p+"/") {
			return d
		}
	}
	return ""
}

// apartFromOutput reports why the input folder p may not be read ("" when
// it may): it lies in the rendered tree or holds part of it.
func (f *Fleet) apartFromOutput(p string) string {
	if d := f.InRendered(p); d != "" {
		return "it lies in " + d + "/, fleetgen's rendered tree: input and output may not overlap (publish would push its files into what Flux applies); want a folder outside " + renderedWords(f)
	}
	if d := f.HoldsRendered(p); d != "" {
		return "it holds " + d + "/, fleetgen's rendered tree: input and output may not overlap (the folder's build and publish would take in the rendered files); want a folder outside " + renderedWords(f)
	}
	return ""
}

func renderedWords(f *Fleet) string {
	return strings.Join(f.RenderedDirs(), "/, ") + "/"
}
