package httplimittest

import (
	"testing"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
)

// clientCases returns the cases of store failures, and client addresses
// behind proxies.
func clientCases() []Case {
	return []Case{
		{Name: "store failure/fail open", Config: func(t *testing.T, e *Env) admit.Config {
			return admit.Config{Limiter: e.Limiter(t, FailingStore{}), Rules: []admit.Rule{{Policy: PerIP, Key: admit.ClientIP()}}}
		}, Steps: []Step{
			{Times: 12, Want: Want{Status: 200, Header: noFields, Body: "ok"}, Outcome: outcome(core.StoreFailed)},
		}},
		{Name: "store failure/fail closed", Config: func(t *testing.T, e *Env) admit.Config {
			return admit.Config{
				Limiter: e.Limiter(t, FailingStore{}, core.WithFailClosed(0)),
				Rules:   []admit.Rule{{Policy: PerIP, Key: admit.ClientIP()}},
			}
		}, Steps: []Step{
			{Want: Want{Status: 503, Header: map[string]string{
				"Retry-After": "1", "Cache-Control": "no-store", "Content-Type": ProblemType, "RateLimit": "", "RateLimit-Policy": "",
			}, Body: UnavailableBody}, Outcome: outcome(core.StoreFailed)},
		}},
		{Name: "store failure/fallback store", Config: func(t *testing.T, e *Env) admit.Config {
			return admit.Config{
				Limiter: e.Limiter(t, FailingStore{}, core.WithFailClosed(0), core.WithFallback(e.Store, 1)),
				Rules:   []admit.Rule{{Policy: PerIP, Key: admit.ClientIP()}},
			}
		}, Steps: []Step{
			{Times: 10, Want: Want{Status: 200, Header: allowed(0, 5)}, Outcome: outcome(core.StoreFailed)},
			{Want: Want{Status: 429, Header: denied(), Body: QuotaProblem}},
		}},
		{Name: "client ip/spoofed X-Forwarded-For from untrusted peer", Config: perIP(trusting("X-Forwarded-For")), Steps: []Step{
			{Req: Req{Remote: "203.0.113.5:1234", Header: hdr("X-Forwarded-For", "198.51.100.1")}, Times: 10, Want: Want{Status: 200}, Key: "203.0.113.5"},
			{Req: Req{Remote: "203.0.113.5:1234", Header: hdr("X-Forwarded-For", "198.51.100.2")}, Want: Want{Status: 429, Header: denied()}, Key: "203.0.113.5"},
		}},
		{Name: "client ip/trusted proxy honoured", Config: perIP(trusting("X-Forwarded-For")), Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.7, 10.0.0.2")}, Times: 10, Want: Want{Status: 200}, Key: "198.51.100.7"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.7, 10.0.0.2")}, Want: Want{Status: 429, Header: denied()}},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.8, 10.0.0.2")}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "198.51.100.8"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "203.0.113.9, 198.51.100.8")}, Want: Want{Status: 200, Header: allowed(8, 1)}, Key: "198.51.100.8"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.9", "X-Forwarded-For", "10.0.0.3")}, Want: Want{Status: 200}, Key: "198.51.100.9"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "10.0.0.4, 10.0.0.3")}, Want: Want{Status: 200}, Key: "10.0.0.4"},
			{Req: Req{Remote: trustedProxyPeer}, Want: Want{Status: 200}, Key: "10.0.0.1"},
		}},
		{Name: "client ip/malformed X-Forwarded-For", Config: perIP(trusting("X-Forwarded-For")), Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.7, not-an-ip")}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.7, not-an-ip, 10.0.0.2")}, Want: Want{Status: 200}, Key: "10.0.0.2"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "not-an-ip, 198.51.100.9:4711")}, Want: Want{Status: 200}, Key: "198.51.100.9"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", " , ,")}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "[2001:db8::1], 300.1.2.3")}, Want: Want{Status: 200}, Key: "10.0.0.1"},
		}},
		{Name: "client ip/Forwarded", Config: perIP(trusting("Forwarded")), Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for=192.0.2.60;proto=http, For="[2001:db8:cafe::17]:4711";by=10.0.0.1`)}, Want: Want{Status: 200}, Key: "2001:db8:cafe::/64"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for="198.51.100.3:80", for=10.0.0.2`)}, Want: Want{Status: 200}, Key: "198.51.100.3"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for=198.51.100.1, for=unknown`)}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for=198.51.100.1, for=_hidden;proto=https`)}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `proto=https`)}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for="198.51.100.1`)}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.50")}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: "203.0.113.5:1", Header: hdr("Forwarded", "for=198.51.100.1")}, Want: Want{Status: 200}, Key: "203.0.113.5"},
		}},
		{Name: "client ip/X-Real-IP", Config: perIP(trusting("X-Real-IP")), Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Real-IP", "198.51.100.4")}, Want: Want{Status: 200}, Key: "198.51.100.4"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Real-IP", "bogus")}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: "[2001:db8:ffff::1]:443", Header: hdr("X-Real-IP", "198.51.100.5")}, Want: Want{Status: 200}, Key: "198.51.100.5"},
			{Req: Req{Remote: "203.0.113.5:1", Header: hdr("X-Real-IP", "198.51.100.4")}, Want: Want{Status: 200}, Key: "203.0.113.5"},
		}},
		// A proxy that appends its element to the client's own field line
		// (nginx's "$http_forwarded, for=$remote_addr") or adds a line of its
		// own: nothing the client wrote before may choose the key.
		{Name: "client ip/Forwarded after a client's malformed element", Config: perIP(trusting("Forwarded")), Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for=203.0.113.66;by=", for=198.51.100.7`)}, Times: 10, Want: Want{Status: 200}, Key: "198.51.100.7"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for=203.0.113.67;by=", for=198.51.100.7`)}, Want: Want{Status: 429, Header: denied()}, Key: "198.51.100.7"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for="198.51.100.1, for=198.51.100.8`)}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "198.51.100.8"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for=203.0.113.66;by="`, "Forwarded", "for=198.51.100.9")}, Want: Want{Status: 200}, Key: "198.51.100.9"},
			// Two proxies: the inner one appends to the client's line, the
			// outer one (the peer) adds a line.
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for="x\", for=198.51.100.10;proto=https`, "Forwarded", "for=10.0.0.2")}, Want: Want{Status: 200}, Key: "198.51.100.10"},
			// The element the proxy wrote cannot be read: the peer is the client.
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for=198.51.100.11, for="[2001:db8::1`)}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for=198.51.100.12, for=198.51.100.13:80`)}, Want: Want{Status: 200}, Key: "10.0.0.1"},
		}},
		{Name: "client ip/X-Forwarded-For after a client's malformed element", Config: perIP(trusting("X-Forwarded-For")), Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", `"203.0.113.66, 198.51.100.7`)}, Times: 10, Want: Want{Status: 200}, Key: "198.51.100.7"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", `[203.0.113.67, 198.51.100.7`)}, Want: Want{Status: 429, Header: denied()}, Key: "198.51.100.7"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "203.0.113.66,", "X-Forwarded-For", "198.51.100.8")}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "198.51.100.8"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "203.0.113.66, 198.51.100.9", "X-Forwarded-For", "10.0.0.2")}, Want: Want{Status: 200}, Key: "198.51.100.9"},
		}},
		{Name: "client ip/X-Real-IP after a client's own", Config: perIP(trusting("X-Real-IP")), Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Real-IP", "203.0.113.66", "X-Real-IP", "198.51.100.7")}, Times: 10, Want: Want{Status: 200}, Key: "198.51.100.7"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Real-IP", "203.0.113.67, 198.51.100.7")}, Want: Want{Status: 429, Header: denied()}, Key: "198.51.100.7"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Real-IP", `"203.0.113.66`, "X-Real-IP", "198.51.100.8")}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "198.51.100.8"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Real-IP", "198.51.100.9", "X-Real-IP", "bogus")}, Want: Want{Status: 200}, Key: "10.0.0.1"},
		}},
		{Name: "client ip/IPv6 by /64", Config: perIP(nil), Steps: []Step{
			{Req: Req{Remote: "[2001:db8:1:2::1]:1234"}, Times: 10, Want: Want{Status: 200}, Key: "2001:db8:1:2::/64"},
			{Req: Req{Remote: "[2001:db8:1:2:ffff::9]:1"}, Want: Want{Status: 429, Header: denied()}},
			{Req: Req{Remote: "[2001:db8:1:3::1]:1"}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "2001:db8:1:3::/64"},
		}},
		{Name: "client ip/IPv6 prefix configured", Config: perIP(func(c *admit.Config) { c.IPv6Prefix = 128 }), Steps: []Step{
			{Req: Req{Remote: "[2001:db8:1:2::1]:1234"}, Want: Want{Status: 200}, Key: "2001:db8:1:2::1"},
		}},
		{Name: "client ip/IPv4-mapped IPv6", Config: perIP(nil), Steps: []Step{
			{Req: Req{Remote: "[::ffff:192.0.2.1]:1234"}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "192.0.2.1"},
			{Want: Want{Status: 200, Header: allowed(8, 1)}},
		}},
	}
}
