package sluiceechov5_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/echo/sluiceechov5"
	"github.com/sluice-go/sluice/adapters/httplimit/httplimittest"
	"github.com/sluice-go/sluice/core"
)

// ok answers "ok" with the status the request asks for (see
// httplimittest.StatusOf).
func ok(c *echo.Context) error {
	return c.String(httplimittest.StatusOf(c.Request().Context(), c.Request().Header.Get(httplimittest.StatusHeader)), "ok")
}

// recovery is Echo's panic recovery, quiet.
var recovery = middleware.RecoverWithConfig(middleware.RecoverConfig{DisablePrintStack: true})

// harness installs the middleware with Use (Echo has routed by then), behind
// Echo's panic recovery and an authentication step that stores the user
// with c.Set.
func harness(t *testing.T, cfg admit.Config, routes []string) httplimittest.Server {
	mw, err := sluiceechov5.New(cfg)
	require.NoError(t, err)
	e := echo.New()
	e.Use(recovery, auth, mw)
	for _, route := range routes {
		e.Any(route, ok)
	}
	return httplimittest.Handler(e)
}

// stack installs two middlewares with Use, the outer before the
// authentication step and the inner after it.
func stack(t *testing.T, outer, inner admit.Config, routes []string) httplimittest.Server {
	o, err := sluiceechov5.New(outer)
	require.NoError(t, err)
	i, err := sluiceechov5.New(inner)
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
	mw, err := sluiceechov5.New(cfg)
	require.NoError(t, err)
	e := echo.New()
	e.Pre(auth, mw)
	e.Use(recovery)
	for _, route := range routes {
		e.Any(route, ok)
	}
	return httplimittest.Handler(e)
}

func auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if u := c.Request().Header.Get(httplimittest.UserHeader); u != "" {
			c.Set(httplimittest.UserKey, u)
		}
		return next(c)
	}
}

func TestBehaviour(t *testing.T) {
	httplimittest.Run(t, httplimittest.Adapter{
		Serve: harness,
		Blind: blind,
		Stack: stack,
		Param: func(name string) string { return ":" + name },
		New:   func(cfg admit.Config) error { _, err := sluiceechov5.New(cfg); return err },
	})
}

// The one-line form, as the package documentation has it: with Use, and
// with Pre, where its rule, which has no Routes, works as well.
func TestLimitByIP(t *testing.T) {
	httplimittest.RunLimitByIP(t, func(t *testing.T, p *core.Policy) httplimittest.Server {
		e := echo.New()
		e.Use(sluiceechov5.LimitByIP(p))
		e.GET("/", ok)
		return httplimittest.Handler(e)
	})
	t.Run("pre", func(t *testing.T) {
		httplimittest.RunLimitByIP(t, func(t *testing.T, p *core.Policy) httplimittest.Server {
			e := echo.New()
			e.Pre(sluiceechov5.LimitByIP(p))
			e.GET("/", ok)
			return httplimittest.Handler(e)
		})
	})
}

func TestLimitByIPPanicsOnNilPolicy(t *testing.T) {
	assert.PanicsWithError(t, "admit: rule 0: Policy is nil", func() { sluiceechov5.LimitByIP(nil) })
}

// Config.Skip is the skip hook of every adapter: here on Echo's route, as
// Echo's Skipper would see it with c.Path().
func TestSkip(t *testing.T) {
	srv := harness(t, admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.ClientIP()}},
		Skip:    func(r *admit.Request) bool { return r.Route() == "/other" },
	}, httplimittest.Routes)
	for range 12 {
		resp := srv(httplimittest.Req{Path: "/other"})
		require.Equal(t, 200, resp.Status)
		assert.Empty(t, resp.Header.Get("RateLimit"))
	}
	resp := srv(httplimittest.Req{})
	assert.Equal(t, `"per-ip";r=9;t=1`, resp.Header.Get("RateLimit"))
}

// Under Pre, every request's route is unknown, even one that matches no
// route as it stands: a Pre middleware after this one may move it onto a
// route, as RemoveTrailingSlash moves "POST /login/" onto "/login". A Route
// key fails them all; no request reaches the handler with its rule left
// out.
func TestPreRouteKeyFailsEvenWithoutRoute(t *testing.T) {
	env := httplimittest.NewEnv(t)
	mw, err := sluiceechov5.New(admit.Config{
		Limiter: env.Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: httplimittest.Login, Key: admit.Join(admit.ClientIP(), admit.Route())}},
	})
	require.NoError(t, err)
	ran := 0
	e := echo.New()
	e.Pre(mw, middleware.RemoveTrailingSlash())
	e.POST("/login", func(c *echo.Context) error { ran++; return ok(c) })
	srv := httplimittest.Handler(e)
	for _, path := range []string{"/login", "/login/", "/nope"} {
		assert.Equal(t, http.StatusInternalServerError, srv(httplimittest.Req{Method: http.MethodPost, Path: path}).Status, path)
	}
	assert.Zero(t, ran, "the /login handler ran with its rule left out")
	assert.Empty(t, env.Keys())
}

// Under Pre, rules without Routes limit every request, those a later Pre
// middleware rewrites and those no route matches alike: the place for a
// limit that must hold before any other work.
func TestPreRulesWithoutRoutes(t *testing.T) {
	mw, err := sluiceechov5.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: httplimittest.Login, Key: admit.ClientIP()}},
	})
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

// Under Use, a 404 and a 405 are routed: rules with Routes leave them alone
// (the 405's path is the route's, which a rule for another method does not
// name).
func TestUseNotFoundIsNoRoute(t *testing.T) {
	env := httplimittest.NewEnv(t)
	srv := func() httplimittest.Server {
		mw, err := sluiceechov5.New(admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{
			{Policy: httplimittest.Login, Key: admit.ClientIP(), Routes: []string{"POST /login"}},
		}})
		require.NoError(t, err)
		e := echo.New()
		e.Use(mw)
		e.POST("/login", ok)
		return httplimittest.Handler(e)
	}()
	assert.Equal(t, http.StatusNotFound, srv(httplimittest.Req{Method: http.MethodPost, Path: "/nope"}).Status)
	assert.Equal(t, http.StatusMethodNotAllowed, srv(httplimittest.Req{Path: "/login"}).Status)
	assert.Empty(t, env.Keys())
}

// A reservation reaches the handler in the request context, where it
// settles the actual cost.
func TestReserveThenReconcile(t *testing.T) {
	mw, err := sluiceechov5.New(admit.Config{
		Limiter:   httplimittest.NewEnv(t).Limiter(t, nil),
		Rules:     []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.ClientIP(), Cost: func(*admit.Request) int64 { return 5 }}},
		Estimates: true,
	})
	require.NoError(t, err)
	var settled []error
	e := echo.New()
	e.GET("/", func(c *echo.Context) error {
		res := admit.ReservationFrom(c.Request().Context())
		require.NotNil(t, res)
		settled = append(settled, res.Reconcile(c.Request().Context(), 1))
		return ok(c)
	}, mw)
	srv := httplimittest.Handler(e)
	assert.Equal(t, `"per-ip";r=5;t=3`, srv(httplimittest.Req{}).Header.Get("RateLimit"))
	assert.Equal(t, `"per-ip";r=4;t=3`, srv(httplimittest.Req{}).Header.Get("RateLimit")) // 5 reserved, 4 refunded, 5 reserved
	assert.Equal(t, []error{nil, nil}, settled)
}

// A rule with Charge sees the status the client gets: a handler's error
// counts as the status Echo's DefaultHTTPErrorHandler answers it with.
func TestChargeSeesTheErrorStatus(t *testing.T) {
	var seen []int
	mw, err := sluiceechov5.New(admit.Config{
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
		"/http-error": func(*echo.Context) error { return echo.NewHTTPError(http.StatusUnauthorized, "who?") },
		"/wrapped": func(*echo.Context) error {
			return fmt.Errorf("login: %w", echo.NewHTTPError(http.StatusForbidden, ""))
		},
		"/plain": func(*echo.Context) error { return errors.New("boom") },
		"/written": func(c *echo.Context) error {
			_ = c.NoContent(http.StatusAccepted)
			return errors.New("after the response")
		},
		"/ok": ok,
	}
	for path, h := range routes {
		e.GET(path, h)
	}
	srv := httplimittest.Handler(e)
	for path, want := range map[string]int{"/http-error": 401, "/wrapped": 403, "/plain": 500, "/written": 202, "/ok": 200} {
		seen = nil
		resp := srv(httplimittest.Req{Path: path})
		assert.Equal(t, want, resp.Status, path)
		assert.Equal(t, []int{want}, seen, path)
	}
}
