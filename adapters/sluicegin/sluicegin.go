// Package sluicegin is sluice's Gin middleware (named sluicegin so that it
// never shadows gin itself). All behaviour (keys, headers, denials) is in
// package httplimit; this package only hands it Gin's request and response.
//
// The route a rule's Routes and the Route key see is c.FullPath()
// ("/users/:id"). Gin routes a request before running any of its handlers,
// so the middleware may be installed anywhere: with Use, on a group or on a
// route. A request that matches no route (Gin's 404 and 405 handlers, which
// run Use middleware too) has no route: rules with Routes do not apply to it.
//
// A rule with Charge sees the status of c.Writer once the handlers after
// the middleware have returned.
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
		r, v := m.DecideHTTP(c.Writer, c.Request, c.FullPath(), (*values)(c))
		if !v.Proceed {
			c.Abort()
			return
		}
		c.Request = r
		if v.Settlement == nil {
			c.Next()
			return
		}
		status := 0 // stays 0 if a handler panics
		defer func() { v.Settlement.Settle(status) }()
		c.Next()
		status = c.Writer.Status()
	}, nil
}

// values is a gin.Context seen as adapterkit.Values: a pointer conversion, so
// handing it over allocates nothing.
type values gin.Context

// Get returns the value stored under key with c.Set, nil if none.
func (v *values) Get(key string) any {
	val, _ := (*gin.Context)(v).Get(key)
	return val
}
