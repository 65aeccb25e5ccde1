package sluiceecho_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/echo/sluiceecho"
	"github.com/sluice-go/sluice/adapters/httplimit/httplimittest"
	"github.com/sluice-go/sluice/core"
)

// ok answers "ok" with the status the request asks for (see
// httplimittest.StatusOf).
func ok(c echo.Context) error {
	return c.String(httplimittest.StatusOf(c.Request().Context(), c.Request().Header.Get(httplimittest.StatusHeader)), "ok")
}

// recovery is Echo's panic recovery, quiet.
var recovery = middleware.RecoverWithConfig(middleware.RecoverConfig{DisablePrintStack: true})

// newEcho installs the middleware with Use (Echo has routed by then), behind
// Echo's panic recovery and an authentication step that stores the user
// with c.Set.
func newEcho(t *testing.T, cfg admit.Config, routes []string, opts ...sluiceecho.Option) *echo.Echo {
	mw, err := sluiceecho.New(cfg, opts...)
	require.NoError(t, err)
	e := echo.New()
	e.Use(recovery, auth, mw)
	for _, route := range routes {
		e.Any(route, ok)
	}
	return e
}

func auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u := c.Request().Header.Get(httplimittest.UserHeader); u != "" {
			c.Set(httplimittest.UserKey, u)
		}
		return next(c)
	}
}

func harness(t *testing.T, cfg admit.Config, routes []string) httplimittest.Server {
	return httplimittest.Handler(newEcho(t, cfg, routes))
}

// stack installs two middlewares with Use, the outer before the
// authentication step and the inner after it.
func stack(t *testing.T, outer, inner admit.Config, routes []string) httplimittest.Server {
	o, err := sluiceecho.New(outer)
	require.NoError(t, err)
	i, err := sluiceecho.New(inner)
	require.NoError(t, err)
	e := echo.New()
	e.Use(recovery, o, auth, i)
	for _, route := range routes {
		e.Any(route, ok)
	}
	return httplimittest.Handler(e)
}

// blind installs the middleware with Pre, before Echo routes, and the
// panic recovery after it, with Use.
func blind(t *testing.T, cfg admit.Config, routes []string) httplimittest.Server {
	mw, err := sluiceecho.New(cfg)
	require.NoError(t, err)
	e := echo.New()
	e.Pre(auth, mw)
	e.Use(recovery)
	for _, route := range routes {
		e.Any(route, ok)
	}
	return httplimittest.Handler(e)
}

func TestBehaviour(t *testing.T) {
	httplimittest.Run(t, httplimittest.Adapter{
		Serve: harness,
		Blind: blind,
		Stack: stack,
		Param: func(name string) string { return ":" + name },
		New:   func(cfg admit.Config) error { _, err := sluiceecho.New(cfg); return err },
	})
}

// Config.Skip is the skip hook of every adapter: here on Echo's route, as
// Echo's Skipper would see it with c.Path().
func TestSkip(t *testing.T) {
	srv := httplimittest.Handler(newEcho(t, admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.ClientIP()}},
		Skip:    func(r *admit.Request) bool { return r.Route() == "/other" },
	}, httplimittest.Routes))
	for range 12 {
		resp := srv(httplimittest.Req{Path: "/other"})
		require.Equal(t, 200, resp.Status)
		assert.Empty(t, resp.Header.Get("RateLimit"))
	}
	resp := srv(httplimittest.Req{})
	assert.Equal(t, `"per-ip";r=9;t=1`, resp.Header.Get("RateLimit"))
}

// Installed with Pre but without BeforeRouting, the middleware routes a
// request itself to tell "not routed yet" from "no route": one a route
// matches fails loudly, one none matches as it stands is taken as a 404 (see
// TestPreRouteKeyFailsEvenWithoutRoute for why BeforeRouting is needed
// there).
func TestPreWithoutRoute(t *testing.T) {
	env := httplimittest.NewEnv(t)
	srv := blind(t, admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{
		{Policy: httplimittest.PerIP, Key: admit.ClientIP()},
		{Policy: httplimittest.Login, Key: admit.ClientIP(), Routes: []string{"POST /login"}},
	}}, httplimittest.Routes)
	resp := srv(httplimittest.Req{Method: http.MethodPost, Path: "/nope/x"})
	assert.Equal(t, http.StatusNotFound, resp.Status)
	assert.Equal(t, `"per-ip";r=9;t=1`, resp.Header.Get("RateLimit"))
	assert.Equal(t, http.StatusInternalServerError, srv(httplimittest.Req{Method: http.MethodPost, Path: "/login"}).Status)
}

// With Pre, a rule with Routes is refused when the middleware is built: no
// request it decides has its route known yet.
func TestPreRefusesRoutes(t *testing.T) {
	mw, err := sluiceecho.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules: []admit.Rule{
			{Policy: httplimittest.PerIP, Key: admit.ClientIP()},
			{Policy: httplimittest.Login, Key: admit.ClientIP(), Routes: []string{"POST /login"}},
		},
	}, sluiceecho.BeforeRouting())
	assert.Nil(t, mw)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `sluiceecho: rule 1 (login) has Routes, but with BeforeRouting`)
}

// A rule that chooses its policy per request is named by its policies.
func TestPreRefusesRoutesOfPolicyChoosingRule(t *testing.T) {
	_, err := sluiceecho.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules: []admit.Rule{{
			Policies: []*core.Policy{httplimittest.Free, httplimittest.Pro}, Select: httplimittest.PlanOf,
			Key: admit.Header("X-API-Key"), Routes: []string{"/login"},
		}},
	}, sluiceecho.BeforeRouting())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `sluiceecho: rule 0 (free|pro) has Routes, but with BeforeRouting`)
}

// With Pre, every request's route is unknown, even one that matches no route
// as it stands: a Pre middleware after this one may move it onto a route,
// as RemoveTrailingSlash moves "POST /login/" onto "/login". A Route key
// fails them all; no request reaches the handler with its rule left out.
func TestPreRouteKeyFailsEvenWithoutRoute(t *testing.T) {
	env := httplimittest.NewEnv(t)
	mw, err := sluiceecho.New(admit.Config{
		Limiter: env.Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: httplimittest.Login, Key: admit.Join(admit.ClientIP(), admit.Route())}},
	}, sluiceecho.BeforeRouting())
	require.NoError(t, err)
	ran := 0
	e := echo.New()
	e.Pre(mw, middleware.RemoveTrailingSlash())
	e.POST("/login", func(c echo.Context) error { ran++; return c.String(http.StatusOK, "ok") })
	srv := httplimittest.Handler(e)
	for _, path := range []string{"/login", "/login/", "/nope"} {
		assert.Equal(t, http.StatusInternalServerError, srv(httplimittest.Req{Method: http.MethodPost, Path: path}).Status, path)
	}
	assert.Zero(t, ran, "the /login handler ran with its rule left out")
	assert.Empty(t, env.Keys())
}

// With Pre, rules without Routes limit every request, those a later Pre
// middleware rewrites and those no route matches alike: the place for a
// limit that must hold before any other work.
func TestPreRulesWithoutRoutes(t *testing.T) {
	mw, err := sluiceecho.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: httplimittest.Login, Key: admit.ClientIP()}},
	}, sluiceecho.BeforeRouting())
	require.NoError(t, err)
	e := echo.New()
	e.Pre(mw, middleware.RemoveTrailingSlash())
	e.POST("/login", ok)
	srv := httplimittest.Handler(e)
	var got []int
	for _, path := range []string{"/login", "/login/", "/nope", "/login"} {
		got = append(got, srv(httplimittest.Req{Method: http.MethodPost, Path: path}).Status)
	}
	assert.Equal(t, []int{200, 200, 404, 429}, got)
}

// A rule with Charge sees the status the client gets: a handler's error
// counts as the status Echo's DefaultHTTPErrorHandler answers it with.
func TestChargeSeesTheErrorStatus(t *testing.T) {
	var seen []int
	mw, err := sluiceecho.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules: []admit.Rule{{Policy: httplimittest.LoginFailures, Key: admit.Const("k"), Charge: func(status int) bool {
			seen = append(seen, status)
			return false
		}}},
	})
	require.NoError(t, err)
	e := echo.New()
	e.Use(mw)
	routes := map[string]echo.HandlerFunc{
		"/http-error": func(echo.Context) error { return echo.NewHTTPError(http.StatusUnauthorized) },
		"/internal": func(echo.Context) error {
			return echo.NewHTTPError(500).SetInternal(echo.NewHTTPError(http.StatusForbidden))
		},
		"/plain": func(echo.Context) error { return errors.New("boom") },
		"/written": func(c echo.Context) error {
			_ = c.NoContent(http.StatusAccepted)
			return errors.New("after the response")
		},
		"/ok": ok,
	}
	for path, h := range routes {
		e.GET(path, h)
	}
	srv := httplimittest.Handler(e)
	for path, want := range map[string]int{"/http-error": 401, "/internal": 403, "/plain": 500, "/written": 202, "/ok": 200} {
		seen = nil
		resp := srv(httplimittest.Req{Path: path})
		assert.Equal(t, want, resp.Status, path)
		assert.Equal(t, []int{want}, seen, path)
	}
}

// The one-line form, as the package documentation has it: with Use, and
// with Pre, where its rule, which has no Routes, works as well.
func TestLimitByIP(t *testing.T) {
	httplimittest.RunLimitByIP(t, func(t *testing.T, p *core.Policy) httplimittest.Server {
		e := echo.New()
		e.Use(sluiceecho.LimitByIP(p))
		e.GET("/", ok)
		return httplimittest.Handler(e)
	})
	t.Run("pre", func(t *testing.T) {
		httplimittest.RunLimitByIP(t, func(t *testing.T, p *core.Policy) httplimittest.Server {
			e := echo.New()
			e.Pre(sluiceecho.LimitByIP(p))
			e.GET("/", ok)
			return httplimittest.Handler(e)
		})
	})
}

func TestLimitByIPPanicsOnNilPolicy(t *testing.T) {
	assert.PanicsWithError(t, "admit: rule 0: Policy is nil", func() { sluiceecho.LimitByIP(nil) })
}
