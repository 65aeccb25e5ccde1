package httplimit

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"unsafe"

	"github.com/sluice-go/sluice/core"
)

// DecideHTTP is Decide for a framework built on net/http's types: route is
// the request's route template (or RouteUnknown), and values, if not nil,
// the framework's per-request values (see View). It returns r, with the
// reservation in its context under Config.Estimates.
func (m *Middleware) DecideHTTP(w http.ResponseWriter, r *http.Request, route string, values interface{ Get(key string) any }) (*http.Request, Verdict) {
	return m.decideHTTP(w, r, route, nil, values)
}

// DecideHTTPUnrouted is DecideHTTP where the framework has not routed the
// request yet: find returns the template of the route r will match (see
// View.Route), "" if none, RouteUnknown if it cannot tell. It is called
// only if a rule needs the route.
func (m *Middleware) DecideHTTPUnrouted(w http.ResponseWriter, r *http.Request, find func(r *http.Request) string, values interface{ Get(key string) any }) (*http.Request, Verdict) {
	return m.decideHTTP(w, r, "", find, values)
}

func (m *Middleware) decideHTTP(w http.ResponseWriter, r *http.Request, route string, find func(*http.Request) string, values valueGetter) (*http.Request, Verdict) {
	req := m.acquire(nil, values)
	s := &req.std
	s.w, s.r, s.route, s.find = w, r, route, find
	req.view = s
	v := m.decide(req, s)
	m.release(req)
	if v.Reservation != nil {
		r = r.WithContext(v.Context(r.Context()))
	}
	return r, v
}

// stdExchange is the View and Writer of a net/http request. It lives inside
// the pooled Request, so deciding allocates no view.
type stdExchange struct {
	w     http.ResponseWriter
	h     http.Header
	r     *http.Request
	route string
	find  func(*http.Request) string // finds route when it is first asked for, if set
	host  string                     // the host part of RemoteAddr, once Peer has run
	vals  []string                   // backing for the header values set, carved one by one
	slab  []oneValue                 // what is left of the slab allowed requests' fields are carved from
}

func (s *stdExchange) Context() context.Context { return s.r.Context() }

// Peer reads RemoteAddr, "host:port" as net/http sets it, or a bare host as
// some servers and tests give (a Unix socket's "@"). It keeps the host's
// text, a part of RemoteAddr: see Request.clientText.
func (s *stdExchange) Peer() netip.Addr {
	// The commonest peer by far, "a.b.c.d:port", is read in one pass.
	if a, host, ok := parsePeer4(s.r.RemoteAddr); ok {
		s.host = host
		return a
	}
	host := s.r.RemoteAddr
	// A bare IPv4 address or socket name has no colon: skip SplitHostPort,
	// whose error would cost an allocation per request.
	if strings.IndexByte(host, ':') >= 0 {
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
	}
	s.host = host
	a, _ := netip.ParseAddr(host)
	return a
}

// parsePeer4 reads RemoteAddr as an IPv4 address, alone or with a port:
// what net.SplitHostPort and netip.ParseAddr make of it, in one pass
// (FuzzPeer4 holds the two to each other). ok is false for anything else,
// which the general path reads.
func parsePeer4(ra string) (a netip.Addr, host string, ok bool) {
	var ip [4]byte
	field, digits, v := 0, 0, 0
	i := 0
	for ; i < len(ra) && ra[i] != ':'; i++ {
		switch c := ra[i]; {
		case c >= '0' && c <= '9':
			if digits == 1 && v == 0 {
				return netip.Addr{}, "", false // a leading zero
			}
			if v = v*10 + int(c-'0'); v > 255 {
				return netip.Addr{}, "", false
			}
			digits++
		case c == '.' && digits > 0 && field < 3:
			ip[field] = byte(v)
			field, digits, v = field+1, 0, 0
		default:
			return netip.Addr{}, "", false
		}
	}
	if field != 3 || digits == 0 {
		return netip.Addr{}, "", false
	}
	// SplitHostPort refuses a second colon or a bracket anywhere (a loop:
	// strings.ContainsAny would cost more than the rest of the read).
	for j := i + 1; j < len(ra); j++ {
		if c := ra[j]; c == ':' || c == '[' || c == ']' {
			return netip.Addr{}, "", false
		}
	}
	ip[3] = byte(v)
	return netip.AddrFrom4(ip), ra[:i], true
}

func (s *stdExchange) Header(name string) string         { return s.r.Header.Get(name) }
func (s *stdExchange) HeaderValues(name string) []string { return s.r.Header.Values(name) }
func (s *stdExchange) Method() string                    { return s.r.Method }
func (s *stdExchange) Path() string                      { return s.r.URL.Path }

func (s *stdExchange) Route() string {
	if s.find != nil {
		s.route, s.find = s.find(s.r), nil
	}
	return s.route
}

func (s *stdExchange) header() http.Header {
	if s.h == nil {
		s.h = s.w.Header()
	}
	return s.h
}

// setFields sets RateLimit-Policy to policy, unless it is empty, and the
// fields f holds, leaving room for extra more fields (see SetHeader). Every
// field gets a value slice of its own, which a later handler may write into
// without touching another response: one allocation for all of them, their
// text carved from r's slab. The commonest answer, an allowed request's two
// fields, is setAllowedFields'.
func (s *stdExchange) setFields(r *Request, policy string, f *fields, extra int) {
	n := f.n + extra
	if policy != "" {
		n++
	}
	if len(s.vals) < n {
		s.vals = make([]string, n)
	}
	if policy != "" {
		s.SetHeader(hdrPolicy, policy)
	}
	each(f, r.carve(f.text), s.SetHeader)
}

// setAllowedFields is setFields for the commonest answer, an allowed
// request's IETF RateLimit and RateLimit-Policy where no earlier middleware
// set them: RateLimit's value is written straight into a oneValue. It
// reports false, having set nothing, for any other answer.
func (s *stdExchange) setAllowedFields(m *Middleware, r *Request, d *core.Decision, t int64) bool {
	h := s.header()
	if len(h[hdrRateLimit]) != 0 || len(h[hdrPolicy]) != 0 {
		return false
	}
	if len(s.slab) == 0 {
		s.slab = make([]oneValue, oneValuesPerSlab)
	}
	v := &s.slab[0]
	f := fields{text: v.text[:0:len(v.text)]}
	m.render(&f, d, t)
	if len(f.text) == 0 || unsafe.SliceData(f.text) != &v.text[0] {
		return false // longer than a oneValue holds: render moved it
	}
	s.slab = s.slab[1:]
	v.vals[0] = unsafe.String(&v.text[0], len(f.text)) // v.text is never written again
	v.vals[1] = m.policyValue(r)
	h[hdrRateLimit] = v.vals[0:1:1]
	h[hdrPolicy] = v.vals[1:2:2]
	return true
}

// oneValue is the values of an allowed request's two fields, and the text
// of the first. They are carved from slabs of oneValuesPerSlab, each
// response's its own: one allocation serves that many responses, and a
// slab is freed once the last of them is. A slab of 8 takes 512 bytes, the
// most an object with pointers takes without an allocation header: 64
// bytes a response, as one oneValue each would.
const oneValuesPerSlab = 8

type oneValue struct {
	vals [2]string
	text [32]byte
}

// SetHeader stores the value as a one-element slice carved from a shared
// backing array (see setFields): one allocation for all the fields of a
// response. Each slice has its capacity capped, so a later Header.Add copies
// rather than writes into its neighbour.
func (s *stdExchange) SetHeader(key, value string) {
	if len(s.vals) == 0 {
		s.vals = make([]string, 4)
	}
	s.vals[0] = value
	s.header()[key] = s.vals[:1:1]
	s.vals = s.vals[1:]
}

func (s *stdExchange) ResponseHeader(key string) string {
	switch vs := s.header()[key]; len(vs) {
	case 0:
		return ""
	case 1:
		return vs[0]
	default:
		return strings.Join(vs, ", ")
	}
}

func (s *stdExchange) WriteResponse(status int, contentType string, body []byte) {
	if contentType != "" {
		s.SetHeader(hdrContentType, contentType)
	}
	s.w.WriteHeader(status)
	_, _ = s.w.Write(body) // a failed write is the client's problem; nothing to do
}

// ReservationFrom returns the reservation a Config.Estimates middleware put in
// the request context, or nil. The handler settles it with Reconcile.
func ReservationFrom(ctx context.Context) *core.Reservation {
	res, _ := ctx.Value(reservationKey{}).(*core.Reservation)
	return res
}
