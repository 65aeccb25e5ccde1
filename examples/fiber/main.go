// Command fiber serves a small site behind sluice's Fiber middleware.
//
// GET / is limited per client IP to the reference's worked example: a token
// bucket of 10, refilled at 2 per second. POST /login is limited per IP to 3
// per minute as well, decided together with the per-IP limit (a denied login
// takes nothing from the site-wide allowance). Limits live in memory, or in
// Redis with -redis, falling back to memory if Redis fails.
//
//	go run ./examples/fiber [-addr :8080] [-redis 127.0.0.1:6379]
package main

import (
	"github.com/gofiber/fiber/v2"

	"github.com/sluice-go/sluice/adapters/fiber/sluicefiber"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/examples/internal/demo"
)

func main() {
	demo.Main(func(l *core.Limiter) (demo.Server, error) { return newApp(l) })
}

// newApp routes the site, each route behind its own middleware (in Fiber the
// route a middleware sees is the one it is registered on).
func newApp(limiter *core.Limiter) (*fiber.App, error) {
	site, err := sluicefiber.New(demo.Site(limiter))
	if err != nil {
		return nil, err
	}
	logins, err := sluicefiber.New(demo.Logins(limiter))
	if err != nil {
		return nil, err
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/", site, func(c *fiber.Ctx) error { return c.SendString("hello from sluice\n") })
	app.Post("/login", logins, func(c *fiber.Ctx) error { return c.SendString("welcome\n") })
	return app, nil
}
