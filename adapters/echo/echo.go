// Package sluiceecho is sluice's Echo v4 middleware (directory adapters/echo;
// the package is named sluiceecho so that it never shadows echo itself). All
// behaviour (keys, headers, denials) is in package httplimit; this package
// only hands it Echo's request and response and honours Echo's Skipper.
//
// The route template is c.Path() ("/users/:id"): Echo routes before running
// middleware installed with Use, so it is known there.
//
// The limiter decides under the request context (c.Request().Context()).
// User key functions see that context with the values earlier middleware
// stored with c.Set in front of it: ctx.Value("user") finds what an
// authentication middleware set with c.Set("user", ...), and other keys
// reach the request context.
package sluiceecho

import (
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
			r, ok := m.DecideHTTP(c.Response(), req, c.Path(), c)
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
