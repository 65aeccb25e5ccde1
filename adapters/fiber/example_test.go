package sluicefiber_test

import (
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/gofiber/fiber/v2"

	sluicefiber "github.com/sluice-go/sluice/adapters/fiber"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// The middleware registered on a route, with Fiber's Next convention to let
// internal callers through.
func ExampleNew() {
	store, _ := memory.New()
	defer store.Close()
	limiter, _ := core.NewLimiter(store)
	perIP := core.MustPolicy(core.Config{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})

	mw, err := sluicefiber.New(sluicefiber.Config{
		Config: httplimit.Config{Limiter: limiter, Rules: []httplimit.Rule{{Policy: perIP, Key: httplimit.ClientIP()}}},
		Next:   func(c *fiber.Ctx) bool { return c.Get("X-Internal") == "yes" },
	})
	if err != nil {
		panic(err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/", mw, func(c *fiber.Ctx) error { return c.SendString("hello") })

	resp, err := app.Test(httptest.NewRequest("GET", "/", nil))
	if err != nil {
		panic(err)
	}
	_ = resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("RateLimit-Policy"), resp.Header.Get("RateLimit"))
	// Output:
	// 200 "per-ip";q=10;w=5 "per-ip";r=9;t=1
}
