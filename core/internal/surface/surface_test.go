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

// budget is the most exported names the four packages may have together
// (x/time/rate has 8, go-chi/httprate 29).
const budget = 98

func TestServerSurface(t *testing.T) {
	total := 0
	for _, dir := range []string{"core", "store/memory", "adapters/httplimit", "adapters/nethttp/sluicehttp"} {
		names := exported(t, filepath.Join("..", "..", "..", dir))
		t.Logf("%-28s %3d  %s", dir, len(names), strings.Join(names, " "))
		total += len(names)
	}
	t.Logf("%-28s %3d (budget %d)", "total", total, budget)
	assert.LessOrEqual(t, total, budget, "the server-side surface grew past its budget")
}

// The count sees every kind of declaration, and nothing unexported or in a
// test file.
func TestExportedCountsWhatItShould(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	write("a.go", "package p\nconst A, b = 1, 2\nvar V int\ntype T struct{ F int }\nfunc (T) M() {}\nfunc F() {}\nfunc g() {}\n")
	write("a_test.go", "package p\nfunc TestX() {}\n")
	assert.Equal(t, []string{"A", "V", "T", "F"}, exported(t, dir))
}

// exported returns the exported top-level names of the package in dir.
func exported(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no Go files in %s", dir)
	fset := token.NewFileSet()
	var names []string
	for _, path := range paths { // Glob sorts them
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			names = append(names, declNames(d)...)
		}
	}
	return names
}

func declNames(d ast.Decl) []string {
	var names []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil && d.Name.IsExported() {
			names = append(names, d.Name.Name)
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					names = append(names, s.Name.Name)
				}
			case *ast.ValueSpec:
				for _, id := range s.Names {
					if id.IsExported() {
						names = append(names, id.Name)
					}
				}
			}
		}
	}
	return names
}
