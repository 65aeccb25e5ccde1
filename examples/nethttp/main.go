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

	"github.com/sluice-go/sluice/adapters/nethttp/sluicehttp"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/examples/internal/demo"
)

func main() { demo.Main(demo.HTTP(newHandler)) }

// newHandler routes the site, each http.ServeMux pattern behind its own
// middleware (the pattern is known only once the mux has matched it).
func newHandler(limiter *core.Limiter) (http.Handler, error) {
	site, err := sluicehttp.New(demo.Site(limiter))
	if err != nil {
		return nil, err
	}
	logins, err := sluicehttp.New(demo.Logins(limiter))
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
