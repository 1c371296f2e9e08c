package problem

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestConstructors: each constructor sets its code and makes its message one
// line; every code has a constructor and is listed in docs/cli.md.
func TestConstructors(t *testing.T) {
	t.Parallel()
	ctors := map[string]func(path, format string, args ...any) *FieldError{
		CodeYAMLSyntax: Syntax, CodeEmpty: Empty, CodeTooLarge: TooLarge, CodeNotText: NotText,
		CodeMultiDoc: MultiDoc, CodeYAMLAlias: Alias, CodeNotAMapping: NotAMapping,
		CodeUnknownField: UnknownField, CodeDuplicateKey: DuplicateKey, CodeWrongType: WrongType,
		CodeRequired: Required, CodeUnsupported: NotSupported, CodeInvalid: InvalidValue,
		CodeDuration: InvalidDuration, CodeDuplicate: Duplicate, CodeUnknownRef: NotFound,
		CodeCycle: Cycle, CodeNotApplicable: NotApplicable, CodeUnreadable: Unreadable,
		CodeUnsetEnv: UnsetEnv, CodeMissingLabel: MissingLabel, CodeOther: Other,
		CodeEmptyGroup: EmptyGroup, CodeUnmatchedTarget: UnmatchedTarget, CodeEmptySelection: EmptySelection, CodeUnanchored: Unanchored,
		CodeNotEvaluated: NotEvaluated, CodeApplicationSet: ApplicationSetRefused,
		CodeNotFollowed: NotFollowed,
		CodeEmptyShard:  EmptyShard, CodeShardLoad: ShardLoad, CodeStatusSize: StatusSize,
		CodeUnpinnedBundle: UnpinnedBundleImage,
	}
	for code, mk := range ctors {
		e := mk("spec.x", "bad %q\r\nvalue", "v")
		if e.ErrorCode() != code || e.Path != "spec.x" || e.Msg != `bad "v"  value` {
			t.Errorf("%s: got %q %q %q", code, e.ErrorCode(), e.Path, e.Msg)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range declaredCodes(t) {
		if ctors[code] == nil {
			t.Errorf("code %s has no constructor in this test's table", code)
		}
		if !strings.Contains(string(doc), "`"+code+"`") {
			t.Errorf("docs/cli.md does not list code %s", code)
		}
	}
}

// declaredCodes returns the values of the Code* constants of codes.go.
func declaredCodes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && strings.HasPrefix(vs.Names[0].Name, "Code") {
			s, _ := strconv.Unquote(vs.Values[0].(*ast.BasicLit).Value)
			codes = append(codes, s)
		}
		return true
	})
	if len(codes) < 20 {
		t.Fatalf("found %d codes in codes.go", len(codes))
	}
	return codes
}

// TestNoFieldErrorLiterals: outside this package a FieldError is made only by
// the constructors, so none is without a code. A composite literal
// (problem.FieldError{…}, or one elided in problem.Errors{{…}}),
// new(problem.FieldError) or a variable of the type anywhere in the module,
// tests included, fails.
func TestNoFieldErrorLiterals(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "problem" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		for _, bad := range fieldErrorLiterals(t, path) {
			t.Errorf("%s: a FieldError made without a constructor (it would have no code): use problem.Required, problem.InvalidValue, …", bad)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("walked %d Go files: is the module root %s?", files, root)
	}
}

// fieldErrorLiterals returns the positions in the Go file path that make a
// FieldError other than through a constructor.
func fieldErrorLiterals(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	name := ""
	for _, im := range f.Imports {
		if im.Path.Value == `"fleetgen.dev/fleetgen/pkg/problem"` {
			name = "problem"
			if im.Name != nil {
				name = im.Name.Name
			}
		}
	}
	if name == "" {
		return nil
	}
	// is reports whether x is problem.<typ>, *problem.<typ> or []*problem.<typ>.
	is := func(x ast.Expr, typ string) bool {
		for {
			switch y := x.(type) {
			case *ast.StarExpr:
				x = y.X
				continue
			case *ast.ArrayType:
				x = y.Elt
				continue
			case *ast.SelectorExpr:
				id, ok := y.X.(*ast.Ident)
				return ok && id.Name == name && y.Sel.Name == typ
			}
			return false
		}
	}
	var bad []string
	ast.Inspect(f, func(n ast.Node) bool {
		found := false
		switch n := n.(type) {
		case *ast.CompositeLit:
			found = is(n.Type, "FieldError") && !isSlice(n.Type)
			if is(n.Type, "Errors") || (is(n.Type, "FieldError") && isSlice(n.Type)) {
				for _, el := range n.Elts {
					if c, ok := el.(*ast.CompositeLit); ok && c.Type == nil {
						found = true
					}
					if u, ok := el.(*ast.UnaryExpr); ok {
						if c, ok := u.X.(*ast.CompositeLit); ok && c.Type == nil {
							found = true
						}
					}
				}
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "new" && len(n.Args) == 1 {
				found = is(n.Args[0], "FieldError")
			}
		case *ast.ValueSpec:
			if sel, ok := n.Type.(*ast.SelectorExpr); ok {
				found = is(sel, "FieldError")
			}
		}
		if found {
			bad = append(bad, fset.Position(n.Pos()).String())
		}
		return true
	})
	return bad
}

func isSlice(x ast.Expr) bool {
	_, ok := x.(*ast.ArrayType)
	return ok
}

// TestFieldErrorLiteralsFound: the check above finds each way of making a
// FieldError without a constructor.
func TestFieldErrorLiteralsFound(t *testing.T) {
	t.Parallel()
	src := `package x

import p "fleetgen.dev/fleetgen/pkg/problem"

var a = &p.FieldError{Msg: "a"}
var b = p.Errors{{Msg: "b"}}
var c = []*p.FieldError{{Msg: "c"}}
var d = new(p.FieldError)
var e p.FieldError
var ok = p.Errors{p.Required("x", "y")}
`
	path := filepath.Join(t.TempDir(), "x.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, pos := range fieldErrorLiterals(t, path) {
		parts := strings.Split(pos, ":")
		lines = append(lines, parts[len(parts)-2])
	}
	if got, want := strings.Join(lines, ","), "5,6,7,8,9"; got != want {
		t.Errorf("found on lines %s, want %s", got, want)
	}
}
