package surface

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// budget is the most exported identifiers the packages a net/http user's
// server path goes through may have together, counted as identifiers does.
const budget = 268

// serverPath are those packages: the model, the default store, the
// protocol-neutral engine, the HTTP layer and the net/http adapter.
var serverPath = []string{"core", "store/memory", "adapters/admit", "adapters/httplimit", "adapters/nethttp/sluicehttp"}

func TestServerSurface(t *testing.T) {
	total := 0
	for _, dir := range serverPath {
		c := identifiers(t, filepath.Join("..", "..", "..", dir))
		t.Logf("%-28s %3d = %d top-level + %d methods + %d fields", dir, c.total(), len(c.top), len(c.methods), len(c.fields))
		total += c.total()
	}
	t.Logf("%-28s %3d (budget %d)", "total", total, budget)
	assert.LessOrEqual(t, total, budget, "the server-side surface grew past its budget")
}

// The count sees every kind of declaration: top-level names, methods of
// exported types (not of unexported ones, nor an interface's, which are
// its contract), and exported fields of exported structs, embedded ones
// included; nothing unexported or in a test file.
func TestIdentifiersCountsWhatItShould(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	write("a.go", `package p
const A, b = 1, 2
var V int
type T struct{ F, g int; E }
type E struct{}
type u struct{ H int }
type I interface{ M() }
func (T) M() {}
func (*T) N() {}
func (u) M() {}
func F() {}
func g() {}
`)
	write("a_test.go", "package p\nfunc TestX() {}\n")
	c := identifiers(t, dir)
	assert.Equal(t, []string{"A", "V", "T", "E", "I", "F"}, c.top)
	assert.Equal(t, []string{"T.M", "T.N"}, c.methods)
	assert.Equal(t, []string{"T.F", "T.E"}, c.fields)
}

type count struct{ top, methods, fields []string }

func (c count) total() int { return len(c.top) + len(c.methods) + len(c.fields) }

// identifiers returns the exported identifiers of the package in dir.
func identifiers(t *testing.T, dir string) count {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no Go files in %s", dir)
	fset := token.NewFileSet()
	var files []*ast.File
	for _, path := range paths { // Glob sorts them
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		files = append(files, f)
	}
	exported := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok {
				for _, s := range g.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() {
						exported[ts.Name.Name] = true
					}
				}
			}
		}
	}
	var c count
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				switch {
				case !d.Name.IsExported():
				case d.Recv == nil:
					c.top = append(c.top, d.Name.Name)
				default:
					if r := receiver(d.Recv.List[0].Type); exported[r] {
						c.methods = append(c.methods, r+"."+d.Name.Name)
					}
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					c.spec(s)
				}
			}
		}
	}
	return c
}

func (c *count) spec(s ast.Spec) {
	switch s := s.(type) {
	case *ast.TypeSpec:
		if !s.Name.IsExported() {
			return
		}
		c.top = append(c.top, s.Name.Name)
		st, ok := s.Type.(*ast.StructType)
		if !ok {
			return
		}
		for _, f := range st.Fields.List {
			if len(f.Names) == 0 { // embedded
				if n := receiver(f.Type); ast.IsExported(n) {
					c.fields = append(c.fields, s.Name.Name+"."+n)
				}
			}
			for _, n := range f.Names {
				if n.IsExported() {
					c.fields = append(c.fields, s.Name.Name+"."+n.Name)
				}
			}
		}
	case *ast.ValueSpec:
		for _, id := range s.Names {
			if id.IsExported() {
				c.top = append(c.top, id.Name)
			}
		}
	}
}

// receiver returns the name of the type t names, through a pointer, type
// arguments or a package qualifier.
func receiver(t ast.Expr) string {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.SelectorExpr:
			return x.Sel.Name
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
