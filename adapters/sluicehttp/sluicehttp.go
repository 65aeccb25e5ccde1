// Package sluicehttp is sluice's net/http middleware. All behaviour (keys,
// headers, denials) is in package httplimit; this package only hands it
// net/http's request and response.
//
// The route a rule's Routes and the Route key see is the http.ServeMux
// pattern the request matches ("GET /items/{id}"; Routes entries leave the
// host out). Install the middleware where it is known:
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
//     mw(h)): the mux sets Request.Pattern before calling it, and that
//     pattern is the route.
//
// Anywhere else the route is unknown: around another router, around a
// ServeMux wrapped in other middleware (http.StripPrefix included), and
// around the handler of a pattern that matches a whole subtree ("/api/",
// "/files/{path...}", the catch-all "/"), since that handler may route the
// request further: in outer.Handle("/api/", mw(http.StripPrefix("/api",
// inner))) the outer pattern "/api/" is not the route of "POST /api/login".
// There, a request that a rule with Routes might apply to, or a Route key
// asks about, fails with httplimit.ErrRouteUnknown through Config.OnError
// (500 by default), rather than silently never matching. Rules without
// Routes work anywhere.
//
// A rule with Charge sees the status the handler wrote, 200 if it wrote
// none; the handler then writes through a wrapper of the ResponseWriter,
// which passes Flush, Hijack and ReadFrom on and unwraps for
// http.ResponseController.
//
// Request methods are matched exactly, as RFC 9110 has them, case and all:
// a "POST /login" entry does not cover "post", "PUT" or "XPOST" requests,
// which a pattern without a method ("/login") hands to the same handler.
// Limit such a route with a "/login" entry (see httplimit's Routes).
package sluicehttp

import (
	"net/http"
	"strings"

	"github.com/sluice-go/sluice/adapters/adapterkit"
	"github.com/sluice-go/sluice/adapters/httplimit"
)

// New returns middleware that limits requests as cfg says.
func New(cfg httplimit.Config) (func(http.Handler) http.Handler, error) {
	m, err := httplimit.New(cfg)
	if err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler {
		if mux, ok := next.(*http.ServeMux); ok {
			// Even inside another mux's pattern: the route is the one mux
			// will match, which is Request.Pattern only after it has.
			router := (*muxRouter)(mux)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r, v := m.DecideHTTPUnrouted(w, r, router, nil); v.Proceed {
					serve(next, w, r, v)
				}
			})
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			route := r.Pattern
			if route == "" || subtree(route) {
				route = adapterkit.RouteUnknown
			}
			if r, v := m.DecideHTTP(w, r, route, nil); v.Proceed {
				serve(next, w, r, v)
			}
		})
	}, nil
}

// serve runs next, and settles the verdict's charge, if it has one, with
// the status next answered (see httplimit.Rule.Charge).
func serve(next http.Handler, w http.ResponseWriter, r *http.Request, v adapterkit.Verdict) {
	if v.Settlement == nil {
		next.ServeHTTP(w, r)
		return
	}
	rec := &adapterkit.StatusRecorder{ResponseWriter: w}
	status := 0 // stays 0 if next panics
	defer func() { v.Settlement.Settle(status) }()
	next.ServeHTTP(rec, r)
	status = rec.Status()
}

// subtree reports whether a ServeMux pattern matches a whole subtree of
// paths ("/api/", "/files/{path...}") rather than one path ("/login",
// "/items/{id}", "/{$}"): its handler, which may route the request further,
// is not known to be the route's.
func subtree(pattern string) bool {
	return strings.HasSuffix(pattern, "/") || strings.HasSuffix(pattern, "...}")
}

// muxRouter is a ServeMux seen as an adapterkit.RouteFinder: a pointer
// conversion, so handing it over allocates nothing.
type muxRouter http.ServeMux

// FindRoute returns the pattern the mux will match for r, "" if none.
func (mux *muxRouter) FindRoute(r *http.Request) string {
	_, pattern := (*http.ServeMux)(mux).Handler(r)
	return pattern
}
