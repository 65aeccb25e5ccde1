package httplimit

import (
	"context"
	"net/http"
	"net/netip"
	"strings"

	"github.com/sluice-go/sluice/core"
)

// DecideHTTP is Decide for frameworks built on net/http's types (net/http,
// Gin, Echo). route is the matched route template and ctx the context for the
// limiter and User keys (usually r.Context()). It returns the request to pass
// on, which carries the reservation under Config.Reserve, and whether the
// next handler should run; if not, the response has been written to w.
func (m *Middleware) DecideHTTP(ctx context.Context, w http.ResponseWriter, r *http.Request, route string) (*http.Request, bool) {
	req := m.acquire(nil)
	s := &req.std
	s.ctx, s.w, s.r, s.route = ctx, w, r, route
	req.View = s
	v := m.decide(req, s)
	m.release(req)
	if v.Reservation != nil {
		r = r.WithContext(WithReservation(r.Context(), v.Reservation))
	}
	return r, v.Proceed
}

// stdExchange is the View and Writer of a net/http request. It lives inside
// the pooled Request, so deciding allocates no view.
type stdExchange struct {
	ctx   context.Context
	w     http.ResponseWriter
	h     http.Header
	r     *http.Request
	route string
	vals  []string // backing for the header values set, carved one by one
}

func (s *stdExchange) Context() context.Context { return s.ctx }

func (s *stdExchange) Peer() netip.Addr {
	a, _ := netip.ParseAddr(s.peerHost())
	return a
}

// peerHost returns the host part of RemoteAddr: "192.0.2.1" of
// "192.0.2.1:80", "2001:db8::1" of "[2001:db8::1]:80"; a bare address (as
// some servers and tests give) as it is.
func (s *stdExchange) peerHost() string {
	ra := s.r.RemoteAddr
	if strings.HasPrefix(ra, "[") {
		if j := strings.IndexByte(ra, ']'); j > 0 {
			return ra[1:j]
		}
		return ra
	}
	if i := strings.IndexByte(ra, ':'); i >= 0 && strings.IndexByte(ra[i+1:], ':') < 0 {
		return ra[:i]
	}
	return ra
}

func (s *stdExchange) Header(name string) string         { return s.r.Header.Get(name) }
func (s *stdExchange) HeaderValues(name string) []string { return s.r.Header.Values(name) }
func (s *stdExchange) Method() string                    { return s.r.Method }
func (s *stdExchange) Path() string                      { return s.r.URL.Path }
func (s *stdExchange) Route() string                     { return s.route }

// expectHeaders sizes the backing array of the next n header values.
func (s *stdExchange) expectHeaders(n int) {
	if len(s.vals) < n {
		s.vals = make([]string, n)
	}
}

// SetHeader stores the value as a one-element slice carved from a shared
// backing array (see expectHeaders): one allocation for all the fields of a
// response. Each slice has its capacity capped, so a later Header.Add copies
// rather than writes into its neighbour.
func (s *stdExchange) SetHeader(key, value string) {
	if len(s.vals) == 0 {
		s.vals = make([]string, 4)
	}
	if s.h == nil {
		s.h = s.w.Header()
	}
	s.vals[0] = value
	s.h[key] = s.vals[:1:1]
	s.vals = s.vals[1:]
}

func (s *stdExchange) WriteResponse(status int, contentType string, body []byte) {
	if contentType != "" {
		s.SetHeader(hdrContentType, contentType)
	}
	s.w.WriteHeader(status)
	_, _ = s.w.Write(body) // a failed write is the client's problem; nothing to do
}

type reservationKey struct{}

// WithReservation returns a copy of ctx carrying res.
func WithReservation(ctx context.Context, res *core.Reservation) context.Context {
	return context.WithValue(ctx, reservationKey{}, res)
}

// ReservationFrom returns the reservation a Config.Reserve middleware put in
// the request context, or nil. The handler settles it with Reconcile.
func ReservationFrom(ctx context.Context) *core.Reservation {
	res, _ := ctx.Value(reservationKey{}).(*core.Reservation)
	return res
}
