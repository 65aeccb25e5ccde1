// Command fiberv3 serves a small site behind sluice's Fiber v3 middleware.
//
// GET / is limited per client IP to the reference's worked example: a token
// bucket of 10, refilled at 2 per second. POST /login is limited per IP to 3
// per minute as well, decided together with the per-IP limit (a denied login
// takes nothing from the site-wide allowance). Limits live in memory, or in
// Redis with -redis, falling back to memory if Redis fails.
//
//	go run ./examples/fiberv3 [-addr :8080] [-redis 127.0.0.1:6379]
package main

import (
	"github.com/gofiber/fiber/v3"

	"github.com/sluice-go/sluice/adapters/fiber/sluicefiberv3"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/examples/internal/demo"
)

func main() {
	demo.Main(func(l *core.Limiter) (demo.Server, error) {
		app, err := newApp(l)
		return server{app}, err
	})
}

// newApp routes the site, each route behind its own middleware (in Fiber the
// route a middleware sees is the one it is registered on).
func newApp(limiter *core.Limiter) (*fiber.App, error) {
	site, err := sluicefiberv3.New(demo.Site(limiter))
	if err != nil {
		return nil, err
	}
	logins, err := sluicefiberv3.New(demo.Logins(limiter))
	if err != nil {
		return nil, err
	}
	app := fiber.New()
	app.Get("/", site, func(c fiber.Ctx) error { return c.SendString("hello from sluice\n") })
	app.Post("/login", logins, func(c fiber.Ctx) error { return c.SendString("welcome\n") })
	return app, nil
}

// server is a Fiber v3 app as a demo.Server: v3's Listen takes its options
// as a variadic argument.
type server struct{ *fiber.App }

func (s server) Listen(addr string) error {
	return s.App.Listen(addr, fiber.ListenConfig{DisableStartupMessage: true})
}
