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
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	goredis "github.com/redis/go-redis/v9"

	sluicefiber "github.com/sluice-go/sluice/adapters/fiber"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/redis"
)

// The demo's limits.
var (
	perIP = core.MustPolicy(core.Config{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	login = core.MustPolicy(core.Config{Name: "login", Algorithm: core.TokenBucket, Quota: 3, Period: time.Minute, Burst: 3})
)

func main() {
	addr := flag.String("addr", ":8080", "address to listen on")
	redisAddr := flag.String("redis", "", "Redis address (host:port); empty keeps the limits in memory")
	flag.Parse()
	if err := run(*addr, *redisAddr); err != nil {
		log.Fatal(err)
	}
}

// run serves until SIGINT or SIGTERM, then shuts down gracefully.
func run(addr, redisAddr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	limiter, closeStores, err := newLimiter(redisAddr)
	if err != nil {
		return err
	}
	defer closeStores()
	app, err := newApp(limiter)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- app.Listen(addr) }()
	log.Printf("listening on %s", addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if err := app.ShutdownWithTimeout(5 * time.Second); err != nil {
		return err
	}
	return <-errc
}

// newLimiter decides in memory, or in Redis with a memory fallback.
func newLimiter(redisAddr string, opts ...redis.Option) (*core.Limiter, func(), error) {
	mem, err := memory.New()
	if err != nil {
		return nil, nil, err
	}
	if redisAddr == "" {
		l, err := core.NewLimiter(mem)
		return l, func() { _ = mem.Close() }, err
	}
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr})
	closeAll := func() { _ = client.Close(); _ = mem.Close() }
	store, err := redis.New(client, opts...)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	l, err := core.NewLimiter(store, core.WithFallback(mem), core.WithObserver(logFailures))
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return l, closeAll, nil
}

func logFailures(_ context.Context, e core.Event) {
	if e.Outcome == core.StoreFailed {
		log.Printf("limiter store failed, decided locally: %v", e.Err)
	}
}

// newApp routes the site, each route behind its own rule set (in Fiber the
// route a middleware sees is the one it is registered on).
func newApp(limiter *core.Limiter) (*fiber.App, error) {
	byIP := httplimit.Rule{Policy: perIP, Key: httplimit.ClientIP()}
	site, err := sluicefiber.New(sluicefiber.Config{Config: httplimit.Config{Limiter: limiter, Rules: []httplimit.Rule{byIP}}})
	if err != nil {
		return nil, err
	}
	logins, err := sluicefiber.New(sluicefiber.Config{Config: httplimit.Config{
		Limiter: limiter,
		Rules:   []httplimit.Rule{byIP, {Policy: login, Key: httplimit.ClientIP()}},
	}})
	if err != nil {
		return nil, err
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/", site, func(c *fiber.Ctx) error { return c.SendString("hello from sluice\n") })
	app.Post("/login", logins, func(c *fiber.Ctx) error { return c.SendString("welcome\n") })
	return app, nil
}
