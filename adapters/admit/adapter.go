package admit

import (
	"context"
	"net/netip"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// Verdict is what Decide decided.
type Verdict struct {
	// Proceed reports that the next handler should run. When false, the
	// answer has been written.
	Proceed bool
	// Reservation is the units reserved for the request under
	// Config.Estimates, which the handler reconciles; nil
	// otherwise. An adapter puts it in the context the handler sees (see
	// Context).
	Reservation *core.Reservation
	// Settlement, if not nil, is what waits on the response: a charge (a
	// rule with Rule.Charge applied), a slot of a concurrency
	// limit (Config.Concurrency), or both. The adapter must call
	// its Settle once the next handler has returned, or panicked, and
	// exactly once: the slot is not given back otherwise, and the
	// Settlement is reused once settled.
	Settlement *Settlement
}

// View is the protocol's view of a request an adapter gives Decide: an HTTP
// request, or a gRPC call (its metadata as headers, its full method as
// path and route). Strings it returns need only stay valid until Decide
// returns: everything kept longer (keys) is copied. A View may also be a
// ValueGetter, a HeaderAppender or a PeerTexter.
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

// RouteUnknown is the route an adapter gives (View.Route, DecideHTTP) for a
// request its framework has not routed yet where the middleware runs: Fiber's
// app.Use, Echo's Pre, net/http around another router or a subtree
// pattern's handler. No route template is written so. Rules that need the
// route then fail the request with ErrRouteUnknown.
const RouteUnknown = "(route unknown)"

// Writer sets response header fields and writes a complete response. Decide
// calls SetHeader before the next handler runs (or before WriteResponse).
type Writer interface {
	// SetHeader replaces a response header field. key is in canonical form.
	SetHeader(key, value string)
	// WriteResponse sets Content-Type (unless contentType is empty) and
	// writes the status and body. body is valid only during the call.
	WriteResponse(status int, contentType string, body []byte)
	// ResponseHeader returns the value of a response header field set so
	// far ("" if none; several values joined with ", "), which an earlier
	// middleware may have set: the rate-limit fields of every sluice
	// middleware on a request's path add up. key is in canonical form.
	ResponseHeader(key string) string
}

// Slots bounds the requests in flight, as Config.Concurrency: a
// backpressure.Limiter in the process, redisslots.Slots across a fleet.
type Slots interface {
	// Acquire takes a slot for a request of key and class, waiting as long
	// as the slots' queue allows. A request they refuse gets a
	// *backpressure.ShedError; one whose ctx ended while it waited, ctx's
	// error; any other error says the slots could not be asked.
	Acquire(ctx context.Context, key string, class core.Class) (backpressure.Permit, error)
}

// SlotGauge is Slots that can say how many requests they admit at once and
// hold now, which Config.AdvertiseConcurrency publishes.
type SlotGauge interface {
	Slots
	Limit() int
	InFlight() int
}

// BytesWriter is a Writer that copies header values into buffers of its
// own, as fasthttp does: Decide hands it the values it builds as bytes,
// sparing the string it would otherwise allocate for each.
type BytesWriter interface {
	// SetHeaderBytes is SetHeader with value valid only during the call.
	SetHeaderBytes(key string, value []byte)
}

// HeaderAppender is a View whose framework keeps no []string of a header's
// values, as fasthttp does: Decide hands it a slice of its own to append
// the values of a forwarded header to, sparing the slice HeaderValues
// would allocate.
type HeaderAppender interface {
	// AppendHeaderValues appends every value of a request header, in order,
	// to dst and returns the extended slice. The values need only stay valid
	// until Decide returns.
	AppendHeaderValues(dst []string, name string) []string
}

// ValueGetter is a View that holds a framework's per-request values, where
// authentication middleware usually puts the user (Echo's and Gin's c.Set,
// Fiber's c.Locals): key functions find them through Request.Context.
type ValueGetter interface {
	// Get returns the value stored under key, nil if none.
	Get(key string) any
}

// PeerTexter is a View that keeps its peer's IPv4 address as text that
// never changes (net/http's RemoteAddr without its port): a client IP key
// equal to it is that text, not a copy.
type PeerTexter interface {
	// PeerText returns the text Peer parsed when it is an IPv4 address in
	// canonical form, "" otherwise; it is called only after Peer.
	PeerText() string
}

// Context returns ctx carrying the Verdict's Reservation (ctx itself if
// there is none), where the handler finds it with ReservationFrom: the
// context an adapter gives the handler when its framework keeps a request
// context of its own (DecideHTTP has already put it in the request's).
func (v Verdict) Context(ctx context.Context) context.Context {
	if v.Reservation == nil {
		return ctx
	}
	return context.WithValue(ctx, reservationKey{}, v.Reservation)
}

// ReservationFrom returns the reservation a Config.Estimates engine put in
// the request's context, or nil. The handler settles it with Reconcile.
func ReservationFrom(ctx context.Context) *core.Reservation {
	res, _ := ctx.Value(reservationKey{}).(*core.Reservation)
	return res
}

// reservationKey is the context key of a request's *core.Reservation.
type reservationKey struct{}

// HTTP-equivalent statuses of the engine's answers (Denial.Status,
// Response.Status): a protocol layer maps them to its own.
const (
	statusTooManyRequests = 429
	statusInternalError   = 500
	statusUnavailable     = 503
	statusGatewayTimeout  = 504
)
