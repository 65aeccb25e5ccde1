package httplimit

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"

	"github.com/sluice-go/sluice/core"
)

// Verdict is what Decide decided.
type Verdict struct {
	// Proceed reports that the next handler should run. When false, the
	// response has been written.
	Proceed bool
	// Reservation is the units reserved for the request under
	// Config.Estimates, which the handler reconciles; nil
	// otherwise. An adapter puts it in the context the handler sees (see
	// Context; DecideHTTP already has).
	Reservation *core.Reservation
	// Settlement, if not nil, is what waits on the response: a charge (a
	// rule with Rule.Charge applied), a slot of a concurrency
	// limit (Config.Concurrency), or both. The adapter must call
	// its Settle once the next handler has returned, or panicked, and
	// exactly once: the slot is not given back otherwise, and the
	// Settlement is reused once settled.
	Settlement *Settlement
}

// View is the framework-neutral view of a request an adapter gives Decide.
// Strings it returns need only stay valid until Decide returns: everything
// kept longer (keys) is copied. A View with a method Get(key string) any,
// the framework's per-request values, makes them visible to key functions
// (Request.Context). A View with a method AppendHeaderValues(dst []string,
// name string) []string, and a Writer with a method SetHeaderBytes(key
// string, value []byte), spare an allocation on frameworks that keep header
// values as bytes (see "Writing an adapter" in the package doc).
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

// headerBytesWriter is a Writer that copies header values into buffers of
// its own, as fasthttp does: Decide hands it the values it builds as bytes,
// sparing the string it would otherwise allocate for them. A Writer has it
// by having the method.
type headerBytesWriter interface {
	// SetHeaderBytes is SetHeader with value valid only during the call.
	SetHeaderBytes(key string, value []byte)
}

// headerValuesAppender is a View whose framework keeps no []string of a
// header's values, as fasthttp does: reading a forwarded header, Decide
// hands it a slice of its own to append the values to, sparing the slice
// HeaderValues would allocate for every request. A View has it by having
// the method.
type headerValuesAppender interface {
	// AppendHeaderValues appends every value of a request header, in order,
	// to dst and returns the extended slice. The values need only stay valid
	// until Decide returns.
	AppendHeaderValues(dst []string, name string) []string
}

// valueGetter is a framework's store of per-request values, where
// authentication middleware usually puts the user: Echo's (echo.Context
// has the method), Gin's and Fiber's (through their adapters). A View has
// it by having the method.
type valueGetter interface {
	// Get returns the value stored under key, nil if none.
	Get(key string) any
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

// StatusRecorder is an http.ResponseWriter that records the status the
// handler answers with, for a Settlement, where the framework keeps no
// record of it (net/http itself). Wrap the writer only when the Verdict has
// a Settlement. It passes Flush, Hijack and ReadFrom on, and Unwrap gives
// http.ResponseController the writer beneath.
type StatusRecorder struct {
	http.ResponseWriter
	// Settlement, if set, has its rate-limit fields set for the status
	// (Settlement.SetHTTPFields) just before the header is written.
	Settlement *Settlement
	status     int
}

// Status returns the status the response was written with: 200 if the
// handler wrote none, as net/http then answers, and 101 (Switching
// Protocols) once the handler has hijacked the connection.
func (w *StatusRecorder) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// WriteHeader records the first final status (informational 1xx statuses
// other than 101 precede it) and writes it.
func (w *StatusRecorder) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
		if w.Settlement != nil {
			w.Settlement.SetHTTPFields(code, w.Header())
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write writes a body, with the 200 status net/http sends if none was.
func (w *StatusRecorder) Write(b []byte) (int, error) {
	w.wrote()
	return w.ResponseWriter.Write(b)
}

// ReadFrom copies r into the response through the writer beneath, which may
// do it without a buffer (sendfile).
func (w *StatusRecorder) ReadFrom(r io.Reader) (int64, error) {
	w.wrote()
	return io.Copy(w.ResponseWriter, r)
}

// Flush sends what is buffered, if the writer beneath can.
func (w *StatusRecorder) Flush() {
	w.wrote()
	_ = http.NewResponseController(w.ResponseWriter).Flush() // http.Flusher has no error to report it with
}

// Hijack takes the connection over, if the writer beneath can.
func (w *StatusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

// Unwrap returns the writer beneath, for http.ResponseController.
func (w *StatusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wrote records the status of a response whose body starts without one.
func (w *StatusRecorder) wrote() {
	if w.status == 0 {
		w.status = http.StatusOK
		if w.Settlement != nil {
			w.Settlement.SetHTTPFields(http.StatusOK, w.Header())
		}
	}
}

// reservationKey is the context key of a request's *core.Reservation.
type reservationKey struct{}
