// Package sluiceecho is sluice's Echo v4 middleware (named so that it never
// shadows echo itself; sluiceechov5 is Echo v5's). It hands the engine
// (package admit) Echo's request and response.
//
//	e.Use(sluiceecho.LimitByIP(core.PerSecond(10)))
//	mw, err := sluiceecho.New(admit.Config{Limiter: limiter, Rules: rules})
//
// Install it with Use, on a group or on a route, where Echo has routed the
// request and rules with Routes see c.Path(); under e.Pre, only with
// BeforeRouting, which refuses rules with Routes. Key functions see c.Set's
// values; the details are in docs/adapters.md.
package sluiceecho

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

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
func New(cfg admit.Config, opts ...Option) (echo.MiddlewareFunc, error) {
	m, err := httplimit.New(cfg)
	if err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.pre {
		for i, r := range cfg.Rules {
			if len(r.Routes) > 0 {
				return nil, fmt.Errorf("sluiceecho: rule %d (%s) has Routes, but with BeforeRouting the middleware runs before Echo routes the request: "+
					"put rules with Routes in a middleware installed with e.Use", i, policyNames(r))
			}
		}
	}
	pre := o.pre
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			var (
				r *http.Request
				v admit.Verdict
			)
			switch path := c.Path(); {
			case pre:
				// Not routed yet, and a later Pre middleware may still
				// move the request.
				r, v = m.DecideHTTP(c.Response(), req, admit.RouteUnknown, c)
			case path != "":
				r, v = m.DecideHTTP(c.Response(), req, path, c)
			default:
				// Echo matched no route, or has not routed yet (installed
				// with e.Pre without BeforeRouting).
				r, v = m.DecideHTTPUnrouted(c.Response(), req, (*router)(c.Echo()).findRoute, c)
			}
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
			resp := c.Response()
			resp.Before(func() {
				if live {
					httplimit.SetFields(v.Settlement, resp.Status, resp.Header())
				}
			})
			defer func() { live = false; v.Settlement.Settle(status) }()
			err := next(c)
			status = statusOf(c, err)
			// Not yet written: Echo's error handler, or the server, writes
			// it once the middleware has returned.
			httplimit.SetFields(v.Settlement, status, resp.Header())
			return err
		}
	}, nil
}

// Option configures the middleware New returns.
type Option func(*options)

type options struct {
	pre bool // installed with e.Pre
}

// BeforeRouting must be passed when the middleware is installed with e.Pre,
// before Echo routes the request: New then refuses rules with Routes, and a
// Route key fails every request with admit.ErrRouteUnknown. Leave it out
// with e.Use, a group or a route. See the package documentation.
func BeforeRouting() Option {
	return func(o *options) { o.pre = true }
}

// statusOf returns the status the client is answered with after next
// returned err: the response's, once written; for an error not yet
// answered, the status Echo's DefaultHTTPErrorHandler answers it with.
func statusOf(c echo.Context, err error) int {
	resp := c.Response()
	if err == nil || resp.Committed {
		return resp.Status
	}
	he, ok := err.(*echo.HTTPError) // not errors.As: as DefaultHTTPErrorHandler reads it
	if !ok {
		return http.StatusInternalServerError
	}
	if internal, ok := he.Internal.(*echo.HTTPError); ok {
		he = internal
	}
	return he.Code
}

// policyNames names a rule's policy, or the policies it chooses among.
func policyNames(r admit.Rule) string {
	if r.Policy != nil {
		return r.Policy.Name()
	}
	names := make([]string, len(r.Policies))
	for i, p := range r.Policies {
		names[i] = p.Name()
	}
	return strings.Join(names, "|")
}

// router is an Echo instance that finds routes, for requests
// with no route path: a pointer conversion, so handing it over allocates
// nothing.
type router echo.Echo

// findRoute tells a request Echo found no route for (known: none) from one
// it has not routed yet (unknown) by routing it itself, as Echo's
// ServeHTTP does, on a pooled context of its own.
func (e *router) findRoute(r *http.Request) string {
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
		return admit.RouteUnknown
	}
	return ""
}
