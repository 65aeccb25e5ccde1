// Package nethttp is sluice's net/http middleware. All behaviour (keys,
// headers, denials) is in package httplimit; this package only hands it
// net/http's request and response.
//
// The route a rule's Routes and the Route key see is the http.ServeMux
// pattern the request matches (Request.Pattern, e.g. "GET /items/{id}";
// Routes entries leave the host out). Install the middleware where it can be
// known:
//
//   - around a pattern's handler, mux.Handle("POST /login", mw(h)): the mux
//     sets Request.Pattern before calling it;
//   - around the *http.ServeMux itself, mw(mux): the middleware asks the mux
//     which pattern the request will match (ServeMux.Handler), only when a
//     rule or key needs it. A request that matches none (the mux answers 404
//     or 405) has no route: rules with Routes do not apply to it.
//
// Around any other handler (another router, a ServeMux wrapped in other
// middleware or in http.StripPrefix), the route is unknown: a request that a
// rule with Routes might apply to, or a Route key asks about, fails with
// httplimit.ErrRouteUnknown through Config.OnError (500 by default), rather
// than silently never matching.
package nethttp

import (
	"net/http"

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
				if r, ok := m.DecideHTTPUnrouted(w, r, router, nil); ok {
					next.ServeHTTP(w, r)
				}
			})
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			route := r.Pattern
			if route == "" {
				route = httplimit.RouteUnknown
			}
			if r, ok := m.DecideHTTP(w, r, route, nil); ok {
				next.ServeHTTP(w, r)
			}
		})
	}, nil
}

// muxRouter is a ServeMux seen as an httplimit.RouteFinder: a pointer
// conversion, so handing it over allocates nothing.
type muxRouter http.ServeMux

// FindRoute returns the pattern the mux will match for r, "" if none.
func (mux *muxRouter) FindRoute(r *http.Request) string {
	_, pattern := (*http.ServeMux)(mux).Handler(r)
	return pattern
}
