package sluicefiber_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/fiber/sluicefiber"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// The common case in one line: each client IP may send 3 requests a minute.
func ExampleLimitByIP() {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/", sluicefiber.LimitByIP(core.PerMinute(3)), func(c *fiber.Ctx) error { return c.SendString("hello") })

	for range 4 {
		resp, err := app.Test(httptest.NewRequest("GET", "/", nil), -1) // -1: no time limit
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

// The middleware registered on a route, with Config.Skip (where Fiber's own
// middleware take Next) to let internal callers through.
func ExampleNew() {
	store, _ := memory.New()
	limiter, _ := core.NewLimiter(store)
	perIP := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})

	mw, err := sluicefiber.New(admit.Config{
		Limiter: limiter,
		Rules:   []admit.Rule{{Policy: perIP, Key: admit.ClientIP()}},
		Skip:    func(r *admit.Request) bool { return r.Header("X-Internal") == "yes" },
	})
	if err != nil {
		panic(err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/", mw, func(c *fiber.Ctx) error { return c.SendString("hello") })

	resp, err := app.Test(httptest.NewRequest("GET", "/", nil), -1)
	if err != nil {
		panic(err)
	}
	_ = resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("RateLimit-Policy"), resp.Header.Get("RateLimit"))
	// Output:
	// 200 "per-ip";q=10;w=5 "per-ip";r=9;t=1
}

// A per-user limit on the user an authentication handler stored with
// c.Locals: User keys find it in the context they are given.
func ExampleNew_user() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := core.NewLimiter(store)
	perUser := core.MustPolicy(core.PolicyConfig{Name: "per-user", Algorithm: core.TokenBucket, Quota: 5, Period: time.Minute, Burst: 5})

	mw, err := sluicefiber.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{{
		Policy: perUser,
		Key: admit.User(func(ctx context.Context) (string, bool) {
			user, ok := ctx.Value("user").(string)
			return user, ok
		}),
	}}})
	if err != nil {
		panic(err)
	}
	auth := func(c *fiber.Ctx) error {
		if token := c.Get("Authorization"); token != "" {
			c.Locals("user", token[len("Bearer "):]) // stands for real authentication
		}
		return c.Next()
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/", auth, mw, func(c *fiber.Ctx) error { return c.SendString("hello") })

	for _, token := range []string{"Bearer ann", "Bearer ann", "Bearer bob", ""} {
		req := httptest.NewRequest("GET", "/", nil)
		if token != "" {
			req.Header.Set("Authorization", token)
		}
		resp, err := app.Test(req, -1)
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
