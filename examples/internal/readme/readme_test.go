package readme

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var readmePath = flag.String("readme", "../../../README.md", "the Markdown file to check")

// Every Go block of README.md compiles (and passes go vet) by the rules of
// the package doc.
func TestREADMEGoBlocksCompile(t *testing.T) {
	path, md := readme(t)
	blocks := goBlocks(md)
	require.NotEmpty(t, blocks, "%s has no Go block", path)
	out, err := compile(t, path, blocks)
	assert.NoError(t, err, "%s: Go blocks that do not compile:\n%s", path, out)
}

// Every Markdown table of README.md has as many cells in its delimiter row
// and in each row as in its header.
func TestREADMETablesAreWellFormed(t *testing.T) {
	path, md := readme(t)
	for _, e := range tableErrors(md) {
		t.Errorf("%s:%s", path, e)
	}
}

// The checks themselves fail on what they are there to catch: a fragment
// with a variable never used and a name never declared, and a table with
// one delimiter cell too few; and they pass what the rules allow.
func TestTheChecksCatchTheDefects(t *testing.T) {
	md := strings.Join([]string{
		"# x",
		"",
		"<!-- go: var h http.Handler -->",
		"```go",
		`http.Handle("/", sluicehttp.LimitByIP(core.PerSecond(10))(h))`,
		"```",
		"",
		"```go",
		`store, err := memory.New()`,
		`defer store.Close()`,
		`limiter, err := core.NewLimiter(store, core.WithFallback(localStore, 1))`,
		"```",
		"",
		"| a | b | c |",
		"|---|---|",
		"| 1 | 2 | 3 |",
		"",
		"| a | b |",
		"|---|---|",
		"| 1 | 2 | 3 |",
		"",
		"| a `x\\|y` | b |",
		"|:--|--:|",
		"| 1 | 2 |",
	}, "\n")
	blocks := goBlocks(md)
	require.Len(t, blocks, 2)
	assert.Equal(t, 5, blocks[0].line)
	assert.Equal(t, "var h http.Handler", blocks[0].context)
	assert.Equal(t, 9, blocks[1].line)

	out, err := compile(t, "fake.md", blocks[:1])
	assert.NoError(t, err, out)
	out, err = compile(t, "fake.md", blocks)
	require.Error(t, err)
	assert.Contains(t, out, "fake.md:11")
	assert.Contains(t, out, "declared and not used: limiter")
	assert.Contains(t, out, "undefined: localStore")
	assert.NotContains(t, out, "fake.md:5")

	assert.Equal(t, []string{
		"15: table's delimiter row has 2 cells, its header 3",
		"20: table row has 3 cells, its header 2",
	}, tableErrors(md))
}

func readme(t *testing.T) (path, md string) {
	t.Helper()
	path, err := filepath.Abs(*readmePath)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return path, string(b)
}

// block is a ```go block: its code, the line of the file its code starts
// on, and the declarations of the <!-- go: ... --> comment above it.
type block struct {
	code    string
	line    int
	context string
}

var contextComment = regexp.MustCompile(`^<!--\s*go:(.*)-->\s*$`)

// goBlocks returns md's ```go blocks, in order.
func goBlocks(md string) []block {
	var blocks []block
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		fence, info := fenceOf(lines[i])
		if fence == "" {
			continue
		}
		b := block{line: i + 2}
		if i > 0 {
			if m := contextComment.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				b.context = strings.TrimSpace(m[1])
			}
		}
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		var code []string
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), fence); i++ {
			code = append(code, dedent(lines[i], indent))
		}
		if info == "go" {
			b.code = strings.Join(code, "\n") + "\n"
			blocks = append(blocks, b)
		}
	}
	return blocks
}

// fenceOf returns the fence (``` or ~~~, as long as written) a line opens
// a code block with, and the block's info string.
func fenceOf(line string) (fence, info string) {
	s := strings.TrimSpace(line)
	for _, c := range []string{"`", "~"} {
		n := len(s) - len(strings.TrimLeft(s, c))
		if n >= 3 {
			return s[:n], strings.TrimSpace(s[n:])
		}
	}
	return "", ""
}

// dedent strips up to n leading spaces: a block in a list item is indented
// as the item.
func dedent(line string, n int) string {
	for i := 0; i < n && strings.HasPrefix(line, " "); i++ {
		line = line[1:]
	}
	return line
}

// knownImports are the packages a fragment may name without importing.
var knownImports = map[string]string{
	"core":          "github.com/sluice-go/sluice/core",
	"backpressure":  "github.com/sluice-go/sluice/core/backpressure",
	"admit":         "github.com/sluice-go/sluice/adapters/admit",
	"httplimit":     "github.com/sluice-go/sluice/adapters/httplimit",
	"sluicehttp":    "github.com/sluice-go/sluice/adapters/nethttp/sluicehttp",
	"sluicechi":     "github.com/sluice-go/sluice/adapters/chi/sluicechi",
	"sluicegin":     "github.com/sluice-go/sluice/adapters/gin/sluicegin",
	"sluiceecho":    "github.com/sluice-go/sluice/adapters/echo/sluiceecho",
	"sluiceechov5":  "github.com/sluice-go/sluice/adapters/echo/sluiceechov5",
	"sluicefiber":   "github.com/sluice-go/sluice/adapters/fiber/sluicefiber",
	"sluicefiberv3": "github.com/sluice-go/sluice/adapters/fiber/sluicefiberv3",
	"memory":        "github.com/sluice-go/sluice/store/memory",
	"redisstore":    "github.com/sluice-go/sluice/store/redis/redisstore",
	"redisslots":    "github.com/sluice-go/sluice/store/redis/redisslots",
	"client":        "github.com/sluice-go/sluice/client",
	"sluiceotel":    "github.com/sluice-go/sluice/observe/sluiceotel",
	"sluiceslog":    "github.com/sluice-go/sluice/observe/sluiceslog",
	"sluicetest":    "github.com/sluice-go/sluice/sluicetest",
	"goredis":       "github.com/redis/go-redis/v9",
	"gin":           "github.com/gin-gonic/gin",
	"chi":           "github.com/go-chi/chi/v5",
	"echo":          "github.com/labstack/echo/v4",
	"echov5":        "github.com/labstack/echo/v5",
	"fiber":         "github.com/gofiber/fiber/v2",
	"fiberv3":       "github.com/gofiber/fiber/v3",
	"context":       "context",
	"errors":        "errors",
	"fmt":           "fmt",
	"http":          "net/http",
	"io":            "io",
	"log":           "log",
	"net":           "net",
	"os":            "os",
	"slog":          "log/slog",
	"strconv":       "strconv",
	"strings":       "strings",
	"time":          "time",
	"httptest":      "net/http/httptest",
	"testing":       "testing",
}

// compile writes each block as a package of its own under a directory of
// testdata (inside the module, so that the module's requirements resolve,
// and out of ./...), with //line directives pointing back to md, and runs
// go vet over them all. It returns go vet's output.
func compile(t *testing.T, md string, blocks []block) (string, error) {
	t.Helper()
	require.NoError(t, os.MkdirAll("testdata", 0o755))
	dir, err := os.MkdirTemp("testdata", "blocks-")
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = os.RemoveAll(dir)
		_ = os.Remove("testdata") // only if no other run's blocks are there
	})
	for i, b := range blocks {
		pkg := fmt.Sprintf("b%d", i)
		src := source(pkg, md, b)
		require.NoError(t, os.Mkdir(filepath.Join(dir, pkg), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, pkg, "block.go"), src, 0o644))
	}
	// go build reports every block's errors (go vet stops at a package's
	// first); go vet then checks what compiles.
	pattern := "./" + filepath.ToSlash(dir) + "/..."
	out, err := exec.Command("go", "build", pattern).CombinedOutput()
	if err != nil {
		return string(out), err
	}
	out, err = exec.Command("go", "vet", pattern).CombinedOutput()
	return string(out), err
}

// source is block b as a Go file of package pkg, by the package doc's rules.
// A fragment that does not parse is left for the compiler to report.
func source(pkg, md string, b block) []byte {
	if isFile(b.code) {
		return []byte(fmt.Sprintf("//line %s:%d\n%s", md, b.line, b.code))
	}
	imports, rest, restLine := splitImports(b.code)
	body := fmt.Sprintf("func _() {\n//line %s:%d\n%s}\n", md, b.line+restLine, rest)
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+rest, 0); err == nil {
		body = fmt.Sprintf("//line %s:%d\n%s", md, b.line+restLine, rest)
	}
	decls := b.context + "\n" + body
	named := unresolvedPackages(decls)
	var src bytes.Buffer
	fmt.Fprintf(&src, "package %s\n\n", pkg)
	for _, imp := range imports {
		fmt.Fprintln(&src, imp)
	}
	for _, name := range named {
		if path, ok := knownImports[name]; ok && !imported(imports, path) {
			fmt.Fprintf(&src, "import %s %q\n", name, path)
		}
	}
	src.WriteString(decls)
	return src.Bytes()
}

// isFile says whether code starts, past comments, with a package clause.
func isFile(code string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", code, parser.PackageClauseOnly)
	return err == nil && f.Name != nil
}

// splitImports takes the import declarations off the top of a fragment: it
// returns them, the rest, and the line of the fragment the rest starts on.
func splitImports(code string) (imports []string, rest string, line int) {
	lines := strings.Split(code, "\n")
	i := 0
	for i < len(lines) {
		s := strings.TrimSpace(lines[i])
		switch {
		case s == "" || strings.HasPrefix(s, "//"):
			i++
		case strings.HasPrefix(s, "import ("):
			start := i
			for i < len(lines) && strings.TrimSpace(lines[i]) != ")" {
				i++
			}
			imports = append(imports, strings.Join(lines[start:i+1], "\n"))
			i++
		case strings.HasPrefix(s, "import "):
			imports = append(imports, s)
			i++
		default:
			return imports, strings.Join(lines[i:], "\n"), i
		}
	}
	return imports, "", i
}

func imported(imports []string, path string) bool {
	for _, imp := range imports {
		if strings.Contains(imp, `"`+path+`"`) {
			return true
		}
	}
	return false
}

// unresolvedPackages returns the names that src selects from (x.Y) without
// declaring them: the packages it needs imported.
func unresolvedPackages(src string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+src, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	declared := declaredNames(f)
	seen := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && !declared[id.Name] {
				seen[id.Name] = true
			}
		}
		return true
	})
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// declaredNames returns every name f declares, at any depth: a variable
// named like a package shadows it.
func declaredNames(f *ast.File) map[string]bool {
	declared := map[string]bool{}
	add := func(ids ...*ast.Ident) {
		for _, id := range ids {
			declared[id.Name] = true
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.ValueSpec:
			add(n.Names...)
		case *ast.Field:
			add(n.Names...)
		case *ast.FuncDecl:
			add(n.Name)
		case *ast.TypeSpec:
			add(n.Name)
		}
		return true
	})
	return declared
}

// tableErrors returns, for each table of md outside code blocks, the rows
// whose cell count differs from its header's, as "line: what".
func tableErrors(md string) []string {
	var errs []string
	lines := strings.Split(md, "\n")
	inCode := ""
	for i := 0; i < len(lines); i++ {
		if fence, _ := fenceOf(lines[i]); fence != "" || inCode != "" {
			switch {
			case inCode == "":
				inCode = fence
			case strings.HasPrefix(strings.TrimSpace(lines[i]), inCode):
				inCode = ""
			}
			continue
		}
		if !isRow(lines[i]) || i+1 >= len(lines) || !isDelimiter(lines[i+1]) {
			continue
		}
		header := len(cells(lines[i]))
		if n := len(cells(lines[i+1])); n != header {
			errs = append(errs, fmt.Sprintf("%d: table's delimiter row has %d cells, its header %d", i+2, n, header))
		}
		for i += 2; i < len(lines) && isRow(lines[i]); i++ {
			if n := len(cells(lines[i])); n != header {
				errs = append(errs, fmt.Sprintf("%d: table row has %d cells, its header %d", i+1, n, header))
			}
		}
	}
	return errs
}

func isRow(line string) bool { return strings.HasPrefix(strings.TrimSpace(line), "|") }

var delimiterCell = regexp.MustCompile(`^\s*:?-+:?\s*$`)

func isDelimiter(line string) bool {
	if !isRow(line) {
		return false
	}
	for _, c := range cells(line) {
		if !delimiterCell.MatchString(c) {
			return false
		}
	}
	return true
}

// cells splits a table row on its unescaped pipes, as GitHub does (a pipe
// inside a code span must be escaped too).
func cells(line string) []string {
	s := strings.TrimSpace(line)
	s = strings.TrimPrefix(s, "|")
	if strings.HasSuffix(s, "|") && !strings.HasSuffix(s, `\|`) {
		s = s[:len(s)-1]
	}
	var out []string
	var cell strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '|':
			cell.WriteString(`\|`)
			i++
		case s[i] == '|':
			out = append(out, cell.String())
			cell.Reset()
		default:
			cell.WriteByte(s[i])
		}
	}
	return append(out, cell.String())
}
