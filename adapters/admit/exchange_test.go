package admit

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// testExchange is a View and Writer over net/http's types, for this
// package's tests: package httplimit has the real one, which would import
// this package.
type testExchange struct {
	w     http.ResponseWriter
	r     *http.Request
	route string
	ValueGetter
}

// decideHTTP decides r through e as httplimit's DecideHTTP does, with
// values as the framework's per-request values if not nil.
func decideHTTP(e *Engine, w http.ResponseWriter, r *http.Request, route string, values ValueGetter) (*http.Request, Verdict) {
	x := &testExchange{w: w, r: r, route: route, ValueGetter: values}
	var v Verdict
	if values != nil {
		v = e.Decide(x, x)
	} else {
		v = e.Decide(plainExchange{x}, x)
	}
	if v.Reservation != nil {
		r = r.WithContext(v.Context(r.Context()))
	}
	return r, v
}

// plainExchange is a testExchange that is no ValueGetter.
type plainExchange struct{ x *testExchange }

func (p plainExchange) Context() context.Context       { return p.x.Context() }
func (p plainExchange) Peer() netip.Addr               { return p.x.Peer() }
func (p plainExchange) Header(n string) string         { return p.x.Header(n) }
func (p plainExchange) HeaderValues(n string) []string { return p.x.HeaderValues(n) }
func (p plainExchange) Method() string                 { return p.x.Method() }
func (p plainExchange) Path() string                   { return p.x.Path() }
func (p plainExchange) Route() string                  { return p.x.Route() }

func (x *testExchange) Context() context.Context { return x.r.Context() }

func (x *testExchange) Peer() netip.Addr {
	host := x.r.RemoteAddr
	if strings.IndexByte(host, ':') >= 0 {
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
	}
	a, _ := netip.ParseAddr(host)
	return a
}

func (x *testExchange) Header(name string) string         { return x.r.Header.Get(name) }
func (x *testExchange) HeaderValues(name string) []string { return x.r.Header.Values(name) }
func (x *testExchange) Method() string                    { return x.r.Method }
func (x *testExchange) Path() string                      { return x.r.URL.Path }
func (x *testExchange) Route() string                     { return x.route }

func (x *testExchange) SetHeader(key, value string) { x.w.Header()[key] = []string{value} }

func (x *testExchange) ResponseHeader(key string) string {
	return strings.Join(x.w.Header()[key], ", ")
}

func (x *testExchange) WriteResponse(status int, contentType string, body []byte) {
	if contentType != "" {
		x.SetHeader("Content-Type", contentType)
	}
	x.w.WriteHeader(status)
	_, _ = x.w.Write(body)
}
