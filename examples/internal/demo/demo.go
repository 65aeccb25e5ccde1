// Package demo is what the framework examples (examples/nethttp, gin, echo,
// echov5, fiber and fiberv3) share, so that each shows only its framework's
// wiring: the demo's limits, its command line, its limiter, and serving
// until interrupted.
//
// The limits: GET / per client IP to the reference's worked example, a
// token bucket of 10 refilled at 2 per second ("per-ip";q=10;w=5); POST
// /login per IP as well, and to 3 per minute ("login";q=3;w=60), decided
// together with the per-IP limit, so that a denied login takes nothing from
// the site-wide allowance.
package demo

import (
	"context"
	"errors"
	"flag"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/observe/sluiceslog"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/redis/redisstore"
)

// The demo's policies.
var (
	// PerIP limits every request per client IP.
	PerIP = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	// Login limits logins per client IP.
	Login = core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.TokenBucket, Quota: 3, Period: time.Minute, Burst: 3})
)

// Site configures the middleware of GET /: per client IP.
func Site(l *core.Limiter) httplimit.Config {
	return httplimit.Config{Limiter: l, Rules: []httplimit.Rule{
		{Policy: PerIP, Key: httplimit.ClientIP()},
	}}
}

// Logins configures the middleware of POST /login: per client IP, and the
// login limit per client IP, decided together.
func Logins(l *core.Limiter) httplimit.Config {
	return httplimit.Config{Limiter: l, Rules: []httplimit.Rule{
		{Policy: PerIP, Key: httplimit.ClientIP()},
		{Policy: Login, Key: httplimit.ClientIP()},
	}}
}

// Server is what an example serves: a *fiber.App, or a net/http handler
// made a Server by HTTP.
type Server interface {
	// Listen serves on addr until ShutdownWithContext.
	Listen(addr string) error
	// ShutdownWithContext stops the server gracefully.
	ShutdownWithContext(ctx context.Context) error
}

// Main parses the command line (-addr, default :8080; -redis, empty for
// limits in memory; -instances, default 1), builds the limiter, and serves what newServer makes of
// it until SIGINT or SIGTERM, then shuts down gracefully. It exits the
// program on an error.
func Main(newServer func(*core.Limiter) (Server, error)) {
	addr := flag.String("addr", ":8080", "address to listen on")
	redisAddr := flag.String("redis", "", "Redis address (host:port); empty keeps the limits in memory")
	instances := flag.Int("instances", 1, "with -redis: how many instances share the limits; while Redis fails, each decides locally on its share")
	flag.Parse()
	if err := run(*addr, *redisAddr, *instances, newServer); err != nil {
		log.Fatal(err)
	}
}

func run(addr, redisAddr string, instances int, newServer func(*core.Limiter) (Server, error)) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	limiter, closeStores, err := NewLimiter(redisAddr, instances)
	if err != nil {
		return err
	}
	defer closeStores()
	srv, err := newServer(limiter)
	if err != nil {
		return err
	}
	log.Printf("listening on %s", addr)
	return until(ctx, func() error { return srv.Listen(addr) }, srv.ShutdownWithContext)
}

// until runs listen until ctx is done, then shuts down gracefully, waiting
// up to 5 seconds for the requests in flight, and returns listen's error.
func until(ctx context.Context, listen func() error, shutdown func(context.Context) error) error {
	errc := make(chan error, 1)
	go func() { errc <- listen() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := shutdown(sctx); err != nil {
		return err
	}
	return <-errc
}

// Serve serves h on ln until ctx is done, then shuts down gracefully,
// waiting up to 5 seconds for the requests in flight.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	return until(ctx, func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}, srv.Shutdown)
}

// HTTP adapts newHandler, which routes the site with a framework built on
// net/http, to Main: the handler is served by an http.Server.
func HTTP(newHandler func(*core.Limiter) (http.Handler, error)) func(*core.Limiter) (Server, error) {
	return func(l *core.Limiter) (Server, error) {
		h, err := newHandler(l)
		if err != nil {
			return nil, err
		}
		return &httpServer{http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}}, nil
	}
}

type httpServer struct{ srv http.Server }

func (s *httpServer) Listen(addr string) error {
	s.srv.Addr = addr
	if err := s.srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *httpServer) ShutdownWithContext(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// NewLimiter decides in memory or, when redisAddr is not empty, in Redis,
// falling back to memory while Redis fails: on one instances-th of each
// limit, the share of one of that many instances sharing them. Store
// failures are logged to slog.Default(), a few lines every ten seconds at
// most, however many requests fail. opts configure the Redis store.
// closeStores releases the stores.
func NewLimiter(redisAddr string, instances int, opts ...redisstore.Option) (l *core.Limiter, closeStores func(), err error) {
	failures, err := sluiceslog.New(slog.Default())
	if err != nil {
		return nil, nil, err
	}
	return newLimiter(redisAddr, instances, failures, opts...)
}

// newLimiter is NewLimiter reporting to observe when on Redis.
func newLimiter(redisAddr string, instances int, observe core.Observer, opts ...redisstore.Option) (l *core.Limiter, closeStores func(), err error) {
	mem, err := memory.New()
	if err != nil {
		return nil, nil, err
	}
	if redisAddr == "" {
		l, err := core.NewLimiter(mem)
		return l, func() { _ = mem.Close() }, err
	}
	client := goredis.NewClient(&goredis.Options{Addr: redisAddr})
	store, err := redisstore.New(client, opts...)
	if err != nil {
		_, _ = client.Close(), mem.Close()
		return nil, nil, err
	}
	closeAll := func() { _, _, _ = store.Close(), client.Close(), mem.Close() }
	l, err = core.NewLimiter(store, core.WithFallback(mem, instances), core.WithObserver(observe))
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return l, closeAll, nil
}
