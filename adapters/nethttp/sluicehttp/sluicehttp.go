// Package sluicehttp is sluice's net/http middleware, for http.ServeMux and
// any router that takes func(http.Handler) http.Handler (chi's is
// sluicechi). It hands the engine (package admit) net/http's request and
// response.
//
//	http.Handle("/", sluicehttp.LimitByIP(core.PerSecond(10))(h))
//	mw, err := sluicehttp.New(admit.Config{Limiter: limiter, Rules: rules})
//
// Rules with Routes see the ServeMux pattern the request matches ("GET
// /items/{id}"): install the middleware around the mux itself, mw(mux), or
// around the handler of a one-path pattern; in front of another router, tell
// it where a request will go with FindRoute. Where, and why, is in
// docs/adapters.md.
package sluicehttp

import (
	"net/http"
	"strings"
	"sync"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
)

// LimitByIP returns middleware that limits each client IP address by p, on
// a memory store of its own, with the default header fields and denials:
// New(admit.PerClientIP(p)). See admit.PerClientIP for what it
// fixes and how to start from it instead (behind a proxy, say). It panics if
// p is nil, the one Config of PerClientIP's that New refuses: a mistake in
// the program, which shows when it starts.
func LimitByIP(p *core.Policy) func(http.Handler) http.Handler {
	mw, err := New(admit.PerClientIP(p))
	if err != nil {
		panic(err)
	}
	return mw
}

// New returns middleware that limits requests as cfg says.
func New(cfg admit.Config, opts ...Option) (func(http.Handler) http.Handler, error) {
	m, err := httplimit.New(cfg)
	if err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return func(next http.Handler) http.Handler {
		var recorders sync.Pool // *httplimit.StatusRecorder, see serve
		var router func(*http.Request) string
		switch {
		case o.find != nil:
			router = o.find
		case isMux(next):
			// Even inside another mux's pattern: the route is the one mux
			// will match, which is Request.Pattern only after it has.
			router = (*muxRouter)(next.(*http.ServeMux)).findRoute
		}
		if router != nil {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r, v := m.DecideHTTPUnrouted(w, r, router, nil); v.Proceed {
					serve(next, w, r, v, &recorders)
				}
			})
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			route := r.Pattern
			if route == "" || subtree(route) {
				route = admit.RouteUnknown
			}
			if r, v := m.DecideHTTP(w, r, route, nil); v.Proceed {
				serve(next, w, r, v, &recorders)
			}
		})
	}, nil
}

// serve runs next, and settles the verdict, if it has a Settlement (a
// charge by status, a concurrency slot), with the status next answered,
// recorded by a writer from recorders: a handler may not use its
// ResponseWriter once it has returned.
func serve(next http.Handler, w http.ResponseWriter, r *http.Request, v admit.Verdict, recorders *sync.Pool) {
	if v.Settlement == nil {
		next.ServeHTTP(w, r)
		return
	}
	rec, _ := recorders.Get().(*httplimit.StatusRecorder)
	if rec == nil {
		rec = new(httplimit.StatusRecorder)
	}
	*rec = httplimit.StatusRecorder{ResponseWriter: w, Settlement: v.Settlement}
	status := 0 // stays 0 if next panics
	defer func() {
		v.Settlement.Settle(status)
		if status != 0 { // after a panic, the writer may yet be in use
			*rec = httplimit.StatusRecorder{}
			recorders.Put(rec)
		}
	}()
	next.ServeHTTP(rec, r)
	status = rec.Status()
	httplimit.SetFields(v.Settlement, status, w.Header()) // if next wrote nothing: net/http writes the header after it
}

// Option configures the middleware New returns.
type Option func(*options)

type options struct {
	find func(*http.Request) string // finds the route before the router has, if set
}

// FindRoute has the middleware ask find for the route of each request, the
// template of the route it will match ("" if none), for a router that has
// not routed the request where the middleware runs but can say where it
// will go. find runs only for requests
// a rule with Routes or a Route key asks about, once each, and takes
// precedence over Request.Pattern. With chi, around the whole router
// (r.Use):
//
//	r := chi.NewRouter()
//	mw, err := sluicehttp.New(cfg, sluicehttp.FindRoute(func(req *http.Request) string {
//		path := req.URL.RawPath // what chi routes by
//		if path == "" {
//			path = req.URL.Path
//		}
//		return r.Find(chi.NewRouteContext(), req.Method, path)
//	}))
//	r.Use(mw)
//
// find must describe the router the middleware wraps. Inside a chi
// sub-router (Route, Mount), install per-route limits on its routes with
// r.With(mw) instead: chi sets Request.Pattern to the full pattern there
// ("/api/login").
func FindRoute(find func(r *http.Request) string) Option {
	return func(o *options) { o.find = find }
}

func isMux(h http.Handler) bool {
	_, ok := h.(*http.ServeMux)
	return ok
}

// subtree reports whether a pattern matches a whole subtree of paths
// (ServeMux's "/api/" and "/files/{path...}", chi's "/api/*", which a Mount
// or a Route group registers) rather than one path ("/login",
// "/items/{id}", "/{$}"): its handler, which may route the request further,
// is not known to be the route's.
func subtree(pattern string) bool {
	return strings.HasSuffix(pattern, "/") || strings.HasSuffix(pattern, "...}") || strings.HasSuffix(pattern, "/*")
}

// muxRouter is a ServeMux that finds routes (its findRoute): a pointer
// conversion, so handing it over allocates nothing.
type muxRouter http.ServeMux

// findRoute returns the pattern the mux will match for r, "" if none.
func (mux *muxRouter) findRoute(r *http.Request) string {
	_, pattern := (*http.ServeMux)(mux).Handler(r)
	return pattern
}
