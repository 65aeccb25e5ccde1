package routes

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// best returns the template of templates syntax routes path to: the
// matching one of the highest rank, "" if none matches.
func best(s *Syntax, templates []string, path string) string {
	found, top := "", int64(-1)
	for _, t := range templates {
		if rank, ok := s.Match(t, path); ok && rank > top {
			found, top = t, rank
		}
	}
	return found
}

func TestServeMux(t *testing.T) {
	for _, tc := range []struct {
		template, path string
		want           bool
	}{
		{"/items/{id}", "/items/7", true},
		{"/items/{id}", "/items/", false},
		{"/items/{id}", "/items/7/x", false},
		{"/files/{path...}", "/files/", true},
		{"/files/{path...}", "/files/a/b", true},
		{"/files/{path...}", "/files", false},
		{"/api/", "/api/x/y", true},
		{"/api/", "/api", false},
		{"/", "/anything/at/all", true},
		{"/{$}", "/", true},
		{"/{$}", "/x", false},
		{"/a/{$}", "/a/", true},
		{"/a/{$}", "/a/b", false},
		{"/login", "/login", true},
		{"/login", "/login/", false},
		{"/items/{id:[0-9]+}", "/items/12", true},
		{"/items/{id:[0-9]+}", "/items/x", false},
		{"/files/*", "/files/a/b", true},
		{"/v{major}.{minor}/x", "/v1.2/x", true},
	} {
		rank, ok := ServeMux.Match(tc.template, tc.path)
		assert.Equal(t, tc.want, ok, "%s on %s (rank %d)", tc.path, tc.template, rank)
	}
	for template, want := range map[string]string{
		"/u/:id":         "another router's syntax",
		"/files/*path":   "another router's syntax",
		"/a/{id":         "without '}'",
		"/a/{x...}/b":    "must end the template",
		"/a/{x}/{x}":     "appears twice",
		"/a/{1x}":        "not an identifier",
		"/a/{$}/b":       "must end the template",
		"/a/x{y...}":     "whole segment",
		"/a/{x:[}":       "parameter",
		"items":          "starts with '/'",
		"/a/{x}{y}":      "no literal between",
		"/a/x}":          "without '{'",
		"/{id:[0-9]{2}}": "",
	} {
		err := ServeMux.Check(template)
		if want == "" {
			assert.NoError(t, err, template)
			continue
		}
		if assert.Error(t, err, template) {
			assert.Contains(t, err.Error(), want, template)
		}
	}
}

func TestGinAndEcho(t *testing.T) {
	for _, tc := range []struct {
		s              *Syntax
		template, path string
		want           bool
	}{
		{Gin, "/items/:id", "/items/7", true},
		{Gin, "/items/:id", "/items/", false},
		{Echo, "/items/:id", "/items/", false},
		{Echo, "/items/:id", "/items/a/b", true}, // the last parameter takes the rest
		{Gin, "/items/:id", "/items/7/", true},   // Gin redirects it to /items/7
		{Gin, "/files/*path", "/files/", true},
		{Gin, "/files/*path", "/files/a/b", true},
		{Gin, "/files/*path", "/files", false},
		{Echo, "/files/*", "/files/a/b", true},
		{Echo, "/*", "/", true},
		{Echo, "/files/a*", "/files/ab/c", true},
		{Echo, "/files/a*", "/files/b", false},
		{Gin, "/user_:name", "/user_gordon", true},
		{Gin, "/user_:name", "/user_", false},
	} {
		_, ok := tc.s.Match(tc.template, tc.path)
		assert.Equal(t, tc.want, ok, "%v: %s on %s", tc.s, tc.path, tc.template)
	}
	for _, tc := range []struct {
		s        *Syntax
		template string
		want     string
	}{
		{Gin, "/u/{id}", "another router's syntax"},
		{Echo, "/u/{id}", "another router's syntax"},
		{Gin, "/a/*", "needs a name"},
		{Gin, "/a/*x/b", "must end the template"},
		{Gin, "/a/x*y", "must follow a '/'"},
		{Gin, "/a/:", "has no name"},
		{Gin, "/a/:x:y", "two parameters"},
		{Echo, "/a/:x*", "a parameter and a wildcard"},
	} {
		err := tc.s.Check(tc.template)
		if assert.Error(t, err, tc.template) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
}

// Of several templates that match, the one the router would choose wins.
func TestRank(t *testing.T) {
	mux := []string{"/", "/items/{id}", "/items/new", "/files/{path...}", "/api/", "/api/login", "/items/{id}/parts"}
	for path, want := range map[string]string{
		"/items/new": "/items/new", "/items/7": "/items/{id}", "/api/login": "/api/login", "/api/x": "/api/",
		"/files/a": "/files/{path...}", "/nope": "/", "/items/7/parts": "/items/{id}/parts",
	} {
		assert.Equal(t, want, best(ServeMux, mux, path), path)
	}
	gin := []string{"/items/:id", "/items/new", "/files/*path"}
	assert.Equal(t, "/items/new", best(Gin, gin, "/items/new"))
	assert.Equal(t, "/items/:id", best(Gin, gin, "/items/old"))
	fiber := Fiber(func(path, pattern string) bool { return strings.HasPrefix(path, strings.TrimSuffix(pattern, "*")) })
	assert.Equal(t, "/a/b", best(fiber, []string{"/a/*", "/a/b"}, "/a/b"))
	assert.ErrorContains(t, fiber.Check("/a/{b}"), "another router's syntax")
}

// muxTemplates is a ServeMux's routes, none in conflict with another.
var muxTemplates = []string{"/", "/{$}", "/items/{id}", "/items/new", "/items/{id}/parts", "/files/{path...}", "/api/", "/api/login",
	"/a/{x}/b", "/a/c/d", "/users/{id}/posts/{post}"}

// segs are the segments fuzzed paths are made of.
var segs = []string{"", "a", "b", "c", "items", "new", "parts", "files", "api", "login", "users", "posts", "x"}

// pathOf turns fuzz bytes into a clean path of segs.
func pathOf(b []byte) string {
	var sb strings.Builder
	if len(b) > 6 {
		b = b[:6]
	}
	for _, c := range b {
		sb.WriteByte('/')
		sb.WriteString(segs[int(c)%len(segs)])
	}
	if sb.Len() == 0 {
		return "/"
	}
	return sb.String()
}

// FuzzServeMux checks that ServeMux routes every path to the template
// net/http's own ServeMux does.
func FuzzServeMux(f *testing.F) {
	mux := http.NewServeMux()
	for _, p := range muxTemplates {
		mux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
	}
	for _, seed := range [][]byte{{}, {4, 1}, {4, 5}, {4, 1, 6}, {7, 1, 2}, {8}, {8, 9}, {1, 12, 2}, {1, 3, 1}, {10, 1, 11, 2}, {1, 0}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		path := pathOf(b)
		if strings.Contains(path, "//") {
			return // ServeMux redirects an unclean path
		}
		req := httptest.NewRequest(http.MethodGet, path, nil)
		h, pattern := mux.Handler(req)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code/100 == 3 {
			return // a redirect to the path with a slash
		}
		assert.Equal(t, pattern, best(ServeMux, muxTemplates, path), path)
	})
}

// FuzzSyntax checks that no template or path makes a syntax panic, and that
// a template Check refuses matches nothing.
func FuzzSyntax(f *testing.F) {
	for _, s := range []string{"/items/{id}", "/u/:id", "/files/*", "/a/{x:[0-9]+}", "/{$}", "/a/x*", "/a/{", "/:a?"} {
		f.Add(s, "/items/7")
	}
	fiber := Fiber(func(string, string) bool { return true })
	f.Fuzz(func(t *testing.T, template, path string) {
		for _, s := range []*Syntax{ServeMux, Gin, Echo, fiber} {
			err := s.Check(template)
			if _, ok := s.Match(template, path); ok && err != nil {
				t.Fatalf("%v: %q refused (%v) yet matches %q", s, template, err, path)
			}
		}
	})
}
