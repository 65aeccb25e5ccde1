// Package sluicegin is sluice's Gin middleware (directory adapters/gin; the
// package is named sluicegin so that it never shadows gin itself). All
// behaviour (keys, headers, denials) is in package httplimit; this package
// only hands it Gin's request and response.
//
// The route template is c.FullPath() ("/users/:id"), known before any
// middleware runs, so the middleware may be installed with Use.
//
// The limiter decides under the request context (c.Request.Context()). User
// key functions see that context with the values earlier middleware stored
// with c.Set in front of it: ctx.Value("user") finds what an authentication
// middleware set with c.Set("user", ...), whatever the engine's
// ContextWithFallback, and other keys reach the request context.
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
		r, ok := m.DecideHTTP(c.Writer, c.Request, c.FullPath(), (*values)(c))
		if !ok {
			c.Abort()
			return
		}
		c.Request = r
		c.Next()
	}, nil
}

// values is a gin.Context seen as httplimit.Values: a pointer conversion, so
// handing it over allocates nothing.
type values gin.Context

// Get returns the value stored under key with c.Set, nil if none.
func (v *values) Get(key string) any {
	val, _ := (*gin.Context)(v).Get(key)
	return val
}
