// Package sluicehttp is sluice's net/http middleware, for http.ServeMux and
// for any router that takes func(http.Handler) http.Handler middleware (chi
// included). All behaviour (keys, headers, denials) is in package httplimit;
// this package only hands it net/http's request and response.
//
// The common case, each client IP limited on its own, takes one line:
//
//	http.Handle("/", sluicehttp.LimitByIP(core.PerSecond(10))(h))
//
// Anything else takes a admit.Config (several rules, routes, keys,
// Redis, trusted proxies, ...):
//
//	mw, err := sluicehttp.New(admit.Config{Limiter: limiter, Rules: rules})
//
// # Where to install it
//
// The route a rule's Routes and the Route key see is the http.ServeMux
// pattern the request matches ("GET /items/{id}"; Routes entries leave the
// host out), or the pattern another router sets in Request.Pattern as
// ServeMux does (chi's "/items/{id}"). Install the middleware where it is
// known:
//
//   - around the *http.ServeMux itself, mw(mux): the middleware asks the mux
//     which pattern the request will match (ServeMux.Handler), only when a
//     rule or key needs it. A request that matches none (the mux answers 404
//     or 405) has no route: rules with Routes do not apply to it. Mounted in
//     another mux, keep the middleware next to the mux whose patterns the
//     rules name: outer.Handle("/api/", http.StripPrefix("/api", mw(inner)))
//     sees inner's patterns ("POST /login").
//   - around the handler of a pattern that matches a single path,
//     mux.Handle("POST /login", mw(h)) or mux.Handle("GET /items/{id}",
//     mw(h)), or of a chi route, r.With(mw).Post("/login", h): the router
//     sets Request.Pattern before calling it, and that pattern is the route.
//   - in chi's r.Use, which runs before chi routes the request, with the
//     Chi option, one line: sluicechi.New(cfg, r); the
//     middleware asks the router which pattern the request will match.
//   - around another router that can say which route a request will match,
//     with the FindRoute option.
//
// Anywhere else the route is unknown: around another router, around a
// ServeMux wrapped in other middleware (http.StripPrefix included), and
// around the handler of a pattern that matches a whole subtree ("/api/",
// "/files/{path...}", the catch-all "/"; with chi, "/api/*", the pattern of
// a Mount or Route group when its sub-router's Use runs), since that handler
// may route the request further: in outer.Handle("/api/",
// mw(http.StripPrefix("/api", inner))) the outer pattern "/api/" is not the
// route of "POST /api/login". chi's own patterns "/" (its root route) and
// "/files/*" (a wildcard route) read the same way, so r.With(mw) on those
// two needs FindRoute to see them. There, a request that a rule with Routes
// might apply to, or a Route key asks about, fails with
// admit.ErrRouteUnknown through Config.OnError (500 by default), rather
// than silently never matching, and the first such request is logged
// (admit.Config.Logger) with where to install the middleware instead. Rules without Routes, LimitByIP's among
// them, work anywhere.
//
// A rule with Charge, and a concurrency limit (admit.Config.Concurrency),
// see the status the handler wrote, 200 if it wrote none; the handler then
// writes through a wrapper of the ResponseWriter, which passes Flush,
// Hijack and ReadFrom on and unwraps for http.ResponseController. The
// slot is given back when the handler returns, or panics.
// Under Charge, the rate-limit fields are set again for that status just
// before the header is written: a unit given back reads as never taken.
//
// Request methods are matched exactly, as RFC 9110 has them, case and all:
// a "POST /login" entry does not cover "post", "PUT" or "XPOST" requests,
// which a pattern without a method ("/login") hands to the same handler.
// Limit such a route with a "/login" entry (see httplimit's Routes).
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
