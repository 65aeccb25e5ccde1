package httplimit

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"unsafe"

	"github.com/sluice-go/sluice/adapters/admit"
)

// DecideHTTP decides r for a framework built on net/http's types: route is
// the request's route template (or admit.RouteUnknown), and values, if not
// nil, the framework's per-request values (see admit.ValueGetter). It
// returns r, with the reservation in its context under
// admit.Config.Estimates.
func (m *Middleware) DecideHTTP(w http.ResponseWriter, r *http.Request, route string, values admit.ValueGetter) (*http.Request, admit.Verdict) {
	return m.decideHTTP(w, r, route, nil, values)
}

// DecideHTTPUnrouted is DecideHTTP where the framework has not routed the
// request yet: find returns the template of the route r will match, "" if
// none, admit.RouteUnknown if it cannot tell. It is called only if a rule
// needs the route.
func (m *Middleware) DecideHTTPUnrouted(w http.ResponseWriter, r *http.Request, find func(r *http.Request) string, values admit.ValueGetter) (*http.Request, admit.Verdict) {
	return m.decideHTTP(w, r, "", find, values)
}

func (m *Middleware) decideHTTP(w http.ResponseWriter, r *http.Request, route string, find func(*http.Request) string, values admit.ValueGetter) (*http.Request, admit.Verdict) {
	x, _ := m.exchanges.Get().(*exchange)
	if x == nil {
		x = new(exchange)
	}
	x.w, x.r, x.route, x.find, x.values = w, r, route, find, values
	var v admit.Verdict
	if values != nil {
		v = m.Engine.Decide(valuesExchange{x}, x)
	} else {
		v = m.Engine.Decide(x, x)
	}
	*x = exchange{vals: x.vals, text: x.text} // the slabs serve the next requests
	m.exchanges.Put(x)
	if v.Reservation != nil {
		r = r.WithContext(v.Context(r.Context()))
	}
	return r, v
}

// exchange is the admit.View and admit.Writer of a net/http request, pooled
// by the Middleware, so deciding allocates no view.
type exchange struct {
	w      http.ResponseWriter
	h      http.Header
	r      *http.Request
	route  string
	find   func(*http.Request) string // finds route when it is first asked for, if set
	values admit.ValueGetter
	host   string   // the host part of RemoteAddr, once Peer has run
	vals   []string // what is left of the slab field values are carved from
	text   []byte   // what is left of the slab their text is carved from
}

// valuesExchange is an exchange whose framework keeps per-request values
// (admit.ValueGetter): a View of its own, so that an exchange without them
// does not claim to have them.
type valuesExchange struct{ *exchange }

// Get returns the framework's value for key.
func (v valuesExchange) Get(key string) any { return v.values.Get(key) }

func (x *exchange) Context() context.Context { return x.r.Context() }

// Peer reads RemoteAddr, "host:port" as net/http sets it, or a bare host as
// some servers and tests give (a Unix socket's "@"). It keeps the host's
// text, a part of RemoteAddr: see PeerText.
func (x *exchange) Peer() netip.Addr {
	// The commonest peer by far, "a.b.c.d:port", is read in one pass.
	if a, host, ok := parsePeer4(x.r.RemoteAddr); ok {
		x.host = host
		return a
	}
	host := x.r.RemoteAddr
	// A bare IPv4 address or socket name has no colon: skip SplitHostPort,
	// whose error would cost an allocation per request.
	if strings.IndexByte(host, ':') >= 0 {
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
	}
	x.host = host
	a, _ := netip.ParseAddr(host)
	return a
}

// PeerText returns the peer's IPv4 address as RemoteAddr writes it, which
// net/http never changes (see admit.PeerTexter).
func (x *exchange) PeerText() string { return x.host }

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

func (x *exchange) Header(name string) string         { return x.r.Header.Get(name) }
func (x *exchange) HeaderValues(name string) []string { return x.r.Header.Values(name) }
func (x *exchange) Method() string                    { return x.r.Method }
func (x *exchange) Path() string                      { return x.r.URL.Path }

func (x *exchange) Route() string {
	if x.find != nil {
		x.route, x.find = x.find(x.r), nil
	}
	return x.route
}

func (x *exchange) header() http.Header {
	if x.h == nil {
		x.h = x.w.Header()
	}
	return x.h
}

// Slab sizes: a response sets two to five fields of about 20 to 60 bytes,
// so one slab of each serves about ten responses. Each slab is freed once
// the last response whose values it holds is.
const (
	valsPerSlab = 32
	textPerSlab = 512
	maxCarved   = 128 // a longer value is copied on its own
)

// SetHeader replaces a response field with a one-element slice carved from
// a slab: every response's values are its own, which a later handler may
// write into, and each slice's capacity is capped, so that Header.Add
// copies rather than writes into its neighbour.
func (x *exchange) SetHeader(key, value string) {
	if len(x.vals) == 0 {
		x.vals = make([]string, valsPerSlab)
	}
	x.vals[0] = value
	x.header()[key] = x.vals[:1:1]
	x.vals = x.vals[1:]
}

// SetHeaderBytes is SetHeader for a value given as bytes, its text carved
// from a slab that is never written again where a value was carved.
func (x *exchange) SetHeaderBytes(key string, value []byte) {
	if len(value) > maxCarved {
		x.SetHeader(key, string(value))
		return
	}
	if len(x.text) < len(value) {
		x.text = make([]byte, textPerSlab)
	}
	n := copy(x.text, value)
	x.SetHeader(key, unsafe.String(unsafe.SliceData(x.text), n))
	x.text = x.text[n:]
}

func (x *exchange) ResponseHeader(key string) string {
	switch vs := x.header()[key]; len(vs) {
	case 0:
		return ""
	case 1:
		return vs[0]
	default:
		return strings.Join(vs, ", ")
	}
}

func (x *exchange) WriteResponse(status int, contentType string, body []byte) {
	if contentType != "" {
		x.SetHeader("Content-Type", contentType)
	}
	x.w.WriteHeader(status)
	_, _ = x.w.Write(body) // a failed write is the client's problem; nothing to do
}
