package sluiceechov5_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/echo/sluiceechov5"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// The common case in one line: each client IP may send 3 requests a minute.
func ExampleLimitByIP() {
	e := echo.New()
	e.Use(sluiceechov5.LimitByIP(core.PerMinute(3)))
	e.GET("/", func(c *echo.Context) error { return c.String(http.StatusOK, "hello") })

	for range 4 {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		fmt.Println(rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// 200 "3-per-minute";q=3;w=60
	// 200 "3-per-minute";q=3;w=60
	// 200 "3-per-minute";q=3;w=60
	// 429 "3-per-minute";q=3;w=60
}

// One middleware for the whole server: per IP everywhere, a tighter limit on
// the /login route decided together with it, and the health check skipped
// with Config.Skip, which sees the route Echo matched.
func ExampleNew() {
	store, _ := memory.New()
	limiter, _ := core.NewLimiter(store)
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.TokenBucket, Quota: 3, Period: time.Minute, Burst: 3})

	mw, err := sluiceechov5.New(admit.Config{
		Limiter: limiter,
		Rules: []admit.Rule{
			{Policy: perIP, Key: admit.ClientIP()},
			{Policy: login, Key: admit.ClientIP(), Routes: []string{"POST /login"}},
		},
		Skip: func(r *admit.Request) bool { return r.Route() == "/healthz" },
	})
	if err != nil {
		panic(err)
	}
	e := echo.New()
	e.Use(mw)
	e.GET("/", func(c *echo.Context) error { return c.String(http.StatusOK, "hello") })
	e.POST("/login", func(c *echo.Context) error { return c.String(http.StatusOK, "welcome") })
	e.GET("/healthz", func(c *echo.Context) error { return c.NoContent(http.StatusNoContent) })

	for _, req := range []*http.Request{
		httptest.NewRequest("GET", "/", nil),
		httptest.NewRequest("POST", "/login", nil),
		httptest.NewRequest("GET", "/healthz", nil),
	} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		fmt.Printf("%s %s: %d %q\n", req.Method, req.URL.Path, rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// GET /: 200 "\"per-ip\";q=10;w=5"
	// POST /login: 200 "\"per-ip\";q=10;w=5, \"login\";q=3;w=60"
	// GET /healthz: 204 ""
}

// A per-user limit on the user an authentication middleware stored with
// c.Set: User keys find it in the context they are given.
func ExampleNew_user() {
	store, _ := memory.New()
	limiter, _ := core.NewLimiter(store)
	perUser := core.MustPolicy(core.PolicyConfig{Name: "per-user", Algorithm: core.TokenBucket, Quota: 5, Period: time.Minute, Burst: 5})

	mw, err := sluiceechov5.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{{
		Policy: perUser,
		Key: admit.User(func(ctx context.Context) (string, bool) {
			user, ok := ctx.Value("user").(string)
			return user, ok
		}),
	}}})
	if err != nil {
		panic(err)
	}
	auth := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			if token := c.Request().Header.Get("Authorization"); token != "" {
				c.Set("user", token[len("Bearer "):]) // stands for real authentication
			}
			return next(c)
		}
	}
	e := echo.New()
	e.Use(auth, mw)
	e.GET("/", func(c *echo.Context) error { return c.String(http.StatusOK, "hello") })

	for _, token := range []string{"Bearer ann", "Bearer ann", "Bearer bob", ""} {
		req := httptest.NewRequest("GET", "/", nil)
		if token != "" {
			req.Header.Set("Authorization", token)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		fmt.Printf("%d %q\n", rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// 200 "\"per-user\";r=4;t=12"
	// 200 "\"per-user\";r=3;t=24"
	// 200 "\"per-user\";r=4;t=12"
	// 200 ""
}

// A per-IP limit installed with e.Pre, where it counts every request, 404s
// and requests a later Pre middleware rewrites included; and a login limit,
// which needs the route, installed with e.Use, where Echo has routed the
// request: "POST /login/" counts as "POST /login".
func ExampleNew_pre() {
	store, _ := memory.New()
	limiter, _ := core.NewLimiter(store)
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 1, Period: time.Minute, Burst: 5})
	login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.TokenBucket, Quota: 1, Period: time.Minute, Burst: 2})

	early, err := sluiceechov5.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{
		{Policy: perIP, Key: admit.ClientIP()},
	}})
	if err != nil {
		panic(err)
	}
	routed, err := sluiceechov5.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{
		{Policy: login, Key: admit.ClientIP(), Routes: []string{"POST /login"}},
	}})
	if err != nil {
		panic(err)
	}
	e := echo.New()
	e.Pre(early, middleware.RemoveTrailingSlash())
	e.Use(routed)
	e.POST("/login", func(c *echo.Context) error { return c.String(http.StatusOK, "welcome") })

	for _, path := range []string{"/login", "/login/", "/login/", "/nope", "/nope", "/nope"} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest("POST", path, nil))
		fmt.Println(path, rec.Code)
	}
	// Output:
	// /login 200
	// /login/ 200
	// /login/ 429
	// /nope 404
	// /nope 404
	// /nope 429
}
