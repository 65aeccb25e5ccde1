package httplimittest

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
)

// The table's policies: the reference's worked example (a token bucket of 10
// refilled at 2/s, so w = 5 s), a login limit (3 per minute, fixed window),
// and an API-key and a user limit (buckets of 5 refilled at 5/s, w = 1 s).
var (
	PerIP   = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})
	Login   = core.MustPolicy(core.PolicyConfig{Name: "login", Algorithm: core.FixedWindow, Quota: 3, Period: time.Minute})
	PerKey  = core.MustPolicy(core.PolicyConfig{Name: "per-key", Algorithm: core.TokenBucket, Quota: 5, Period: time.Second, Burst: 5})
	PerUser = core.MustPolicy(core.PolicyConfig{Name: "per-user", Algorithm: core.TokenBucket, Quota: 5, Period: time.Second, Burst: 5})
)

// LoginFailures limits failed logins (with a Charge of status >= 400): 3
// per minute, a GCRA bucket of 3 refilled every 20 s.
var LoginFailures = core.MustPolicy(core.PolicyConfig{Name: "login-failures", Algorithm: core.GCRA, Quota: 3, Period: time.Minute, Burst: 3})

// The plans a Select function chooses among by API key: free (2 per
// minute), pro (5 per minute) and internal (100 per second).
var (
	Free     = core.MustPolicy(core.PolicyConfig{Name: "free", Algorithm: core.GCRA, Quota: 2, Period: time.Minute, Burst: 2})
	Pro      = core.MustPolicy(core.PolicyConfig{Name: "pro", Algorithm: core.GCRA, Quota: 5, Period: time.Minute, Burst: 5})
	Internal = core.MustPolicy(core.PolicyConfig{Name: "internal", Algorithm: core.TokenBucket, Quota: 100, Period: time.Second, Burst: 100})
)

// Exact values the table expects.
const (
	PerIPPolicy      = `"per-ip";q=10;w=5`
	LoginPolicy      = `"login";q=3;w=60`
	FailuresPolicy   = `"login-failures";q=3;w=60`
	UserPolicy       = `"per-user";q=5;w=1`
	QuotaProblem     = `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded; retry after 1 second.","violated-policies":["per-ip"]}`
	UnavailableBody  = `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"Rate limiting is temporarily unavailable; retry after 1 second."}`
	InternalBody     = `{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"The request could not be checked against its rate limits."}`
	ProblemType      = "application/problem+json"
	trustedProxyPeer = "10.0.0.1:4000"
)

// Cases returns the behaviour table.
func Cases() []Case {
	const login = "/login"
	post := http.MethodPost
	return append([]Case{
		{Name: "ietf/allowed", Config: perIP(nil), Steps: []Step{
			{Want: Want{Status: 200, Header: allowed(9, 1), Body: "ok"}, Key: "192.0.2.1", Outcome: outcome(core.Allowed)},
		}},
		{Name: "ietf/t is the time until full", Config: perIP(nil), Steps: []Step{
			{Times: 5, Want: Want{Status: 200, Header: allowed(5, 3)}},
			{Advance: 600 * time.Millisecond, Want: Want{Status: 200, Header: allowed(5, 3)}},
		}},
		{Name: "ietf/denied then refilled", Config: perIP(nil), Steps: []Step{
			{Times: 10, Want: Want{Status: 200, Header: allowed(0, 5)}, Outcome: outcome(core.NearLimit)},
			{Times: 3, Want: Want{Status: 429, Header: denied(), Body: QuotaProblem}, Outcome: outcome(core.Denied)},
			{Advance: 500 * time.Millisecond, Want: Want{Status: 200, Header: allowed(0, 5), Body: "ok"}},
		}},
		{Name: "draft headers", Config: perIP(func(c *httplimit.Config) { c.Headers = "draft" }), Steps: []Step{
			{Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Limit": "10", "RateLimit-Remaining": "9", "RateLimit-Reset": "1", "RateLimit": "", "RateLimit-Policy": "",
			}}},
			{Times: 9, Want: Want{Status: 200, Header: map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": "5"}}},
			{Want: Want{Status: 429, Header: map[string]string{
				"RateLimit-Limit": "10", "RateLimit-Remaining": "0", "RateLimit-Reset": "1", "Retry-After": "1", "Cache-Control": "no-store",
			}}},
		}},
		{Name: "legacy headers", Config: perIP(func(c *httplimit.Config) { c.Headers = "legacy" }), Steps: []Step{
			{Want: Want{Status: 200, Header: map[string]string{
				"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": "1893456001", "RateLimit": "",
			}}},
			{Advance: 250 * time.Millisecond, Times: 9, Want: Want{Status: 200, Header: map[string]string{
				"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1893456006",
			}}},
		}},
		{Name: "no headers", Config: perIP(func(c *httplimit.Config) { c.Headers = "none" }), Steps: []Step{
			{Times: 10, Want: Want{Status: 200, Header: noFields}},
			{Want: Want{Status: 429, Header: map[string]string{"Retry-After": "1", "RateLimit": "", "RateLimit-Policy": ""}, Body: QuotaProblem}},
		}},
		{Name: "skip middleware", Config: perIP(func(c *httplimit.Config) {
			c.Skip = func(r *httplimit.Request) bool { return r.Path() == "/other" }
		}), Steps: []Step{
			{Req: Req{Path: "/other"}, Times: 12, Want: Want{Status: 200, Header: noFields}},
			{Want: Want{Status: 200, Header: allowed(9, 1)}},
		}},
		{Name: "skip rule", Config: perIP(func(c *httplimit.Config) {
			c.Rules[0].Skip = func(r *httplimit.Request) bool { return r.Header("X-Internal") == "yes" }
		}), Steps: []Step{
			{Req: Req{Header: hdr("X-Internal", "yes")}, Times: 12, Want: Want{Status: 200, Header: noFields}},
			{Want: Want{Status: 200, Header: allowed(9, 1)}},
		}},
		{Name: "key isolation", Config: perIP(nil), Steps: []Step{
			{Times: 10, Want: Want{Status: 200}},
			{Want: Want{Status: 429, Header: denied()}},
			{Req: Req{Remote: "192.0.2.2:1234"}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "192.0.2.2"},
		}},
		{Name: "cost", Config: perIP(func(c *httplimit.Config) { c.Rules[0].Cost = headerCost }), Steps: []Step{
			{Req: Req{Header: hdr("X-Cost", "4")}, Want: Want{Status: 200, Header: allowed(6, 2)}},
			{Req: Req{Header: hdr("X-Cost", "7")}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit": rl("per-ip", 6, 1), "Retry-After": "1",
			}}},
			{Req: Req{Header: hdr("X-Cost", "6")}, Want: Want{Status: 200, Header: allowed(0, 5)}},
		}},
		{Name: "cost zero is free", Config: perIP(func(c *httplimit.Config) { c.Rules[0].Cost = headerCost }), Steps: []Step{
			{Req: Req{Header: hdr("X-Cost", "0")}, Times: 12, Want: Want{Status: 200, Header: noFields}},
			{Want: Want{Status: 200, Header: allowed(9, 1)}},
		}},
		{Name: "impossible cost", Config: perIP(func(c *httplimit.Config) { c.Rules[0].Cost = headerCost }), Steps: []Step{
			{Req: Req{Header: hdr("X-Cost", "11")}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit": rl("per-ip", 10, 0), "Retry-After": "", "Cache-Control": "no-store", "Content-Type": ProblemType,
			}, Body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"The request costs 11 units, more than policy per-ip ever grants at once (10); retrying will not help.","violated-policies":["per-ip"]}`}},
			{Want: Want{Status: 200, Header: allowed(9, 1)}},
		}},
		{Name: "layered/policies listed per route", Config: layered, Steps: []Step{
			{Want: Want{Status: 200, Header: allowed(9, 1)}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": PerIPPolicy + ", " + LoginPolicy,
				"RateLimit":        rl("login", 2, 60),
			}}},
		}},
		{Name: "layered/denial takes nothing", Config: layered, Steps: []Step{
			{Req: Req{Method: post, Path: login}, Times: 3, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("login", 0, 60)}}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit-Policy": PerIPPolicy + ", " + LoginPolicy,
				"RateLimit":        rl("login", 0, 60),
				"Retry-After":      "60",
			}, Body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded; retry after 60 seconds.","violated-policies":["login"]}`}},
			// Three logins took 3 from per-ip, the denied one nothing.
			{Want: Want{Status: 200, Header: allowed(6, 2)}},
		}},
		{Name: "layered/both violated", Config: layered, Steps: []Step{
			{Req: Req{Method: post, Path: login}, Times: 3, Want: Want{Status: 200}},
			{Times: 7, Want: Want{Status: 200, Header: allowed(0, 5)}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit": rl("login", 0, 60), "Retry-After": "60",
			}, Body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded; retry after 60 seconds.","violated-policies":["per-ip","login"]}`}},
		}},
		// Routes: "METHOD /template" or "/template", the template as the
		// framework writes it, mean the same with every adapter.
		{Name: "routes/method and template", Config: loginOn("POST /login"), Steps: []Step{
			{Req: Req{Path: login}, Want: Want{Status: 200, Header: allowed(9, 1)}},
			{Req: Req{Method: post, Path: login}, Times: 3, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": PerIPPolicy + ", " + LoginPolicy, "RateLimit": rl("login", 0, 60),
			}}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 429}},
			{Req: Req{Path: login}, Want: Want{Status: 200, Header: allowed(5, 3)}},
		}},
		{Name: "routes/any method", Config: loginOn("/login"), Steps: []Step{
			{Req: Req{Path: login}, Times: 2, Want: Want{Status: 200, Header: map[string]string{"RateLimit-Policy": PerIPPolicy + ", " + LoginPolicy}}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("login", 0, 60)}}},
			{Req: Req{Method: http.MethodPut, Path: login}, Want: Want{Status: 429}},
			{Want: Want{Status: 200, Header: allowed(6, 2)}},
		}},
		{Name: "routes/HEAD counts as GET", Config: loginOn("GET /login"), Steps: []Step{
			{Req: Req{Method: http.MethodHead, Path: login}, Times: 3, Want: Want{Status: 200, Header: map[string]string{"RateLimit-Policy": PerIPPolicy + ", " + LoginPolicy}}},
			{Req: Req{Path: login}, Want: Want{Status: 429}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 200, Header: allowed(6, 2)}},
		}},
		{Name: "routes/templated route", Config: func(t *testing.T, e *Env) httplimit.Config {
			return loginOn("GET "+e.ItemRoute)(t, e)
		}, Steps: []Step{
			{Req: Req{Path: "/items/1"}, Times: 2, Want: Want{Status: 200, Header: map[string]string{"RateLimit-Policy": PerIPPolicy + ", " + LoginPolicy}}},
			{Req: Req{Path: "/items/2"}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("login", 0, 60)}}},
			{Req: Req{Path: "/items/3"}, Want: Want{Status: 429}},
			{Req: Req{Method: post, Path: "/items/3"}, Want: Want{Status: 200, Header: allowed(6, 2)}},
			{Req: Req{Path: "/other"}, Want: Want{Status: 200, Header: allowed(5, 3)}},
		}},
		// A request no route matches is not an error: rules with Routes and
		// Route keys leave it alone, whether or not the middleware runs.
		{Name: "routes/no route", Config: func(t *testing.T, e *Env) httplimit.Config {
			cfg := loginOn("POST /login")(t, e)
			cfg.Rules = append(cfg.Rules, httplimit.Rule{Policy: PerKey, Key: httplimit.Join(httplimit.ClientIP(), httplimit.Route())})
			return cfg
		}, Steps: []Step{
			{Req: Req{Method: post, Path: "/nope/x"}, Want: Want{Status: 404}},
			{Req: Req{Path: "/nope"}, Want: Want{Status: 404}},
		}},
		// Where the framework has not routed the request yet, a rule with
		// Routes cannot tell whether it applies: it fails the request,
		// whatever the route, rather than never matching.
		{Name: "routes/unknown route fails loudly", Blind: true, Config: loginOn("POST /login"), Steps: []Step{
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 500, Header: map[string]string{
				"Content-Type": ProblemType, "Cache-Control": "no-store", "RateLimit": "", "RateLimit-Policy": "",
			}, Body: InternalBody}},
			{Req: Req{Path: "/other"}, Want: Want{Status: 500, Body: InternalBody}},
		}},
		{Name: "routes/unknown route reaches OnError", Blind: true, Config: func(t *testing.T, e *Env) httplimit.Config {
			cfg := loginOn("POST /login")(t, e)
			cfg.OnError = func(_ *httplimit.Request, err error) *httplimit.Response {
				return &httplimit.Response{Status: http.StatusNotImplemented, Body: []byte(err.Error())}
			}
			return cfg
		}, Steps: []Step{
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 501,
				Body: "httplimit: rule 1 (login) has Routes: httplimit: the route is not known where the middleware runs"}},
		}},
		{Name: "routes/unknown route fails a Route key", Blind: true, Config: func(t *testing.T, e *Env) httplimit.Config {
			return httplimit.Config{Limiter: e.Limiter(t, nil), Rules: []httplimit.Rule{{Policy: PerKey, Key: httplimit.Route()}}}
		}, Steps: []Step{
			{Req: Req{Path: login}, Want: Want{Status: 500, Body: InternalBody}},
		}},
		{Name: "routes/unknown route leaves other rules alone", Blind: true, Config: perIP(nil), Steps: []Step{
			{Req: Req{Path: login}, Want: Want{Status: 200, Header: allowed(9, 1), Body: "ok"}, Key: "192.0.2.1"},
		}},
		{Name: "store failure/fail open", Config: func(t *testing.T, e *Env) httplimit.Config {
			return httplimit.Config{Limiter: e.Limiter(t, FailingStore{}), Rules: []httplimit.Rule{{Policy: PerIP, Key: httplimit.ClientIP()}}}
		}, Steps: []Step{
			{Times: 12, Want: Want{Status: 200, Header: noFields, Body: "ok"}, Outcome: outcome(core.StoreFailed)},
		}},
		{Name: "store failure/fail closed", Config: func(t *testing.T, e *Env) httplimit.Config {
			return httplimit.Config{
				Limiter: e.Limiter(t, FailingStore{}, core.WithFailClosed(0)),
				Rules:   []httplimit.Rule{{Policy: PerIP, Key: httplimit.ClientIP()}},
			}
		}, Steps: []Step{
			{Want: Want{Status: 503, Header: map[string]string{
				"Retry-After": "1", "Cache-Control": "no-store", "Content-Type": ProblemType, "RateLimit": "", "RateLimit-Policy": "",
			}, Body: UnavailableBody}, Outcome: outcome(core.StoreFailed)},
		}},
		{Name: "store failure/fallback store", Config: func(t *testing.T, e *Env) httplimit.Config {
			return httplimit.Config{
				Limiter: e.Limiter(t, FailingStore{}, core.WithFailClosed(0), core.WithFallback(e.Store, 1)),
				Rules:   []httplimit.Rule{{Policy: PerIP, Key: httplimit.ClientIP()}},
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
		{Name: "client ip/IPv6 prefix configured", Config: perIP(func(c *httplimit.Config) { c.IPv6Prefix = 128 }), Steps: []Step{
			{Req: Req{Remote: "[2001:db8:1:2::1]:1234"}, Want: Want{Status: 200}, Key: "2001:db8:1:2::1"},
		}},
		{Name: "client ip/IPv4-mapped IPv6", Config: perIP(nil), Steps: []Step{
			{Req: Req{Remote: "[::ffff:192.0.2.1]:1234"}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "192.0.2.1"},
			{Want: Want{Status: 200, Header: allowed(8, 1)}},
		}},
		{Name: "custom deny handler", Config: perIP(func(c *httplimit.Config) {
			c.Deny = func(_ *httplimit.Request, d *httplimit.Denial) httplimit.Response {
				return httplimit.Response{Status: d.Status, ContentType: "text/plain; charset=utf-8",
					Body: fmt.Appendf(nil, "slow down %v, retry in %ds", d.Violated(), d.RetryAfter)}
			}
		}), Steps: []Step{
			{Times: 10, Want: Want{Status: 200}},
			{Want: Want{Status: 429, Header: map[string]string{
				"RateLimit": rl("per-ip", 0, 1), "Retry-After": "1", "Cache-Control": "no-store", "Content-Type": "text/plain; charset=utf-8",
			}, Body: "slow down [per-ip], retry in 1s"}},
		}},
		{Name: "custom deny handler without a status", Config: perIP(func(c *httplimit.Config) {
			c.Deny = func(*httplimit.Request, *httplimit.Denial) httplimit.Response {
				return httplimit.Response{Body: []byte("no")}
			}
		}), Steps: []Step{
			{Times: 10, Want: Want{Status: 200}},
			{Want: Want{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: "no"}},
		}},
		{Name: "shadow mode", Config: perIP(func(c *httplimit.Config) { c.Shadow = true }), Steps: []Step{
			{Times: 10, Want: Want{Status: 200}},
			{Times: 2, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": PerIPPolicy, "RateLimit": rl("per-ip", 0, 1), "Retry-After": "", "Cache-Control": "",
			}, Body: "ok"}, Outcome: outcome(core.Denied)},
		}},
		{Name: "header key", Config: func(t *testing.T, e *Env) httplimit.Config {
			return httplimit.Config{Limiter: e.Limiter(t, nil), Rules: []httplimit.Rule{{Policy: PerKey, Key: httplimit.Header("x-api-key")}}}
		}, Steps: []Step{
			{Req: Req{Header: hdr("X-API-Key", "k1")}, Times: 5, Want: Want{Status: 200}, Key: "k1"},
			{Req: Req{Header: hdr("X-API-Key", "k1")}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit-Policy": `"per-key";q=5;w=1`, "RateLimit": rl("per-key", 0, 1),
			}}},
			{Req: Req{Header: hdr("X-API-Key", "k2")}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("per-key", 4, 1)}}, Key: "k2"},
			{Times: 7, Want: Want{Status: 200, Header: noFields}}, // no key: the rule does not apply
		}},
		{Name: "user/per-user limit", Config: byUser(false), Steps: []Step{
			{Req: Req{Header: hdr(UserHeader, "ann")}, Times: 5, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": UserPolicy, "RateLimit": rl("per-user", 0, 1),
			}}, Key: "ann"},
			{Req: Req{Header: hdr(UserHeader, "ann")}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit": rl("per-user", 0, 1), "Retry-After": "1",
			}, Body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded; retry after 1 second.","violated-policies":["per-user"]}`}},
			// Another user at the same address has an allowance of its own.
			{Req: Req{Header: hdr(UserHeader, "bob")}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("per-user", 4, 1)}}, Key: "bob"},
			// Without a user, the rule does not apply.
			{Times: 7, Want: Want{Status: 200, Header: noFields}},
		}},
		{Name: "user/limit follows the user across addresses", Config: byUser(false), Steps: []Step{
			{Req: Req{Remote: "192.0.2.7:1", Header: hdr(UserHeader, "ann")}, Times: 5, Want: Want{Status: 200}},
			{Req: Req{Remote: "192.0.2.8:1", Header: hdr(UserHeader, "ann")}, Want: Want{Status: 429}},
			{Req: Req{Remote: "192.0.2.8:1", Header: hdr(UserHeader, "carol")}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("per-user", 4, 1)}}, Key: "carol"},
		}},
		{Name: "user/layered on per-ip", Config: byUser(true), Steps: []Step{
			{Req: Req{Header: hdr(UserHeader, "ann")}, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": PerIPPolicy + ", " + UserPolicy, "RateLimit": rl("per-user", 4, 1),
			}}, Key: "ann"},
			{Want: Want{Status: 200, Header: allowed(8, 1)}, Key: "192.0.2.1"},
		}},
		{Name: "joined key", Config: perIP(func(c *httplimit.Config) {
			c.Rules[0].Key = httplimit.Join(httplimit.ClientIP(), httplimit.Route())
		}), Steps: []Step{
			{Req: Req{Path: "/other"}, Times: 10, Want: Want{Status: 200}, Key: "9:192.0.2.16:/other"},
			{Req: Req{Path: login}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "9:192.0.2.16:/login"},
		}},
		{Name: "key error", Config: perIP(func(c *httplimit.Config) {
			c.Rules[0].Key = httplimit.Func(func(*httplimit.Request) (string, error) { return "", errors.New("secret: db down") })
		}), Steps: []Step{
			{Want: Want{Status: 500, Header: map[string]string{
				"Content-Type": ProblemType, "Cache-Control": "no-store", "RateLimit": "",
			}, Body: InternalBody}},
		}},
		{Name: "key error in shadow mode", Config: perIP(func(c *httplimit.Config) {
			c.Shadow = true
			c.Rules[0].Key = httplimit.Func(func(*httplimit.Request) (string, error) { return "", errors.New("db down") })
		}), Steps: []Step{
			{Want: Want{Status: 200, Header: noFields, Body: "ok"}},
		}},
		{Name: "constant key shared by all", Config: func(t *testing.T, e *Env) httplimit.Config {
			return httplimit.Config{Limiter: e.Limiter(t, nil), Rules: []httplimit.Rule{{Policy: PerIP, Key: httplimit.Const("everyone")}}}
		}, Steps: []Step{
			{Req: Req{Remote: "192.0.2.7:1"}, Times: 5, Want: Want{Status: 200}, Key: "everyone"},
			{Req: Req{Remote: "192.0.2.8:1"}, Times: 5, Want: Want{Status: 200, Header: allowed(0, 5)}},
			{Req: Req{Remote: "192.0.2.9:1"}, Want: Want{Status: 429}},
		}},
		// Policies chosen per request: free, pro and internal by API key,
		// each with its own figures in the header fields and the body.
		{Name: "policy per request/by API key", Config: plans(false), Steps: []Step{
			{Req: Req{Header: hdr("X-API-Key", "free-1")}, Times: 2, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": `"free";q=2;w=60`, "RateLimit": rl("free", 0, 60),
			}}, Key: "free-1"},
			{Req: Req{Header: hdr("X-API-Key", "free-1")}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit-Policy": `"free";q=2;w=60`, "RateLimit": rl("free", 0, 30), "Retry-After": "30",
			}, Body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded; retry after 30 seconds.","violated-policies":["free"]}`}},
			{Req: Req{Header: hdr("X-API-Key", "pro-1")}, Times: 5, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": `"pro";q=5;w=60`, "RateLimit": rl("pro", 0, 60),
			}}, Key: "pro-1"},
			{Req: Req{Header: hdr("X-API-Key", "pro-1")}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit": rl("pro", 0, 12), "Retry-After": "12",
			}}},
			{Req: Req{Header: hdr("X-API-Key", "int-1")}, Times: 50, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": `"internal";q=100;w=1`, "RateLimit": rl("internal", 50, 1),
			}}, Key: "int-1"},
			// No API key: Select says ErrNoKey, and the rule leaves the request out.
			{Times: 3, Want: Want{Status: 200, Header: noFields}},
		}},
		{Name: "policy per request/state kept per policy", Config: func(t *testing.T, e *Env) httplimit.Config {
			return httplimit.Config{Limiter: e.Limiter(t, nil), Rules: []httplimit.Rule{{
				Policies: []*core.Policy{Free, Pro},
				Select: func(r *httplimit.Request) (*core.Policy, error) {
					if r.Header("X-Plan") == "pro" {
						return Pro, nil
					}
					return Free, nil
				},
				Key: httplimit.Header("X-API-Key"),
			}}}
		}, Steps: []Step{
			{Req: Req{Header: hdr("X-API-Key", "k1")}, Times: 2, Want: Want{Status: 200}},
			{Req: Req{Header: hdr("X-API-Key", "k1")}, Want: Want{Status: 429}},
			// The same key under another policy starts afresh there.
			{Req: Req{Header: hdr("X-API-Key", "k1", "X-Plan", "pro")}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("pro", 4, 12)}}, Key: "k1"},
			{Req: Req{Header: hdr("X-API-Key", "k1")}, Want: Want{Status: 429, Header: map[string]string{"RateLimit": rl("free", 0, 30)}}},
		}},
		{Name: "policy per request/layered on per-ip", Config: plans(true), Steps: []Step{
			{Req: Req{Header: hdr("X-API-Key", "pro-1")}, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": PerIPPolicy + `, "pro";q=5;w=60`, "RateLimit": rl("pro", 4, 12),
			}}},
			{Req: Req{Header: hdr("X-API-Key", "free-1")}, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": PerIPPolicy + `, "free";q=2;w=60`, "RateLimit": rl("free", 1, 30),
			}}},
			{Want: Want{Status: 200, Header: allowed(7, 2)}},
		}},
		{Name: "policy per request/a policy not listed fails", Config: func(t *testing.T, e *Env) httplimit.Config {
			cfg := plans(false)(t, e)
			cfg.OnError = func(_ *httplimit.Request, err error) *httplimit.Response {
				return &httplimit.Response{Status: http.StatusNotImplemented, Body: []byte(err.Error())}
			}
			return cfg
		}, Steps: []Step{
			{Req: Req{Header: hdr("X-API-Key", "rogue-1")}, Want: Want{Status: 501, Header: noFields,
				Body: `httplimit: policy for rule 0 (free|pro|internal): httplimit: Select chose a policy not among the rule's Policies: "rogue"`}},
			{Req: Req{Header: hdr("X-API-Key", "nil-1")}, Want: Want{Status: 501,
				Body: `httplimit: policy for rule 0 (free|pro|internal): httplimit: Select chose a policy not among the rule's Policies: nil`}},
		}},
		{Name: "policy per request/a policy not listed fails with a 500", Config: plans(false), Steps: []Step{
			{Req: Req{Header: hdr("X-API-Key", "rogue-1")}, Want: Want{Status: 500, Body: InternalBody}},
		}},
		// Exempt clients and keys skip the rule without asking the store:
		// FailingStore, failing closed, would answer any request it sees 503.
		{Name: "exempt/client addresses and prefixes", Config: exempting(httplimit.ClientIP().Except("198.51.100.0/24", "2001:db8:1:2::1")), Steps: []Step{
			{Req: Req{Remote: "198.51.100.7:1"}, Times: 3, Want: Want{Status: 200, Header: noFields, Body: "ok"}},
			{Req: Req{Remote: "[::ffff:198.51.100.8]:1"}, Want: Want{Status: 200, Header: noFields}},
			{Req: Req{Remote: "[2001:db8:1:2::1]:1"}, Want: Want{Status: 200, Header: noFields}},
			// The same /64, another address: not exempt.
			{Req: Req{Remote: "[2001:db8:1:2::2]:1"}, Want: Want{Status: 503, Body: UnavailableBody}},
			{Req: Req{Remote: "198.51.101.7:1"}, Want: Want{Status: 503}},
			{Want: Want{Status: 503}},
		}},
		{Name: "exempt/client address behind a trusted proxy", Config: func(t *testing.T, e *Env) httplimit.Config {
			cfg := exempting(httplimit.ClientIP().Except("198.51.100.7"))(t, e)
			trusting("X-Forwarded-For")(&cfg)
			return cfg
		}, Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.7")}, Want: Want{Status: 200, Header: noFields}},
			// A client cannot claim the exempt address.
			{Req: Req{Remote: "203.0.113.5:1", Header: hdr("X-Forwarded-For", "198.51.100.7")}, Want: Want{Status: 503}},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.7, 203.0.113.9")}, Want: Want{Status: 503}},
		}},
		{Name: "exempt/API keys", Config: exempting(httplimit.Header("X-API-Key").Except("internal-secret")), Steps: []Step{
			{Req: Req{Header: hdr("X-API-Key", "internal-secret")}, Times: 3, Want: Want{Status: 200, Header: noFields}},
			{Req: Req{Header: hdr("X-API-Key", "Internal-Secret")}, Want: Want{Status: 503}},
			{Req: Req{Header: hdr("X-API-Key", "k1")}, Want: Want{Status: 503}},
			{Want: Want{Status: 200, Header: noFields}}, // no key: the rule does not apply
		}},
		{Name: "exempt/within a Join", Config: exempting(httplimit.Join(httplimit.ClientIP().Except("198.51.100.7"), httplimit.Route())), Steps: []Step{
			{Req: Req{Remote: "198.51.100.7:1", Path: login}, Want: Want{Status: 200, Header: noFields}},
			{Req: Req{Path: login}, Want: Want{Status: 503}},
		}},
		// Charge: the unit is taken before the handler runs and given back
		// when the response is not one Charge selects.
		{Name: "charge/only failures count", Config: failedLogins(false), Steps: []Step{
			{Req: Req{Method: post, Path: login}, Times: 5, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": FailuresPolicy, "RateLimit": rl("login-failures", 2, 20),
			}}},
			{Req: Req{Method: post, Path: login, Header: failing}, Want: Want{Status: 401, Header: map[string]string{"RateLimit": rl("login-failures", 2, 20)}}},
			{Req: Req{Method: post, Path: login, Header: failing}, Want: Want{Status: 401, Header: map[string]string{"RateLimit": rl("login-failures", 1, 40)}}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("login-failures", 0, 60)}}},
			{Req: Req{Method: post, Path: login, Header: failing}, Want: Want{Status: 401, Header: map[string]string{"RateLimit": rl("login-failures", 0, 60)}}},
			// Three failures kept: every request is refused until one
			// refills, successful ones too.
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit": rl("login-failures", 0, 20), "Retry-After": "20",
			}, Body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded; retry after 20 seconds.","violated-policies":["login-failures"]}`}},
			{Req: Req{Method: post, Path: login, Header: failing}, Want: Want{Status: 429}},
			{Req: Req{Method: post, Path: login, Remote: "192.0.2.2:1"}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("login-failures", 2, 20)}}},
			{Advance: 20 * time.Second, Req: Req{Method: post, Path: login}, Times: 2, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("login-failures", 0, 60)}}},
			{Req: Req{Method: post, Path: login, Header: failing}, Want: Want{Status: 401}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 429}, Outcome: outcome(core.Denied)},
		}},
		{Name: "charge/layered on per-ip, which counts every request", Config: failedLogins(true), Steps: []Step{
			{Req: Req{Method: post, Path: login}, Times: 3, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": PerIPPolicy + ", " + FailuresPolicy,
			}}},
			{Want: Want{Status: 200, Header: allowed(6, 2)}},
			{Req: Req{Method: post, Path: login, Header: failing}, Times: 3, Want: Want{Status: 401}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit": rl("login-failures", 0, 20), "Retry-After": "20",
			}, Body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded; retry after 20 seconds.","violated-policies":["login-failures"]}`}},
			// per-ip kept all seven requests that passed, and nothing of the
			// denied one.
			{Want: Want{Status: 200, Header: allowed(2, 4)}},
		}},
		{Name: "charge/a panic counts as a 500", Config: failedLogins(false), Steps: []Step{
			{Req: Req{Method: post, Path: login, Header: hdr(StatusHeader, "panic")}, Times: 3, Want: Want{Status: 500}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 429}},
		}},
		{Name: "charge/successes only", Config: func(t *testing.T, e *Env) httplimit.Config {
			cfg := failedLogins(false)(t, e)
			cfg.Rules[0].Charge = func(status int) bool { return status < 400 }
			return cfg
		}, Steps: []Step{
			{Req: Req{Method: post, Path: login, Header: hdr(StatusHeader, "404")}, Times: 4, Want: Want{Status: 404, Header: map[string]string{"RateLimit": rl("login-failures", 2, 20)}}},
			{Req: Req{Method: post, Path: login}, Times: 3, Want: Want{Status: 200}},
			{Req: Req{Method: post, Path: login, Header: hdr(StatusHeader, "404")}, Want: Want{Status: 429}},
		}},
		{Name: "charge/shadow mode settles too", Config: func(t *testing.T, e *Env) httplimit.Config {
			cfg := failedLogins(false)(t, e)
			cfg.Shadow = true
			return cfg
		}, Steps: []Step{
			{Req: Req{Method: post, Path: login, Header: failing}, Times: 4, Want: Want{Status: 401}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("login-failures", 0, 20)}}, Outcome: outcome(core.Denied)},
		}},
	}, append(concurrencyCases(), dependencyCases()...)...)
}

func rl(policy string, r, t int) string { return fmt.Sprintf(`"%s";r=%d;t=%d`, policy, r, t) }

// allowed is the header of an allowed request under per-ip alone.
func allowed(r, t int) map[string]string {
	return map[string]string{
		"RateLimit-Policy": PerIPPolicy,
		"RateLimit":        rl("per-ip", r, t),
		"Retry-After":      "",
		"Cache-Control":    "",
	}
}

// denied is the header of a request per-ip denied for one second.
func denied() map[string]string {
	return map[string]string{
		"RateLimit-Policy": PerIPPolicy,
		"RateLimit":        rl("per-ip", 0, 1),
		"Retry-After":      "1",
		"Cache-Control":    "no-store",
		"Content-Type":     ProblemType,
	}
}

var noFields = map[string]string{
	"RateLimit-Policy": "", "RateLimit": "", "RateLimit-Limit": "", "X-RateLimit-Limit": "",
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func outcome(o core.Kind) *core.Kind { return &o }

// perIP is a config with the per-ip rule alone.
func perIP(edit func(*httplimit.Config)) func(t *testing.T, e *Env) httplimit.Config {
	return func(t *testing.T, e *Env) httplimit.Config {
		cfg := httplimit.Config{
			Limiter: e.Limiter(t, nil),
			Rules:   []httplimit.Rule{{Policy: PerIP, Key: httplimit.ClientIP()}},
			Clock:   e.Clock,
		}
		if edit != nil {
			edit(&cfg)
		}
		return cfg
	}
}

// headerCost costs what the X-Cost header says (1 without it).
func headerCost(r *httplimit.Request) int64 {
	v := r.Header("X-Cost")
	if v == "" {
		return 1
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// loginOn is per-ip everywhere plus login on the routes given, decided as
// one.
func loginOn(routes ...string) func(t *testing.T, e *Env) httplimit.Config {
	return func(t *testing.T, e *Env) httplimit.Config {
		cfg := layered(t, e)
		cfg.Rules[1].Routes = routes
		return cfg
	}
}

// layered is per-ip everywhere plus login on /login, decided as one.
func layered(t *testing.T, e *Env) httplimit.Config {
	return httplimit.Config{
		Limiter: e.Limiter(t, nil),
		Rules: []httplimit.Rule{
			{Policy: PerIP, Key: httplimit.ClientIP()},
			{Policy: Login, Key: httplimit.ClientIP(), Routes: []string{"/login"}},
		},
	}
}

// byUser limits authenticated requests per user, and with perIP every
// request per IP as well.
func byUser(perIP bool) func(t *testing.T, e *Env) httplimit.Config {
	return func(t *testing.T, e *Env) httplimit.Config {
		cfg := httplimit.Config{
			Limiter: e.Limiter(t, nil),
			Rules:   []httplimit.Rule{{Policy: PerUser, Key: httplimit.User(UserOf)}},
		}
		if perIP {
			cfg.Rules = append([]httplimit.Rule{{Policy: PerIP, Key: httplimit.ClientIP()}}, cfg.Rules...)
		}
		return cfg
	}
}

// failing makes a route's handler answer 401, as a failed login.
var failing = hdr(StatusHeader, "401")

// failedLogins limits failed POST /login requests per IP, and with perIP
// every request per IP as well.
func failedLogins(perIP bool) func(t *testing.T, e *Env) httplimit.Config {
	return func(t *testing.T, e *Env) httplimit.Config {
		cfg := httplimit.Config{Limiter: e.Limiter(t, nil), Rules: []httplimit.Rule{
			{Policy: LoginFailures, Key: httplimit.ClientIP(), Routes: []string{"POST /login"}, Charge: func(status int) bool { return status >= 400 }},
		}}
		if perIP {
			cfg.Rules = append([]httplimit.Rule{{Policy: PerIP, Key: httplimit.ClientIP()}}, cfg.Rules...)
		}
		return cfg
	}
}

// Rogue is a policy no rule lists, which PlanOf returns for API keys
// starting "rogue-".
var Rogue = core.MustPolicy(core.PolicyConfig{Name: "rogue", Algorithm: core.GCRA, Quota: 1, Period: time.Minute, Burst: 1})

// PlanOf is the table's Select function: the plan of the request's API key,
// by its prefix ("pro-", "int-", anything else free). A request without
// one has no plan (ErrNoKey); "rogue-" and "nil-" keys get a policy the
// rule does not list, and nil.
func PlanOf(r *httplimit.Request) (*core.Policy, error) {
	key := r.Header("X-API-Key")
	switch {
	case key == "":
		return nil, httplimit.ErrNoKey
	case strings.HasPrefix(key, "pro-"):
		return Pro, nil
	case strings.HasPrefix(key, "int-"):
		return Internal, nil
	case strings.HasPrefix(key, "rogue-"):
		return Rogue, nil
	case strings.HasPrefix(key, "nil-"):
		return nil, nil
	}
	return Free, nil
}

// plans limits requests per API key under the plan PlanOf chooses, and with
// perIP every request per IP as well.
func plans(perIP bool) func(t *testing.T, e *Env) httplimit.Config {
	return func(t *testing.T, e *Env) httplimit.Config {
		cfg := httplimit.Config{Limiter: e.Limiter(t, nil), Rules: []httplimit.Rule{
			{Policies: []*core.Policy{Free, Pro, Internal}, Select: PlanOf, Key: httplimit.Header("X-API-Key")},
		}}
		if perIP {
			cfg.Rules = append([]httplimit.Rule{{Policy: PerIP, Key: httplimit.ClientIP()}}, cfg.Rules...)
		}
		return cfg
	}
}

// exempting limits every request per key on a store that fails every call,
// failing closed: a request the store sees is answered 503.
func exempting(key httplimit.Key) func(t *testing.T, e *Env) httplimit.Config {
	return func(t *testing.T, e *Env) httplimit.Config {
		return httplimit.Config{
			Limiter: e.Limiter(t, FailingStore{}, core.WithFailClosed(0)),
			Rules:   []httplimit.Rule{{Policy: PerIP, Key: key}},
		}
	}
}

func trusting(header string) func(*httplimit.Config) {
	return func(c *httplimit.Config) {
		c.TrustedProxies = []string{"10.0.0.0/8", "2001:db8:ffff::1"}
		c.ProxyHeader = header
	}
}
