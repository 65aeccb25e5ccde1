// Package demo is the serving plumbing the framework examples
// (examples/nethttp, gin, echo, echov5, fiber and fiberv3) share: their
// command line, logging store failures, and serving until interrupted. What
// sluice is configured with (the policies, the rules, the store and its
// fallback) is written out in each example's main.go.
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

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/observe/sluiceslog"
	"github.com/sluice-go/sluice/store/redis/redisstore"
)

// NewLimiter is how an example builds its limiter: in memory when redisAddr
// is empty, else in Redis with a local fallback on one instances-th of each
// limit, reporting to observe. opts configure the Redis store (tests pass a
// key prefix and a clock). closeStores releases the stores.
type NewLimiter func(redisAddr string, instances int, observe core.Observer, opts ...redisstore.Option) (l *core.Limiter, closeStores func(), err error)

// Server is what an example serves: a *fiber.App, or a net/http handler
// made a Server by HTTP.
type Server interface {
	// Listen serves on addr until ShutdownWithContext.
	Listen(addr string) error
	// ShutdownWithContext stops the server gracefully.
	ShutdownWithContext(ctx context.Context) error
}

// Main parses the command line (-addr, default :8080; -redis, empty for
// limits in memory; -instances, default 1), builds the limiter with
// newLimiter, logging its store failures to slog.Default() at a bounded
// rate (sluiceslog), and serves what newServer makes of it until SIGINT or
// SIGTERM, then shuts down gracefully. It exits the program on an error.
func Main(newLimiter NewLimiter, newServer func(*core.Limiter) (Server, error)) {
	addr := flag.String("addr", ":8080", "address to listen on")
	redisAddr := flag.String("redis", "", "Redis address (host:port); empty keeps the limits in memory")
	instances := flag.Int("instances", 1, "with -redis: how many instances share the limits; while Redis fails, each decides locally on its share")
	flag.Parse()
	if err := run(*addr, *redisAddr, *instances, newLimiter, newServer); err != nil {
		log.Fatal(err)
	}
}

func run(addr, redisAddr string, instances int, newLimiter NewLimiter, newServer func(*core.Limiter) (Server, error)) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logs, err := sluiceslog.New(slog.Default())
	if err != nil {
		return err
	}
	limiter, closeStores, err := newLimiter(redisAddr, instances, logs)
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
