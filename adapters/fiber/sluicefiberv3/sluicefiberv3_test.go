package sluicefiberv3_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/recover"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/fiber/sluicefiberv3"
	"github.com/sluice-go/sluice/adapters/httplimit/httplimittest"
	"github.com/sluice-go/sluice/core"
)

// ok answers "ok" with the status the request asks for (see
// httplimittest.StatusOf).
func ok(c fiber.Ctx) error {
	return c.Status(httplimittest.StatusOf(c.Context(), c.Get(httplimittest.StatusHeader))).SendString("ok")
}

// newApp registers the middleware on each route, where c.Route() is the
// route's own, behind Fiber's panic recovery and an authentication step
// that stores the user with c.Locals.
func newApp(t *testing.T, cfg admit.Config, routes []string) *fiber.App {
	mw, err := sluicefiberv3.New(cfg)
	require.NoError(t, err)
	app := fiber.New()
	app.Use(recover.New())
	for _, route := range routes {
		app.All(route, auth, mw, ok)
	}
	return app
}

// auth is the authentication step, and makes the request's
// httplimittest.Req.Context the one Fiber's handlers see.
func auth(c fiber.Ctx) error {
	if u := c.Get(httplimittest.UserHeader); u != "" {
		c.Locals(httplimittest.UserKey, u)
	}
	if rc, ok := c.RequestCtx().UserValue(requestContext{}).(context.Context); ok {
		c.SetContext(rc)
	}
	return c.Next()
}

// requestContext is the user value under which serve hands auth the
// request's context.
type requestContext struct{}

// harness drives the app's handler with a fasthttp.RequestCtx whose peer it
// sets (app.Test always reports 0.0.0.0), reusing contexts as fasthttp's
// server does (requests in turn all get the same one): a key that kept a
// view of a reused buffer would show up as a wrong key in a later step.
func harness(t *testing.T, cfg admit.Config, routes []string) httplimittest.Server {
	return serve(newApp(t, cfg, routes))
}

// stack installs two middlewares: the outer with app.Use, as an
// application limits every request per IP, and the inner on each route
// after the authentication step.
func stack(t *testing.T, outer, inner admit.Config, routes []string) httplimittest.Server {
	o, err := sluicefiberv3.New(outer)
	require.NoError(t, err)
	i, err := sluicefiberv3.New(inner)
	require.NoError(t, err)
	app := fiber.New()
	app.Use(recover.New(), o)
	for _, route := range routes {
		app.All(route, auth, i, ok)
	}
	return serve(app)
}

// blind installs the middleware with app.Use, which Fiber runs before it has
// found the request's route.
func blind(t *testing.T, cfg admit.Config, routes []string) httplimittest.Server {
	mw, err := sluicefiberv3.New(cfg)
	require.NoError(t, err)
	app := fiber.New()
	app.Use(recover.New(), auth, mw)
	for _, route := range routes {
		app.All(route, ok)
	}
	return serve(app)
}

func serve(app *fiber.App) httplimittest.Server {
	handler := app.Handler()
	var (
		mu   sync.Mutex
		idle []*fasthttp.RequestCtx
	)
	return func(r httplimittest.Req) httplimittest.Resp {
		mu.Lock()
		ctx := new(fasthttp.RequestCtx)
		if n := len(idle); n > 0 {
			ctx, idle = idle[n-1], idle[:n-1]
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			idle = append(idle, ctx)
			mu.Unlock()
		}()
		r = r.WithDefaults()
		var req fasthttp.Request
		req.Header.SetMethod(r.Method)
		req.SetRequestURI(r.Path)
		for k, vs := range r.Header {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		ctx.Init(&req, net.TCPAddrFromAddrPort(httplimittest.AddrOf(r.Remote)), nil)
		ctx.Response.Reset() // as the server does between requests, keeping its buffers
		ctx.ResetUserValues()
		ctx.SetUserValue(requestContext{}, r.Context)
		handler(ctx)
		h := http.Header{}
		for k, v := range ctx.Response.Header.All() {
			h.Add(string(k), string(v))
		}
		return httplimittest.Resp{Status: ctx.Response.StatusCode(), Header: h, Body: string(ctx.Response.Body())}
	}
}

func TestBehaviour(t *testing.T) {
	httplimittest.Run(t, httplimittest.Adapter{
		Serve: harness,
		Blind: blind,
		Stack: stack,
		Param: func(name string) string { return ":" + name },
		New: func(cfg admit.Config) error {
			_, err := sluicefiberv3.New(cfg)
			return err
		},
	})
}

// The one-line form, as the package documentation has it: on a route, and
// with app.Use, where its rule, which has no Routes, works as well.
func TestLimitByIP(t *testing.T) {
	httplimittest.RunLimitByIP(t, func(t *testing.T, p *core.Policy) httplimittest.Server {
		app := fiber.New()
		app.Get("/", sluicefiberv3.LimitByIP(p), ok)
		return serve(app)
	})
	t.Run("use", func(t *testing.T) {
		httplimittest.RunLimitByIP(t, func(t *testing.T, p *core.Policy) httplimittest.Server {
			app := fiber.New()
			app.Use(sluicefiberv3.LimitByIP(p))
			app.Get("/", ok)
			return serve(app)
		})
	})
}

func TestLimitByIPPanicsOnNilPolicy(t *testing.T) {
	assert.PanicsWithError(t, "admit: rule 0: Policy is nil", func() { sluicefiberv3.LimitByIP(nil) })
}

// Through app.Test, the whole exchange as bytes on a connection.
func TestAppTest(t *testing.T) {
	app := newApp(t, admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.ClientIP()}},
	}, []string{"/"})
	var statuses []int
	var last *http.Response
	for range 11 {
		resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/", nil), fiber.TestConfig{Timeout: 0}) // no time limit, which a busy machine may pass
		require.NoError(t, err)
		_ = resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
		last = resp
	}
	assert.Equal(t, []int{200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 429}, statuses)
	assert.Equal(t, "1", last.Header.Get("Retry-After"))
	assert.Equal(t, "no-store", last.Header.Get("Cache-Control"))
	assert.Equal(t, "application/problem+json", last.Header.Get("Content-Type"))
	assert.Equal(t, `"per-ip";r=0;t=1`, last.Header.Get("RateLimit"))
	assert.Equal(t, `"per-ip";q=10;w=5`, last.Header.Get("RateLimit-Policy"))
}

// Config.Skip is the skip hook of every adapter, where Fiber's own
// middleware take Next.
func TestSkip(t *testing.T) {
	app := newApp(t, admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules:   []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.ClientIP()}},
		Skip:    func(r *admit.Request) bool { return r.Header("X-Internal") == "yes" },
	}, []string{"/"})
	for range 12 {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-Internal", "yes")
		resp, err := app.Test(req, fiber.TestConfig{Timeout: 0})
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		assert.Empty(t, resp.Header.Get("RateLimit"))
	}
}

// Keys reach the observer as copies, never views of fasthttp's reused
// buffers: after later requests overwrite them, the recorded keys stand.
func TestKeysAreCopies(t *testing.T) {
	env := httplimittest.NewEnv(t)
	srv := harness(t, admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{{Policy: httplimittest.PerKey, Key: admit.Header("X-Api-Key")}}}, []string{"/"})
	for _, k := range []string{"aaaa", "bbbb", "cccc"} {
		srv(httplimittest.Req{Header: http.Header{"X-Api-Key": {k}}})
	}
	assert.Equal(t, []string{"aaaa", "bbbb", "cccc"}, env.Keys())
}

func TestReservationInContext(t *testing.T) {
	app := fiber.New()
	mw, err := sluicefiberv3.New(admit.Config{
		Limiter:   httplimittest.NewEnv(t).Limiter(t, nil),
		Rules:     []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.ClientIP(), Cost: func(*admit.Request) int64 { return 5 }}},
		Estimates: true,
	})
	require.NoError(t, err)
	var reconciled error = context.Canceled
	app.Get("/", mw, func(c fiber.Ctx) error {
		if res := admit.ReservationFrom(c.Context()); res != nil {
			reconciled = res.Reconcile(c.Context(), 1)
		}
		return ok(c)
	})
	resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/", nil), fiber.TestConfig{Timeout: 0})
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.NoError(t, reconciled)
	resp, err = app.Test(httptest.NewRequest(http.MethodGet, "/", nil), fiber.TestConfig{Timeout: 0})
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, `"per-ip";r=4;t=3`, resp.Header.Get("RateLimit")) // 5 reserved, 4 refunded, 5 reserved
}

// A peer that is not an IP address (a Unix socket) is keyed "unknown", as on
// every adapter, not as the 0.0.0.0 fasthttp's RemoteIP reports for it: a
// TrustedProxies entry such as "0.0.0.0/0" must not match it either.
func TestUnixPeerKeyedUnknown(t *testing.T) {
	env := httplimittest.NewEnv(t)
	mw, err := sluicefiberv3.New(admit.Config{
		Limiter:        env.Limiter(t, nil),
		Rules:          []admit.Rule{{Policy: httplimittest.PerIP, Key: admit.ClientIP()}},
		TrustedProxies: []string{"0.0.0.0/0"},
	})
	require.NoError(t, err)
	app := fiber.New()
	app.Get("/", mw, ok)
	var req fasthttp.Request
	req.SetRequestURI("/")
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.UnixAddr{Name: "@", Net: "unix"}, nil)
	app.Handler()(&ctx)
	assert.Equal(t, http.StatusOK, ctx.Response.StatusCode())
	assert.Equal(t, []string{"unknown"}, env.Keys())
}

// A group's handlers run as app.Use ones do, by prefix: the route is
// unknown there, and known on the group's routes.
func TestGroup(t *testing.T) {
	env := httplimittest.NewEnv(t)
	cfg := admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{
		{Policy: httplimittest.Login, Key: admit.Route(), Routes: []string{"POST /api/login"}},
	}}
	mw, err := sluicefiberv3.New(cfg)
	require.NoError(t, err)
	app := fiber.New()
	api := app.Group("/api")
	api.Post("/login", mw, ok)
	blindMW, err := sluicefiberv3.New(cfg)
	require.NoError(t, err)
	app.Group("/admin", blindMW).Post("/login", ok)
	srv := serve(app)

	assert.Equal(t, http.StatusOK, srv(httplimittest.Req{Method: http.MethodPost, Path: "/api/login"}).Status)
	assert.Equal(t, http.StatusInternalServerError, srv(httplimittest.Req{Method: http.MethodPost, Path: "/admin/login"}).Status)
	assert.Equal(t, []string{"/api/login"}, env.Keys())
}

// A rule with Charge sees the status the client gets: a handler's error
// counts as the status Fiber's DefaultErrorHandler answers it with.
func TestChargeSeesTheErrorStatus(t *testing.T) {
	var seen []int
	mw, err := sluicefiberv3.New(admit.Config{
		Limiter: httplimittest.NewEnv(t).Limiter(t, nil),
		Rules: []admit.Rule{{Policy: httplimittest.LoginFailures, Key: admit.Const("k"), Charge: func(status int) bool {
			seen = append(seen, status)
			return false
		}}},
	})
	require.NoError(t, err)
	app := fiber.New()
	app.Get("/fiber-error", mw, func(fiber.Ctx) error { return fiber.NewError(fiber.StatusUnauthorized, "who?") })
	app.Get("/wrapped", mw, func(fiber.Ctx) error {
		return fmt.Errorf("login: %w", fiber.NewError(fiber.StatusForbidden))
	})
	app.Get("/plain", mw, func(fiber.Ctx) error { return errors.New("boom") })
	app.Get("/status", mw, func(c fiber.Ctx) error { return c.Status(fiber.StatusTeapot).SendString("short and stout") })
	app.Get("/ok", mw, ok)
	srv := serve(app)
	for path, want := range map[string]int{"/fiber-error": 401, "/wrapped": 403, "/plain": 500, "/status": 418, "/ok": 200} {
		seen = nil
		resp := srv(httplimittest.Req{Path: path})
		assert.Equal(t, want, resp.Status, path)
		assert.Equal(t, []int{want}, seen, path)
	}
}
