package httplimittest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
)

// Req is a request to send.
type Req struct {
	Method string      // default GET
	Path   string      // default "/"
	Remote string      // the peer, "ip:port"; default DefaultRemote
	Header http.Header // request header fields
	// Context is the request's context (default context.Background()): a
	// Server hands it to the framework as the request context (for Fiber,
	// the context its handlers and the middleware see), so that a test can
	// end it, as a client that goes away or a deadline that passes would.
	Context context.Context
}

// DefaultRemote is the peer of requests that name none.
const DefaultRemote = "192.0.2.1:1234"

// WithDefaults returns r with its empty fields set to their defaults. Run
// sends requests with them set; a Server called otherwise may need it.
func (r Req) WithDefaults() Req {
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	if r.Path == "" {
		r.Path = "/"
	}
	if r.Remote == "" {
		r.Remote = DefaultRemote
	}
	if r.Context == nil {
		r.Context = context.Background()
	}
	return r
}

// AddrOf parses a Req.Remote (for harnesses that need a net.Addr).
func AddrOf(remote string) netip.AddrPort { return netip.MustParseAddrPort(remote) }

// Resp is what a Server answered.
type Resp struct {
	Status int         // the status code
	Header http.Header // the header, with canonical keys
	Body   string      // the body
}

// Handler returns a Server that has h serve each request: the Server of
// frameworks built on net/http. It fills in the defaults of Req. A panic h
// lets through is answered 500, as a recovery middleware would.
func Handler(h http.Handler) Server {
	return func(r Req) (resp Resp) {
		r = r.WithDefaults()
		req := httptest.NewRequestWithContext(r.Context, r.Method, r.Path, nil)
		req.RemoteAddr = r.Remote
		for k, vs := range r.Header {
			req.Header[k] = vs
		}
		rec := httptest.NewRecorder()
		defer func() {
			if p := recover(); p != nil {
				resp = Resp{Status: http.StatusInternalServerError, Header: rec.Header()}
			}
		}()
		h.ServeHTTP(rec, req)
		return Resp{Status: rec.Code, Header: rec.Header(), Body: rec.Body.String()}
	}
}

// Routes are the route templates a Harness serves, besides the templated
// route Env.ItemRoute.
var Routes = []string{"/", "/login", "/other"}

// StatusHeader carries the status a route's handler answers a request with
// (see StatusOf), for the rules that charge by status. Its value "panic"
// makes the handler panic: a Harness installs its framework's own panic
// recovery, answering 500, outside the middleware (net/http has none:
// Handler answers 500). Its value "wait" makes the handler work until the
// request's context ends (Req.Context), as a handler does whose client
// goes away or whose deadline passes, and answer 504.
const StatusHeader = "X-Status"

// StatusOf returns the status a route's handler answers with, given the
// request's context (for Fiber, the one its handlers see) and StatusHeader
// value: that status, 200 if value is empty, 504 once ctx ends if value is
// "wait". It panics if value is "panic", as the handler then must.
func StatusOf(ctx context.Context, value string) int {
	switch value {
	case "":
		return http.StatusOK
	case "panic":
		panic("httplimittest: the handler panics, as asked")
	case "wait":
		<-ctx.Done()
		return http.StatusGatewayTimeout
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 200 || n > 599 {
		panic("httplimittest: bad " + StatusHeader + " " + strconv.Quote(value))
	}
	return n
}

// UserHeader names the user a request is authenticated as. A Harness
// installs, in front of the middleware, the authentication step of its
// framework: when the header is present, it stores its value under the
// string key UserKey where that framework's authentication middleware would
// (c.Set with Gin and Echo, c.Locals with Fiber), or, for a framework that
// keeps no per-request values (net/http), in the request context with
// WithUser. The table's User rules find it with UserOf.
const UserHeader = "X-User"

// UserKey is the key a Harness stores the user under.
const UserKey = "user"

type userKey struct{}

// WithUser returns a copy of ctx carrying user, for frameworks that keep no
// per-request values of their own.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserOf is the table's user lookup (for admit.User): the string stored
// under UserKey in the framework's per-request values, else the one WithUser
// put in the request context.
func UserOf(ctx context.Context) (string, bool) {
	if u, ok := ctx.Value(UserKey).(string); ok {
		return u, true
	}
	u, ok := ctx.Value(userKey{}).(string)
	return u, ok
}
