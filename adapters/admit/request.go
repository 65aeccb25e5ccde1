package admit

import (
	"context"
	"net/netip"
	"net/textproto"

	"github.com/sluice-go/sluice/core"
)

// Decide decides the request v describes: it applies the rules, the
// dependency links and the concurrency limit, sets the rate-limit fields
// through w, and answers through w a request that does not proceed.
func (e *Engine) Decide(v View, w Writer) Verdict {
	values, _ := v.(ValueGetter)
	r := e.acquire(v, values)
	verdict := e.decide(r, w)
	e.release(r)
	return verdict
}

// Request is a request being decided, as the functions of a Rule see it.
// It is only valid during the call it is passed to: the strings it returns
// may be views of the framework's buffers, which a key function copies by
// appending them.
type Request struct {
	view     View
	e        *Engine
	values   ValueGetter   // the framework's per-request values, if any
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
	slab       []byte          // what is left of the slab keys are carved from (see keyString)
	buf        []byte          // header values and problem bodies
	lines      []string        // a forwarded header's lines (see HeaderAppender)
	reqs       []core.Request  // the rules that apply
	mask       uint64          // which rules they are
	combo      int             // which policies they are (see buildPolicyTable)
	ds         []core.Decision // their decisions, when taken with TakeAll
	decided    bool            // ds holds the decisions of reqs
	denial     Denial          // Config.Deny's argument
}

// Context returns the context key functions look the user up in (see
// User): the request's context and, in front of it for
// string keys, the framework's per-request values, so that ctx.Value("user")
// finds what authentication middleware stored with Gin's or Echo's c.Set or
// Fiber's c.Locals. Like the Request, it is only valid during the call.
func (r *Request) Context() context.Context {
	if r.values == nil {
		return r.view.Context()
	}
	if r.vctx.values == nil {
		r.vctx = valuesContext{Context: r.view.Context(), values: r.values}
	}
	return &r.vctx
}

// valuesContext is a request context with a framework's per-request values in
// front of it. It lives in the pooled Request, so that Context allocates
// nothing.
type valuesContext struct {
	context.Context
	values ValueGetter
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

// Header returns the first value of a request header, "" if it has none.
func (r *Request) Header(name string) string {
	return r.view.Header(textproto.CanonicalMIMEHeaderKey(name))
}

// HeaderValues returns every value of a request header, in order.
func (r *Request) HeaderValues(name string) []string {
	return r.view.HeaderValues(textproto.CanonicalMIMEHeaderKey(name))
}

// Method returns the request method.
func (r *Request) Method() string { return r.view.Method() }

// Path returns the request's URL path.
func (r *Request) Path() string { return r.view.Path() }

// Route returns the template of the route the request matched, as the
// framework writes it ("/users/:id"; net/http's ServeMux pattern, "GET
// /users/{id}"), "" if it matched none, or RouteUnknown where
// the middleware runs before the framework routes the request.
func (r *Request) Route() string { return r.view.Route() }

// Peer returns the address of the direct peer, which may be a proxy (see
// ClientIP), the zero Addr if it is not an IP address.
func (r *Request) Peer() netip.Addr { return r.view.Peer() }

// Buffer returns an empty scratch buffer of the request's, valid until its
// answer is written: a Config.Deny function may build a body in it rather
// than allocate one.
func (r *Request) Buffer() []byte { return r.buf[:0] }

// ClientIP returns the client's address: the peer, or the address its
// trusted proxies forwarded (see the package documentation). IPv4-mapped
// addresses are unmapped; the zero Addr means the peer is not an IP address.
func (r *Request) ClientIP() netip.Addr {
	if !r.resolved {
		var peer4 bool
		r.client, peer4 = r.e.clientIP(r)
		r.resolved = true
		if t, ok := r.view.(PeerTexter); ok && peer4 {
			r.clientText = t.PeerText()
		}
	}
	return r.client
}

// maxKeptLines is the most header lines a pooled Request keeps room for.
const maxKeptLines = 16

// headerLines returns every value of a request header, appended to r's
// reusable slice if the View is a HeaderAppender.
func (r *Request) headerLines(name string) []string {
	if a, ok := r.view.(HeaderAppender); ok {
		r.lines = a.AppendHeaderValues(r.lines[:0], name)
		return r.lines
	}
	return r.view.HeaderValues(name)
}

func (e *Engine) acquire(v View, values ValueGetter) *Request {
	r := e.pool.Get().(*Request)
	r.view, r.values = v, values
	return r
}

func (e *Engine) release(r *Request) {
	// The requests stay in reqs' array until the next request overwrites
	// them: their keys are copies or the immutable text of a peer's address
	// (see keyString), never views of a framework's buffers, and clearing
	// them would cost a write barrier per pointer.
	r.reqs = r.reqs[:0]
	if cap(r.lines) > maxKeptLines {
		r.lines = nil // a request with that many lines is no reason to keep them
	} else {
		clear(r.lines) // drop the views of the framework's buffers
		r.lines = r.lines[:0]
	}
	r.view = nil
	if r.values != nil {
		r.values, r.vctx = nil, valuesContext{}
	}
	r.mask, r.combo = 0, 0
	r.client, r.resolved, r.decided = netip.Addr{}, false, false
	r.clientText = ""
	r.route, r.routed, r.routeKnown = "", false, false
	e.pool.Put(r)
}
