// Package sluicegin is sluice's Gin middleware (directory adapters/gin; the
// package is named sluicegin so that it never shadows gin itself). All
// behaviour (keys, headers, denials) is in package httplimit; this package
// only hands it Gin's request and response.
//
// The route template is c.FullPath() ("/users/:id"), known before any
// middleware runs, so the middleware may be installed with Use. The context
// the limiter and User keys see is the *gin.Context itself: User keys read
// values set with c.Set, and, with the engine's ContextWithFallback, the
// request context's values and cancellation.
package sluicegin

import (
	"github.com/gin-gonic/gin"

	"github.com/sluice-go/sluice/adapters/httplimit"
)

// New returns a Gin handler that limits requests as cfg says and aborts the
// chain when it answers a request itself.
func New(cfg httplimit.Config) (gin.HandlerFunc, error) {
	m, err := httplimit.New(cfg)
	if err != nil {
		return nil, err
	}
	return func(c *gin.Context) {
		r, ok := m.DecideHTTP(c, c.Writer, c.Request, c.FullPath())
		if !ok {
			c.Abort()
			return
		}
		c.Request = r
		c.Next()
	}, nil
}
