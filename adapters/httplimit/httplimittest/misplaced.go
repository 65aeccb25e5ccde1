package httplimittest

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkMisplacedLogged checks that a middleware installed where the route
// is not known, with a rule with Routes, says so once, through
// Config.Logger, with where to install it instead: each request it might
// apply to still fails, but never silently.
func checkMisplacedLogged(t *testing.T, a Adapter) {
	if a.Blind == nil {
		t.Skip("the framework routes every request before running any middleware")
	}
	env := NewEnv(t)
	var logged bytes.Buffer
	cfg := loginOn("POST /login")(t, env)
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	srv := a.Blind(t, cfg, append(Routes[:len(Routes):len(Routes)], "/items/"+a.Param("id")))
	for _, req := range []Req{{}, {Method: http.MethodPost, Path: "/login"}, {Path: "/other"}} {
		resp := srv(req)
		require.Equal(t, http.StatusInternalServerError, resp.Status, "%s %s (body %q)", req.Method, req.Path, resp.Body)
		assert.Equal(t, InternalBody, resp.Body)
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	require.Len(t, lines, 1, "logged once: %q", logged.String())
	for _, want := range []string{"level=ERROR", "cannot see the route where this middleware is installed", "sluicechi.New(cfg, r)", "not app.Use", "not e.Pre", "path=/ "} {
		assert.Contains(t, lines[0], want)
	}
}
