package httplimit

import (
	"context"
	"net/netip"

	"github.com/sluice-go/sluice/core"
)

// Decide decides the request v describes, sets the response header fields
// through w and, if the request may not proceed, writes the whole response.
func (m *Middleware) Decide(v View, w Writer) Verdict {
	values, _ := v.(Values)
	r := m.acquire(v, values)
	verdict := m.decide(r, w)
	m.release(r)
	return verdict
}

// Verdict is the outcome of Decide.
type Verdict struct {
	// Proceed reports that the next handler should run. When false, the
	// response has been written.
	Proceed bool
	// Reservation is the units reserved for the request under
	// Config.Reserve, to be reconciled by the handler; nil otherwise.
	Reservation *core.Reservation
}

// View is the framework-neutral view of a request an adapter gives Decide.
// Strings it returns need only stay valid until Decide returns: everything
// kept longer (keys) is copied. A View that also implements Values makes the
// framework's per-request values visible to key functions (Request.Context).
type View interface {
	// Context is the request's context: the limiter (and its store and
	// observer) decides under it, and key functions see it through
	// Request.Context.
	Context() context.Context
	// Peer is the address of the direct peer, the zero Addr if it is not an
	// IP address.
	Peer() netip.Addr
	// Header returns the first value of a request header ("" if absent).
	// Names are given in canonical form (textproto.CanonicalMIMEHeaderKey).
	Header(name string) string
	// HeaderValues returns every value of a request header, in order.
	HeaderValues(name string) []string
	// Method is the request method.
	Method() string
	// Path is the request's URL path.
	Path() string
	// Route is the template of the matched route as the framework writes
	// it ("/users/:id"; net/http's ServeMux pattern, "GET /users/{id}"), ""
	// if the request matched none, or RouteUnknown if the framework has not
	// routed the request yet where the middleware runs.
	Route() string
}

// Writer sets response header fields and writes a complete response. Decide
// calls SetHeader before the next handler runs (or before WriteResponse).
type Writer interface {
	// SetHeader replaces a response header field. key is in canonical form.
	SetHeader(key, value string)
	// WriteResponse sets Content-Type (unless contentType is empty) and
	// writes the status and body. body is valid only during the call.
	WriteResponse(status int, contentType string, body []byte)
}

// HeaderBytesWriter is implemented by Writers that copy header values into
// buffers of their own, as fasthttp does: Decide hands them the values it
// builds as bytes, sparing the string it would otherwise allocate for them.
type HeaderBytesWriter interface {
	// SetHeaderBytes is SetHeader with value valid only during the call.
	SetHeaderBytes(key string, value []byte)
}

// HeaderValuesAppender is implemented by Views whose framework keeps no
// []string of a header's values, as fasthttp does: reading a forwarded
// header, Decide hands them a slice of its own to append the values to,
// sparing the slice HeaderValues would allocate for every request.
type HeaderValuesAppender interface {
	// AppendHeaderValues appends every value of a request header, in order,
	// to dst and returns the extended slice. The values need only stay valid
	// until Decide returns.
	AppendHeaderValues(dst []string, name string) []string
}

// Values is a framework's store of per-request values, where authentication
// middleware usually puts the user: Echo's (echo.Context implements Values),
// Gin's and Fiber's (through their adapters).
type Values interface {
	// Get returns the value stored under key, nil if none.
	Get(key string) any
}

// Request is a request being decided, as key, cost and skip functions see it:
// the adapter's View plus what the Middleware derives from it. It is only
// valid during the call it is passed to.
type Request struct {
	View

	m        *Middleware
	values   Values        // the framework's per-request values, if any
	vctx     valuesContext // Context's answer when values is set
	client   netip.Addr
	resolved bool
	// clientText is the client's IPv4 address as the View's own immutable
	// text (a part of RemoteAddr), when it has one: a key equal to it, the
	// commonest key, is not copied.
	clientText string
	route      string          // the route's path template, once routed
	routed     bool            // route and routeKnown are set
	routeKnown bool            // the View knows the route
	key        []byte          // key being built
	buf        []byte          // header values and problem bodies
	lines      []string        // a forwarded header's lines (HeaderValuesAppender)
	reqs       []core.Request  // the rules that apply
	ds         []core.Decision // their decisions, when taken with TakeAll
	decided    bool            // ds holds the decisions of reqs
	denial     Denial          // the DenyFunc's argument
	std        stdExchange     // the View and Writer of DecideHTTP
}

// Context returns the context key functions look the user up in (see
// User): the request's context (View.Context) and, in front of it for
// string keys, the framework's per-request values, so that ctx.Value("user")
// finds what authentication middleware stored with Gin's or Echo's c.Set or
// Fiber's c.Locals. Like the Request, it is only valid during the call.
func (r *Request) Context() context.Context {
	if r.values == nil {
		return r.View.Context()
	}
	if r.vctx.values == nil {
		r.vctx = valuesContext{Context: r.View.Context(), values: r.values}
	}
	return &r.vctx
}

// valuesContext is a request context with a framework's per-request values in
// front of it. It lives in the pooled Request, so that Context allocates
// nothing.
type valuesContext struct {
	context.Context
	values Values
}

// Value returns the framework's value for a string key it holds, and
// otherwise the request context's.
func (c *valuesContext) Value(key any) any {
	if k, ok := key.(string); ok {
		if v := c.values.Get(k); v != nil {
			return v
		}
	}
	return c.Context.Value(key)
}

// ClientIP returns the client's address: the peer, or the address its
// trusted proxies forwarded (see the package documentation). IPv4-mapped
// addresses are unmapped; the zero Addr means the peer is not an IP address.
func (r *Request) ClientIP() netip.Addr {
	if !r.resolved {
		var peer4 bool
		r.client, peer4 = r.m.clientIP(r)
		r.resolved = true
		if s, ok := r.View.(*stdExchange); ok && peer4 {
			// The peer's own IPv4 text: canonical, as netip parses no other
			// dotted form.
			r.clientText = s.host
		}
	}
	return r.client
}

// maxKeptLines is the most header lines a pooled Request keeps room for.
const maxKeptLines = 16

// headerLines returns every value of a request header, appended to r's
// reusable slice if the View is a HeaderValuesAppender.
func (r *Request) headerLines(name string) []string {
	if a, ok := r.View.(HeaderValuesAppender); ok {
		r.lines = a.AppendHeaderValues(r.lines[:0], name)
		return r.lines
	}
	return r.View.HeaderValues(name)
}

func (m *Middleware) acquire(v View, values Values) *Request {
	r := m.pool.Get().(*Request)
	r.View, r.values = v, values
	return r
}

func (m *Middleware) release(r *Request) {
	clear(r.reqs) // drop the key strings
	r.reqs = r.reqs[:0]
	if cap(r.lines) > maxKeptLines {
		r.lines = nil // a request with that many lines is no reason to keep them
	} else {
		clear(r.lines) // drop the views of the framework's buffers
		r.lines = r.lines[:0]
	}
	r.View = nil
	if r.values != nil {
		r.values, r.vctx = nil, valuesContext{}
	}
	r.client, r.resolved, r.decided = netip.Addr{}, false, false
	r.clientText = ""
	r.route, r.routed, r.routeKnown = "", false, false
	r.std = stdExchange{}
	m.pool.Put(r)
}
