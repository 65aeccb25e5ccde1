// Package sluiceechov5 is sluice's Echo v5 middleware (sluiceecho is Echo
// v4's). It hands the engine (package admit) Echo's request and response.
//
//	e.Use(sluiceechov5.LimitByIP(core.PerSecond(10)))
//	mw, err := sluiceechov5.New(admit.Config{Limiter: limiter, Rules: rules})
//
// Install it with Use, on a group or on a route, where rules with Routes see
// the route's path; under e.Pre every route is unknown. The details are in
// docs/adapters.md.
package sluiceechov5

import (
	"github.com/labstack/echo/v5"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
)

// LimitByIP returns Echo middleware that limits each client IP address by
// p, on a memory store of its own, with the default header fields and
// denials: New(admit.PerClientIP(p)). See admit.PerClientIP for
// what it fixes and how to start from it instead (behind a proxy, say). It
// panics if p is nil, the one Config of PerClientIP's that New refuses, as
// Echo's own RateLimiter panics without a store.
func LimitByIP(p *core.Policy) echo.MiddlewareFunc {
	mw, err := New(admit.PerClientIP(p))
	if err != nil {
		panic(err)
	}
	return mw
}

// New returns Echo middleware that limits requests as cfg says. A request it
// answers itself ends with a nil error: the response is already written.
func New(cfg admit.Config) (echo.MiddlewareFunc, error) {
	m, err := httplimit.New(cfg)
	if err != nil {
		return nil, err
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			req := c.Request()
			r, v := m.DecideHTTP(c.Response(), req, route(c), c)
			if !v.Proceed {
				return nil
			}
			if r != req {
				c.SetRequest(r)
			}
			if v.Settlement == nil {
				return next(c)
			}
			status := 0  // stays 0 if next panics
			live := true // v.Settlement is this request's until settled
			resp, _ := echo.UnwrapResponse(c.Response())
			if resp != nil {
				resp.Before(func() {
					if live {
						httplimit.SetFields(v.Settlement, resp.Status, resp.Header())
					}
				})
			}
			defer func() { live = false; v.Settlement.Settle(status) }()
			err := next(c)
			_, status = echo.ResolveResponseStatus(c.Response(), err)
			// Not yet written: Echo's error handler, or the server, writes
			// it once the middleware has returned.
			httplimit.SetFields(v.Settlement, status, c.Response().Header())
			return err
		}
	}, nil
}

// route returns the template of the route Echo matched, "" if none, or
// admit.RouteUnknown before Echo has routed the request (under e.Pre).
// Routing gives every request a RouteInfo with a name, a 404's or a 405's
// included; before it, RouteInfo is the zero value. RouteInfo copies the
// route's parameter names, so it is asked only when there is no path: a 404
// has no parameters, and costs no allocation.
func route(c *echo.Context) string {
	if path := c.Path(); path != "" {
		return path
	}
	if c.RouteInfo().Name == "" {
		return admit.RouteUnknown
	}
	return ""
}
