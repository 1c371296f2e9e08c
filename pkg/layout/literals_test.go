package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// notLayout are string literals outside this package that read like a path
// of the output tree and are not one, by file.
var notLayout = map[string][]string{
	// An input folder (the folder of a fleet.yaml) in an example.
	"cmd/fleetgen/commands.go": {"fleetgen validate clusters/prod          # clusters/prod/fleet.yaml"},
}

// otherOwners are file names of the layout that other tools own as well, and
// fleetgen's input spells: kustomize's entry point, a Helm chart's values.
var otherOwners = []string{"kustomization.yaml", "values.yaml"}

// TestOneHome: the output tree is spelled here only. No string literal in
// the non-test Go code of the module outside this package names a top-level
// folder of the tree (manager/, clusters/, agents/) or one of its file names;
// paths are built with Kind.Path and read with Parse, messages and help
// text take their spelling from here too.
func TestOneHome(t *testing.T) {
	t.Parallel()
	var words []string
	for _, d := range Top {
		words = append(words, regexp.QuoteMeta(d+"/"))
	}
	for _, k := range kinds {
		name := string(k)[strings.LastIndexByte(string(k), '/')+1:]
		if !strings.Contains(name, "<") && !slices.Contains(otherOwners, name) {
			words = append(words, regexp.QuoteMeta(name)+`($|[^\w.-])`)
		}
	}
	spelled := regexp.MustCompile(`(^|[^\w.-])(` + strings.Join(words, "|") + `)`)
	if !spelled.MatchString("x "+string(FleetToken)) || spelled.MatchString("admin-cluster.yamlx") {
		t.Fatalf("%s misses a path or matches a longer name", spelled)
	}

	root := filepath.Join("..", "..")
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "pkg/layout" || d.Name() == "testdata" || (strings.HasPrefix(d.Name(), ".") && rel != ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		n++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(node ast.Node) bool {
			switch node := node.(type) {
			case *ast.ImportSpec:
				return false
			case *ast.Field:
				node.Tag = nil // a struct tag names a field, not a path
			case *ast.BasicLit:
				if node.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(node.Value)
				if err == nil && spelled.MatchString(s) && !slices.Contains(notLayout[rel], s) {
					t.Errorf("%s:%d: a string spells the output tree (%q): build it with package layout", rel, fset.Position(node.Pos()).Line, spelled.FindString(s))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read %d Go files under %s, want the module's", n, root)
	}
}

// TestKindsListed: every Kind constant of this package is one Parse tries
// (kinds), so that a new kind of file is one constant and its place there.
func TestKindsListed(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "layout.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" || vs.Names[0].Name == "Foreign" {
				continue
			}
			n++
			if k := Kind(strings.Trim(vs.Values[0].(*ast.BasicLit).Value, `"`)); !slices.Contains(kinds, k) {
				t.Errorf("%s (%s) is not in kinds: Parse never returns it", vs.Names[0].Name, k)
			}
		}
	}
	if n != len(kinds) {
		t.Errorf("%d Kind constants, %d kinds", n, len(kinds))
	}
}
