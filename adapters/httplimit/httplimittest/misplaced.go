package httplimittest

import (
	"bytes"

	"github.com/sluice-go/sluice/adapters/admit"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkMisplacedLogged checks that a middleware installed where the route
// is not known, with a rule with Routes, answers every request as it would
// after routing, logging nothing; and that a Route key that cannot find a
// request's route says so once, at WARN, with what to do.
func checkMisplacedLogged(t *testing.T, a Adapter) {
	if a.Blind == nil {
		t.Skip("the framework routes every request before running any middleware")
	}
	env := NewEnv(t)
	var logged bytes.Buffer
	cfg := loginOn("POST /login")(t, env)
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	srv := a.Blind(t, cfg, append(Routes[:len(Routes):len(Routes)], "/items/"+a.Param("id")))
	for _, req := range []Req{{}, {Path: "/other"}, {Method: http.MethodPost, Path: "/login"}, {Method: http.MethodPost, Path: "/login"}, {Method: http.MethodPost, Path: "/login"}} {
		resp := srv(req)
		require.Equal(t, http.StatusOK, resp.Status, "%s %s (body %q)", req.Method, req.Path, resp.Body)
	}
	require.Equal(t, http.StatusTooManyRequests, srv(Req{Method: http.MethodPost, Path: "/login"}).Status, "the login rule applies before routing")
	require.Equal(t, http.StatusOK, srv(Req{Path: "/other"}).Status, "and only to its route")
	assert.Empty(t, logged.String())

	cfg = admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{{Policy: PerKey, Key: admit.Route()}}}
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	srv = a.Blind(t, cfg, append(Routes[:len(Routes):len(Routes)], "/items/"+a.Param("id")))
	for _, req := range []Req{{}, {Path: "/other"}, {Path: "/login"}} {
		require.Equal(t, http.StatusOK, srv(req).Status)
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	require.Len(t, lines, 1, "logged once: %q", logged.String())
	for _, want := range []string{"level=WARN", "cannot see the route", admit.RouteUnknown, "sluicechi.New(cfg, r)", "not app.Use", "not e.Pre", "path=/"} {
		assert.Contains(t, lines[0], want)
	}
}
