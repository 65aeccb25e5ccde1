// Package sluiceecho is sluice's Echo v4 middleware (directory adapters/echo;
// the package is named sluiceecho so that it never shadows echo itself). All
// behaviour (keys, headers, denials) is in package httplimit; this package
// only hands it Echo's request and response and honours Echo's Skipper.
//
// The route a rule's Routes and the Route key see is c.Path()
// ("/users/:id"). Echo routes a request before running middleware installed
// with Use or on a group or route, so it is known there; a request that
// matches no route has none, and rules with Routes do not apply to it.
// Middleware installed with Pre runs before Echo routes: there, a request
// that some route matches fails with httplimit.ErrRouteUnknown through
// Config.OnError (500 by default) when a rule with Routes might apply to it
// or a Route key asks about it, rather than silently never matching (the
// route cannot be trusted before the other Pre middleware, which may rewrite
// the path, has run).
//
// The limiter decides under the request context (c.Request().Context()).
// User key functions see that context with the values earlier middleware
// stored with c.Set in front of it: ctx.Value("user") finds what an
// authentication middleware set with c.Set("user", ...), and other keys
// reach the request context.
package sluiceecho

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/sluice-go/sluice/adapters/httplimit"
)

// Config is httplimit.Config plus Echo's Skipper convention.
type Config struct {
	httplimit.Config
	// Skipper, if set, exempts the requests for which it returns true.
	Skipper middleware.Skipper
}

// New returns Echo middleware that limits requests as cfg says. A request it
// answers itself ends with a nil error: the response is already written.
func New(cfg Config) (echo.MiddlewareFunc, error) {
	m, err := httplimit.New(cfg.Config)
	if err != nil {
		return nil, err
	}
	skip := cfg.Skipper
	if skip == nil {
		skip = middleware.DefaultSkipper
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if skip(c) {
				return next(c)
			}
			req := c.Request()
			var (
				r  *http.Request
				ok bool
			)
			if path := c.Path(); path != "" {
				r, ok = m.DecideHTTP(c.Response(), req, path, c)
			} else {
				// Echo matched no route, or has not routed yet (Pre).
				r, ok = m.DecideHTTPUnrouted(c.Response(), req, (*router)(c.Echo()), c)
			}
			if !ok {
				return nil
			}
			if r != req {
				c.SetRequest(r)
			}
			return next(c)
		}
	}, nil
}

// router is an Echo instance seen as an httplimit.RouteFinder, for requests
// with no route path: a pointer conversion, so handing it over allocates
// nothing.
type router echo.Echo

// FindRoute tells a request Echo found no route for (known: none) from one
// it has not routed yet (unknown) by routing it itself, as Echo's
// ServeHTTP does, on a pooled context of its own.
func (e *router) FindRoute(r *http.Request) string {
	ec := (*echo.Echo)(e)
	rt := ec.Router()
	if hosts := ec.Routers(); len(hosts) > 0 {
		if h, ok := hosts[r.Host]; ok {
			rt = h
		}
	}
	c := ec.AcquireContext()
	c.Reset(r, nil)
	rt.Find(r.Method, echo.GetPath(r), c)
	found := c.Path() != ""
	c.Reset(nil, nil)
	ec.ReleaseContext(c)
	if found {
		return httplimit.RouteUnknown
	}
	return ""
}
