// Package sluiceechov5 is sluice's Echo v5 middleware (sluiceecho is Echo
// v4's). All behaviour (keys, headers, denials) is in package httplimit;
// this package only hands it Echo's request and response.
//
// The common case, each client IP limited on its own, takes one line, with
// Use, Pre, on a group or on a route:
//
//	e.Use(sluiceechov5.LimitByIP(core.PerSecond(10)))
//
// Anything else takes a admit.Config (several rules, routes, keys,
// Redis, trusted proxies, ...); Config.Skip exempts requests, as Echo's
// Skipper would:
//
//	mw, err := sluiceechov5.New(admit.Config{Limiter: limiter, Rules: rules})
//
// # Where to install it
//
// The route a rule's Routes and the Route key see is c.Path()
// ("/users/:id"), which Echo sets when it routes the request.
//
// With e.Use, on a group or on a route (the usual place): Echo has routed
// the request, after every Pre middleware, so the route is known. A request
// that matches no route (a 404) has none, and rules with Routes do not apply
// to it.
//
// With e.Pre, the middleware runs before Echo routes the request, and
// before the Pre middleware installed after it, which may still move the
// request onto another route (RemoveTrailingSlash, AddTrailingSlash,
// Rewrite, MethodOverride, your own). Echo v5 says so (a request not routed
// yet has no RouteInfo), so no option is needed: every request's route is
// unknown there, and one that a rule with Routes might apply to, or that a
// Route key asks about, fails with admit.ErrRouteUnknown through
// Config.OnError (500 by default), 404s included, rather than silently
// matching nothing. Rules without Routes work as anywhere else, and under
// Pre they limit every request, 404s included. For per-route limits as
// well, install a second middleware with e.Use:
//
//	early, _ := sluiceechov5.New(perIPOnly)
//	routed, _ := sluiceechov5.New(loginLimits)
//	e.Pre(early, middleware.RemoveTrailingSlash())
//	e.Use(routed)
//
// # Charging by status
//
// A rule with Charge sees the status the client is answered with once the
// handler has returned, as Echo's ResolveResponseStatus gives it: the
// response's, once written; for a handler's error not yet answered, the
// error's status code (an HTTPStatusCoder's, such as *echo.HTTPError), 500
// for any other error (a custom HTTPErrorHandler is not consulted).
// Its rate-limit fields are set again for that status just before the
// header is written (Response.Before, or after the handler for an error
// Echo answers): a unit given back reads as never taken.
//
// # Context
//
// The limiter decides under the request context (c.Request().Context()).
// User key functions see that context with the values earlier middleware
// stored with c.Set in front of it: ctx.Value("user") finds what an
// authentication middleware set with c.Set("user", ...), and other keys
// reach the request context.
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
