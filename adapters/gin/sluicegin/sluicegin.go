// Package sluicegin is sluice's Gin middleware (named so that it never
// shadows gin itself). It hands the engine (package admit) Gin's request
// and response.
//
//	r.GET("/x", sluicegin.LimitByIP(core.PerMinute(60)), h)
//	mw, err := sluicegin.New(admit.Config{Limiter: limiter, Rules: rules})
//
// Gin routes a request before its handlers run, so the middleware works
// anywhere (Use, a group, a route), and rules with Routes see c.FullPath().
// Key functions see c.Set's values in front of the request context; the
// details are in docs/adapters.md.
package sluicegin

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
)

// LimitByIP returns a Gin handler that limits each client IP address by p,
// on a memory store of its own, with the default header fields and denials:
// New(admit.PerClientIP(p)). See admit.PerClientIP for what it
// fixes and how to start from it instead (behind a proxy, say). It panics if
// p is nil, the one Config of PerClientIP's that New refuses: a mistake in
// the program, which shows when it starts, as Gin's own BasicAuth panics on
// an empty account list.
func LimitByIP(p *core.Policy) gin.HandlerFunc {
	mw, err := New(admit.PerClientIP(p))
	if err != nil {
		panic(err)
	}
	return mw
}

// New returns a Gin handler that limits requests as cfg says and aborts the
// chain when it answers a request itself.
func New(cfg admit.Config) (gin.HandlerFunc, error) {
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
		w := &fieldsWriter{ResponseWriter: c.Writer, s: v.Settlement}
		c.Writer = w
		defer func() {
			c.Writer = w.ResponseWriter
			v.Settlement.Settle(status)
		}()
		c.Next()
		status = w.Status()
		// Nothing written: Gin writes the header once the handlers have
		// returned.
		httplimit.SetFields(v.Settlement, status, w.Header())
	}, nil
}

// fieldsWriter is Gin's writer, which sets the rate-limit fields for the
// response's status (Settlement.SetHTTPFields) just before the header is
// written, when the status is known.
type fieldsWriter struct {
	gin.ResponseWriter
	s *admit.Settlement
}

func (w *fieldsWriter) before() {
	if !w.Written() {
		httplimit.SetFields(w.s, w.Status(), w.Header())
	}
}

func (w *fieldsWriter) WriteHeaderNow() { w.before(); w.ResponseWriter.WriteHeaderNow() }

func (w *fieldsWriter) Write(b []byte) (int, error) { w.before(); return w.ResponseWriter.Write(b) }

func (w *fieldsWriter) WriteString(s string) (int, error) {
	w.before()
	return w.ResponseWriter.WriteString(s)
}

func (w *fieldsWriter) Flush() { w.before(); w.ResponseWriter.Flush() }

// Unwrap returns the writer beneath, for http.ResponseController.
func (w *fieldsWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// values is a gin.Context seen as interface{ Get(key string) any }: a pointer conversion, so
// handing it over allocates nothing.
type values gin.Context

// Get returns the value stored under key with c.Set, nil if none.
func (v *values) Get(key string) any {
	val, _ := (*gin.Context)(v).Get(key)
	return val
}
