// Package sluicefiberv3 is sluice's Fiber v3 middleware (sluicefiber is
// Fiber v2's). It hands the engine (package admit) Fiber's request and
// response.
//
//	app.Get("/x", sluicefiberv3.LimitByIP(core.PerSecond(10)), h)
//	mw, err := sluicefiberv3.New(admit.Config{Limiter: limiter, Rules: rules})
//
// Rules with Routes see c.Route().Path on the routes the middleware is
// installed on (app.Get(path, mw, h)); app.Use matches by prefix before
// Fiber has found the route. Key functions see c.Locals' values; the
// details are in docs/adapters.md.
package sluicefiberv3

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gofiber/fiber/v3"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
)

// LimitByIP returns a Fiber handler that limits each client IP address by
// p, on a memory store of its own, with the default header fields and
// denials: New(admit.PerClientIP(p)). See admit.PerClientIP for
// what it fixes and how to start from it instead (behind a proxy, say). It
// panics if p is nil, the one Config of PerClientIP's that New refuses, as
// Fiber's own middleware panic on a configuration they cannot use.
func LimitByIP(p *core.Policy) fiber.Handler {
	mw, err := New(admit.PerClientIP(p))
	if err != nil {
		panic(err)
	}
	return mw
}

// New returns a Fiber handler that limits requests as cfg says. A request it
// answers itself ends there, with a nil error.
func New(cfg admit.Config) (fiber.Handler, error) {
	m, err := httplimit.New(cfg)
	if err != nil {
		return nil, err
	}
	// fiber.Ctx is an interface, which no pointer conversion can make a
	// View: views are pooled, so that deciding allocates none.
	// Each knows the middleware's table of the app's routes.
	var routes appRoutes
	views := sync.Pool{New: func() any { return &view{routes: &routes} }}
	return func(c fiber.Ctx) error {
		v := views.Get().(*view)
		v.c = c
		verdict := m.Decide(v, v)
		v.c = nil
		views.Put(v)
		if !verdict.Proceed {
			return nil
		}
		if verdict.Reservation != nil {
			c.SetContext(verdict.Context(c.Context()))
		}
		if verdict.Settlement == nil {
			return c.Next()
		}
		status := 0 // stays 0 if a handler panics
		defer func() { verdict.Settlement.Settle(status) }()
		err := c.Next()
		status = statusOf(c, err)
		// fasthttp sends the header once every handler has returned:
		// the fields can tell how the response went.
		v = views.Get().(*view)
		v.c = c
		verdict.Settlement.SetFields(status, v)
		v.c = nil
		views.Put(v)
		return err
	}, nil
}

// statusOf returns the status the client is answered with after the
// handlers returned err: the response's, or for an error the status
// Fiber's DefaultErrorHandler answers it with.
func statusOf(c fiber.Ctx, err error) int {
	if err == nil {
		return c.Response().StatusCode()
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return fiber.StatusInternalServerError
}

// view is a fiber.Ctx seen as an admit.View and Writer.
type view struct {
	c      fiber.Ctx
	routes *appRoutes
}

func (v *view) Context() context.Context  { return v.c.Context() }
func (v *view) Header(name string) string { return v.c.Get(name) }
func (v *view) Method() string            { return v.c.Method() }
func (v *view) Path() string              { return v.c.Path() }

// Route returns the route's path, or admit.RouteUnknown in a handler
// Fiber matched by prefix (app.Use), whose route is not the request's.
func (v *view) Route() string {
	rt := v.c.Route()
	if v.routes.isUse(v.c.App(), rt) {
		return admit.RouteUnknown
	}
	return rt.Path
}

// Get returns the value stored under key with c.Locals, nil if none: the
// view is the request's interface{ Get(key string) any }. It reads fasthttp's user values,
// as c.Locals does, without passing the key through c.Locals' variadic
// signature, which would make it escape and allocate.
func (v *view) Get(key string) any { return v.c.RequestCtx().UserValue(key) }

func (v *view) SetHeader(key, value string) {
	v.SetHeaderBytes(key, unsafe.Slice(unsafe.StringData(value), len(value)))
}

// SetHeaderBytes sets a field whose key is already canonical, skipping the
// key normalisation of c.Set; fasthttp copies both byte views, and writes
// into neither.
func (v *view) SetHeaderBytes(key string, value []byte) {
	v.c.Response().Header.SetCanonical(unsafe.Slice(unsafe.StringData(key), len(key)), value)
}

// Peer returns the TCP peer's address, the zero Addr for any other peer (a
// Unix socket), which fasthttp's RemoteIP would report as 0.0.0.0.
func (v *view) Peer() netip.Addr {
	tcp, ok := v.c.RequestCtx().RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	a, _ := netip.AddrFromSlice(tcp.IP)
	return a
}

func (v *view) HeaderValues(name string) []string { return v.AppendHeaderValues(nil, name) }

// AppendHeaderValues appends views of the header's values, which httplimit
// reads during the call only, to dst: deciding a request from a trusted
// proxy allocates no slice for them (Decide looks for that method on a View).
func (v *view) AppendHeaderValues(dst []string, name string) []string {
	for _, b := range v.c.Request().Header.PeekAll(name) {
		dst = append(dst, unsafe.String(unsafe.SliceData(b), len(b)))
	}
	return dst
}

// ResponseHeader returns a view of the response field's value, which
// httplimit reads during the call only.
func (v *view) ResponseHeader(key string) string {
	return peek(&v.c.Response().Header, key)
}

func (v *view) WriteResponse(status int, contentType string, body []byte) {
	v.c.Status(status)
	if contentType != "" {
		v.SetHeader(fiber.HeaderContentType, contentType)
	}
	v.c.Response().SetBody(body) // copies
}

// appRoutes tells the routes of app.Use handlers, which Fiber matches by
// prefix before it has found the route a request is bound for, from the
// app's own routes. Fiber says so in nothing a route exports, but
// App.GetRoutes(true) leaves the Use routes out, and a route shares its
// handlers' backing array with its copy there: a route whose first handler
// is no own route's is a Use route. The set is rebuilt when the app has
// registered more handlers since it was made.
type appRoutes struct {
	snap atomic.Pointer[routeSet]
}

// routeSet is the first handler of each route of an app that is not
// app.Use's, when the app had count handlers.
type routeSet struct {
	count uint32
	own   map[*fiber.Handler]struct{}
}

// isUse reports whether rt, a route of app, is the route of app.Use (or a
// Group's) handlers.
func (a *appRoutes) isUse(app *fiber.App, rt *fiber.Route) bool {
	if len(rt.Handlers) == 0 {
		return true
	}
	s := a.snap.Load()
	if n := app.HandlersCount(); s == nil || s.count != n {
		s = &routeSet{count: n, own: make(map[*fiber.Handler]struct{})}
		for _, r := range app.GetRoutes(true) {
			if len(r.Handlers) > 0 {
				s.own[&r.Handlers[0]] = struct{}{}
			}
		}
		a.snap.Store(s)
	}
	_, own := s.own[&rt.Handlers[0]]
	return !own
}
