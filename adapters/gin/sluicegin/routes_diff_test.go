package sluicegin_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/sluice/adapters/routes"
)

// ginTemplates are a Gin engine's routes.
var ginTemplates = []string{"/", "/items/:id", "/items/new", "/items/:id/parts", "/files/*path", "/api/login", "/user_:name", "/a/:x/b"}

// fuzzSegs are the segments fuzzed paths are made of.
var fuzzSegs = []string{"", "a", "b", "items", "new", "parts", "files", "api", "login", "user_", "user_x", "x"}

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

// bestOf returns the template routes.Gin routes path to among ginTemplates.
func bestOf(path string) string {
	found, top := "", int64(-1)
	for _, t := range ginTemplates {
		if rank, ok := routes.Gin.Match(t, path); ok && rank > top {
			found, top = t, rank
		}
	}
	return found
}

// FuzzGinRoutes checks routes.Gin against Gin's own router: every path Gin
// routes goes to the template routes.Gin ranks first, and a path Gin finds
// no route for matches no template.
func FuzzGinRoutes(f *testing.F) {
	gin.SetMode(gin.ReleaseMode)
	engine := gin.New()
	for _, p := range ginTemplates {
		engine.GET(p, func(c *gin.Context) { c.String(http.StatusOK, c.FullPath()) })
	}
	for _, seed := range [][]byte{{}, {3, 1}, {3, 4}, {3, 1, 5}, {6}, {6, 1, 2}, {9}, {1, 11, 2}, {7, 8}, {3, 1, 0}, {0}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		path := fuzzPath(b)
		rec := httptest.NewRecorder()
		engine.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		switch {
		case rec.Code == http.StatusOK:
			assert.Equal(t, rec.Body.String(), bestOf(path), path)
		case rec.Code/100 == 3:
			// Gin redirects a trailing slash: a rule of the template it
			// redirects to applies already (never less limited).
		default:
			assert.Empty(t, bestOf(path), "%s: Gin answered %d", path, rec.Code)
		}
	})
}
