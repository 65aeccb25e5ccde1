// Command nethttp serves a small site behind sluice's net/http middleware.
//
// GET / is limited per client IP to the reference's worked example: a token
// bucket of 10, refilled at 2 per second. POST /login is limited per IP to 3
// per minute as well, decided together with the per-IP limit (a denied login
// takes nothing from the site-wide allowance). Limits live in memory, or in
// Redis with -redis, falling back to memory if Redis fails.
//
//	go run ./examples/nethttp [-addr :8080] [-redis 127.0.0.1:6379]
package main

import (
	"io"
	"net/http"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/examples/internal/demo"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/redis/redisstore"
)

func main() { demo.Main(newLimiter, demo.HTTP(newHandler)) }

// The site's limits. GET / to the reference's worked example, a token bucket
// of 10 refilled at 2 per second ("per-ip";q=10;w=5); POST /login to that and,
// decided together with it, 3 per minute ("login";q=3;w=60), so that a
// denied login takes nothing from the site-wide allowance. Both per client IP.
var (
	perIP = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	login = core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.TokenBucket, Quota: 3, Period: time.Minute, Burst: 3})
)

// newLimiter keeps the limits in memory or, given a Redis address, in Redis
// (shared by every instance), deciding in memory while Redis fails: on one
// instances-th of each limit, so that the fleet admits about one limit in an
// outage, not one per instance.
func newLimiter(redisAddr string, instances int, observe core.Observer, opts ...redisstore.Option) (*core.Limiter, func(), error) {
	mem, err := memory.New()
	if err != nil {
		return nil, nil, err
	}
	if redisAddr == "" {
		l, err := core.NewLimiter(mem, core.WithObserver(observe))
		return l, func() { _ = mem.Close() }, err
	}
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr})
	store, err := redisstore.New(client, opts...)
	if err != nil {
		_, _ = client.Close(), mem.Close()
		return nil, nil, err
	}
	closeAll := func() { _, _, _ = store.Close(), client.Close(), mem.Close() }
	l, err := core.NewLimiter(store,
		core.WithFallback(mem, instances), core.WithObserver(observe))
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return l, closeAll, nil
}

// newHandler routes the site, each http.ServeMux pattern behind its own
// middleware (the pattern is known only once the mux has matched it).
func newHandler(limiter *core.Limiter) (http.Handler, error) {
	site, err := sluicehttp.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{
		{Policy: perIP, Key: admit.ClientIP()},
	}})
	if err != nil {
		return nil, err
	}
	logins, err := sluicehttp.New(admit.Config{Limiter: limiter, Rules: []admit.Rule{
		{Policy: perIP, Key: admit.ClientIP()},
		{Policy: login, Key: admit.ClientIP()},
	}})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", site(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello from sluice\n")
	})))
	mux.Handle("POST /login", logins(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "welcome\n")
	})))
	return mux, nil
}
