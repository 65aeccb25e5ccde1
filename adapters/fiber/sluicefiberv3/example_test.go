package sluicefiberv3_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/fiber/sluicefiberv3"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// The common case in one line: each client IP may send 3 requests a minute.
func ExampleLimitByIP() {
	app := fiber.New()
	app.Get("/", sluicefiberv3.LimitByIP(core.PerMinute(3)), func(c fiber.Ctx) error { return c.SendString("hello") })

	for range 4 {
		resp, err := app.Test(httptest.NewRequest("GET", "/", nil), fiber.TestConfig{Timeout: 0}) // no time limit
		if err != nil {
			panic(err)
		}
		_ = resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("RateLimit-Policy"))
	}
	// Output:
	// 200 "3-per-minute";q=3;w=60
	// 200 "3-per-minute";q=3;w=60
	// 200 "3-per-minute";q=3;w=60
	// 429 "3-per-minute";q=3;w=60
}

// The middleware registered on each route, the per-IP limit alone on GET /
// and with a tighter one on POST /login, decided together; Config.Skip
// (where Fiber's own middleware take Next) lets internal callers through.
func ExampleNew() {
	store, _ := memory.New()
	limiter, _ := core.NewLimiter(store)
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	login := core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.TokenBucket, Quota: 3, Period: time.Minute, Burst: 3})
	skip := func(r *admit.Request) bool { return r.Header("X-Internal") == "yes" }

	site, err := sluicefiberv3.New(admit.Config{Limiter: limiter, Skip: skip, Rules: []admit.Rule{
		{Policy: perIP, Key: admit.ClientIP()},
	}})
	if err != nil {
		panic(err)
	}
	logins, err := sluicefiberv3.New(admit.Config{Limiter: limiter, Skip: skip, Rules: []admit.Rule{
		{Policy: perIP, Key: admit.ClientIP()},
		{Policy: login, Key: admit.ClientIP()},
	}})
	if err != nil {
		panic(err)
	}
	app := fiber.New()
	app.Get("/", site, func(c fiber.Ctx) error { return c.SendString("hello") })
	app.Post("/login", logins, func(c fiber.Ctx) error { return c.SendString("welcome") })

	internal := httptest.NewRequest("GET", "/", nil)
	internal.Header.Set("X-Internal", "yes")
	for _, req := range []*http.Request{httptest.NewRequest("GET", "/", nil), httptest.NewRequest("POST", "/login", nil), internal} {
		resp, err := app.Test(req, fiber.TestConfig{Timeout: 0})
		if err != nil {
			panic(err)
		}
		_ = resp.Body.Close()
		fmt.Printf("%s %s: %d %q\n", req.Method, req.URL.Path, resp.StatusCode, resp.Header.Get("RateLimit-Policy"))
	}
	// Output:
	// GET /: 200 "\"per-ip\";q=10;w=5"
	// POST /login: 200 "\"per-ip\";q=10;w=5, \"login\";q=3;w=60"
	// GET /: 200 ""
}

// A per-user limit on the user an authentication handler stored with
// c.Locals: User keys find it in the context they are given.
func ExampleNew_user() {
	store, _ := memory.New()
	limiter, _ := core.NewLimiter(store)
	perUser := core.MustPolicy(core.PolicyConfig{Name: "per-user", Algorithm: core.TokenBucket, Quota: 5, Period: time.Minute, Burst: 5})

	mw, err := sluicefiberv3.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{{
		Policy: perUser,
		Key: admit.User(func(ctx context.Context) (string, bool) {
			user, ok := ctx.Value("user").(string)
			return user, ok
		}),
	}}})
	if err != nil {
		panic(err)
	}
	auth := func(c fiber.Ctx) error {
		if token := c.Get("Authorization"); token != "" {
			c.Locals("user", token[len("Bearer "):]) // stands for real authentication
		}
		return c.Next()
	}
	app := fiber.New()
	app.Get("/", auth, mw, func(c fiber.Ctx) error { return c.SendString("hello") })

	for _, token := range []string{"Bearer ann", "Bearer ann", "Bearer bob", ""} {
		req := httptest.NewRequest("GET", "/", nil)
		if token != "" {
			req.Header.Set("Authorization", token)
		}
		resp, err := app.Test(req, fiber.TestConfig{Timeout: 0})
		if err != nil {
			panic(err)
		}
		_ = resp.Body.Close()
		fmt.Printf("%d %q\n", resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	// Output:
	// 200 "\"per-user\";r=4;t=12"
	// 200 "\"per-user\";r=3;t=24"
	// 200 "\"per-user\";r=4;t=12"
	// 200 ""
}
