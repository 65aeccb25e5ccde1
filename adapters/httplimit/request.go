package httplimit

import (
	"context"
	"net/netip"

	"github.com/sluice-go/sluice/core"
)

// View is the framework-neutral view of a request an adapter gives Decide.
// Strings it returns need only stay valid until Decide returns: everything
// kept longer (keys) is copied.
type View interface {
	// Context is passed to the limiter (and its store and observer) and to
	// User key functions.
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
	// Route is the template of the matched route ("/users/:id"), "" if none.
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

// Request is a request being decided, as key, cost and skip functions see it:
// the adapter's View plus what the Middleware derives from it. It is only
// valid during the call it is passed to.
type Request struct {
	View

	m        *Middleware
	client   netip.Addr
	resolved bool
	// clientText is the client's IPv4 address as the View's own immutable
	// text (a part of RemoteAddr), when it has one; keyHint is a string a
	// key function found its key equal to. Together they spare the copy of
	// the commonest key, the peer's IPv4 address.
	clientText string
	keyHint    string
	key        []byte          // key being built
	buf        []byte          // header values and problem bodies
	reqs       []core.Request  // the rules that apply
	ds         []core.Decision // their decisions, when taken with TakeAll
	decided    bool            // ds holds the decisions of reqs
	std        stdExchange     // the View and Writer of DecideHTTP
}

// ClientIP returns the client's address: the peer, or the address its
// trusted proxies forwarded (see the package documentation). IPv4-mapped
// addresses are unmapped; the zero Addr means the peer is not an IP address.
func (r *Request) ClientIP() netip.Addr {
	if !r.resolved {
		var peer4 bool
		r.client, peer4 = r.m.clientIP(r.View)
		r.resolved = true
		if ht, ok := r.View.(interface{ peerHost() string }); ok && peer4 {
			// The peer's own IPv4 text: canonical, as netip parses no other
			// dotted form.
			r.clientText = ht.peerHost()
		}
	}
	return r.client
}

func (m *Middleware) acquire(v View) *Request {
	r := m.pool.Get().(*Request)
	r.View = v
	return r
}

func (m *Middleware) release(r *Request) {
	clear(r.reqs) // drop the key strings
	r.reqs = r.reqs[:0]
	r.View, r.client, r.resolved, r.decided = nil, netip.Addr{}, false, false
	r.clientText, r.keyHint = "", ""
	r.std = stdExchange{}
	m.pool.Put(r)
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

// Decide decides the request v describes, sets the response header fields
// through w and, if the request may not proceed, writes the whole response.
func (m *Middleware) Decide(v View, w Writer) Verdict {
	r := m.acquire(v)
	verdict := m.decide(r, w)
	m.release(r)
	return verdict
}
