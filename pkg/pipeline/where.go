package pipeline

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"fleetgen.dev/fleetgen/internal/safefs"
	"fleetgen.dev/fleetgen/pkg/images"
	"fleetgen.dev/fleetgen/pkg/schema"
)

// imageAt finds where, in a layer's file, an object asks for an image (a
// problem about the image points there, SPEC §1): the line and column of the
// image: value src.Written in src.File, read inside the folder of fleet.yaml
// (dir), bounded as layer files are. When the file spells the reference
// otherwise (post-build substitution, kustomize's images:), the first
// image: value of the same repository; 0, 0 when there is none, or the file
// cannot be read or parsed.
func imageAt(dir string, src images.Source) (line, col int) {
	if src.File == "" || !filepath.IsLocal(filepath.FromSlash(src.File)) {
		return 0, 0
	}
	data, err := safefs.ReadFile(dir, filepath.FromSlash(src.File), schema.MaxFileSize)
	if err != nil {
		return 0, 0
	}
	repo := func(ref string) string {
		ref, _, _ = strings.Cut(ref, "@")
		if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
			ref = ref[:i]
		}
		return ref
	}
	var exact, same *yaml.Node
	d := yaml.NewDecoder(bytes.NewReader(data))
	for exact == nil {
		var doc yaml.Node
		if err := d.Decode(&doc); err != nil {
			if !errors.Is(err, io.EOF) {
				return 0, 0
			}
			break
		}
		walkImages(&doc, func(v *yaml.Node) bool {
			switch {
			case v.Value == src.Written:
				exact = v
				return false
			case same == nil && repo(v.Value) == repo(src.Written):
				same = v
			}
			return true
		})
	}
	switch {
	case exact != nil:
		return exact.Line, exact.Column
	case same != nil:
		return same.Line, same.Column
	}
	return 0, 0
}

// walkImages calls visit with the value of every image: key of n (no alias
// is followed), until visit returns false.
func walkImages(n *yaml.Node, visit func(*yaml.Node) bool) bool {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if !walkImages(c, visit) {
				return false
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "image" && v.Kind == yaml.ScalarNode {
				if !visit(v) {
					return false
				}
				continue
			}
			if !walkImages(v, visit) {
				return false
			}
		}
	}
	return true
}
