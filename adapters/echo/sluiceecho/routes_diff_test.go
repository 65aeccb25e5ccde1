package sluiceecho_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/sluice/adapters/routes"
)

// echoTemplates are an Echo server's routes.
var echoTemplates = []string{"/", "/items/:id", "/items/new", "/items/:id/parts", "/files/*", "/api/login", "/user_:name", "/a/:x/b", "/static/s*"}

// fuzzSegs are the segments fuzzed paths are made of.
var fuzzSegs = []string{"", "a", "b", "items", "new", "parts", "files", "api", "login", "user_", "user_x", "x", "static", "s", "sx"}

func fuzzPath(b []byte) string {
	if len(b) > 5 {
		b = b[:5]
	}
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte('/')
		sb.WriteString(fuzzSegs[int(c)%len(fuzzSegs)])
	}
	if sb.Len() == 0 {
		return "/"
	}
	return sb.String()
}

// bestOf returns the template routes.Echo routes path to.
func bestOf(path string) string {
	found, top := "", int64(-1)
	for _, t := range echoTemplates {
		if rank, ok := routes.Echo.Match(t, path); ok && rank > top {
			found, top = t, rank
		}
	}
	return found
}

// FuzzEchoRoutes checks routes.Echo against Echo's own router: every path
// Echo routes goes to the template routes.Echo ranks first (or, for a path
// with a trailing slash, the one without it), and a path Echo finds no
// route for may match one (it is answered 404 under the rule).
func FuzzEchoRoutes(f *testing.F) {
	e := echo.New()
	for _, p := range echoTemplates {
		e.GET(p, func(c echo.Context) error { return c.String(http.StatusOK, c.Path()) })
	}
	for _, seed := range [][]byte{{}, {3, 1}, {3, 4}, {3, 1, 5}, {6}, {6, 1, 2}, {9}, {1, 11, 2}, {7, 8}, {3, 1, 0}, {0}, {12, 13}, {12, 14, 1}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		path := fuzzPath(b)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		got := bestOf(path)
		switch {
		case rec.Code == http.StatusOK && got != rec.Body.String() && strings.HasSuffix(path, "/"):
			// routes.Echo matches the path without its slash first, as
			// RemoveTrailingSlash would have it routed: a rule of either
			// template applies.
			assert.NotEmpty(t, got, path)
		case rec.Code == http.StatusOK:
			assert.Equal(t, rec.Body.String(), got, path)
		}
		// A path Echo finds no route for may match a template (a last
		// parameter taking the rest, where Echo has a deeper route that
		// does not match): the rule applies to a 404, never less.
	})
}
