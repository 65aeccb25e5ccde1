package httplimittest

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
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

// Exact values the table expects.
const (
	PerIPPolicy      = `"per-ip";q=10;w=5`
	LoginPolicy      = `"login";q=3;w=60`
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
	return []Case{
		{Name: "ietf/allowed", Config: perIP(nil), Steps: []Step{
			{Want: Want{Status: 200, Header: allowed(9, 1), Body: "ok"}, Key: "192.0.2.1", Outcome: outcome(core.OutcomeAllowed)},
		}},
		{Name: "ietf/t is the time until full", Config: perIP(nil), Steps: []Step{
			{Times: 5, Want: Want{Status: 200, Header: allowed(5, 3)}},
			{Advance: 600 * time.Millisecond, Want: Want{Status: 200, Header: allowed(5, 3)}},
		}},
		{Name: "ietf/denied then refilled", Config: perIP(nil), Steps: []Step{
			{Times: 10, Want: Want{Status: 200, Header: allowed(0, 5)}, Outcome: outcome(core.OutcomeNearLimit)},
			{Times: 3, Want: Want{Status: 429, Header: denied(), Body: QuotaProblem}, Outcome: outcome(core.OutcomeDenied)},
			{Advance: 500 * time.Millisecond, Want: Want{Status: 200, Header: allowed(0, 5), Body: "ok"}},
		}},
		{Name: "draft headers", Config: perIP(func(c *httplimit.Config) { c.Headers = httplimit.DraftHeaders }), Steps: []Step{
			{Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Limit": "10", "RateLimit-Remaining": "9", "RateLimit-Reset": "1", "RateLimit": "", "RateLimit-Policy": "",
			}}},
			{Times: 9, Want: Want{Status: 200, Header: map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": "5"}}},
			{Want: Want{Status: 429, Header: map[string]string{
				"RateLimit-Limit": "10", "RateLimit-Remaining": "0", "RateLimit-Reset": "1", "Retry-After": "1", "Cache-Control": "no-store",
			}}},
		}},
		{Name: "legacy headers", Config: perIP(func(c *httplimit.Config) { c.Headers = httplimit.LegacyHeaders }), Steps: []Step{
			{Want: Want{Status: 200, Header: map[string]string{
				"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": "1893456001", "RateLimit": "",
			}}},
			{Advance: 250 * time.Millisecond, Times: 9, Want: Want{Status: 200, Header: map[string]string{
				"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1893456006",
			}}},
		}},
		{Name: "no headers", Config: perIP(func(c *httplimit.Config) { c.Headers = httplimit.NoHeaders }), Steps: []Step{
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
			{Times: 12, Want: Want{Status: 200, Header: noFields, Body: "ok"}, Outcome: outcome(core.OutcomeStoreFailed)},
		}},
		{Name: "store failure/fail closed", Config: func(t *testing.T, e *Env) httplimit.Config {
			return httplimit.Config{
				Limiter: e.Limiter(t, FailingStore{}, core.WithFailureMode(core.FailClosed)),
				Rules:   []httplimit.Rule{{Policy: PerIP, Key: httplimit.ClientIP()}},
			}
		}, Steps: []Step{
			{Want: Want{Status: 503, Header: map[string]string{
				"Retry-After": "1", "Cache-Control": "no-store", "Content-Type": ProblemType, "RateLimit": "", "RateLimit-Policy": "",
			}, Body: UnavailableBody}, Outcome: outcome(core.OutcomeStoreFailed)},
		}},
		{Name: "store failure/fallback store", Config: func(t *testing.T, e *Env) httplimit.Config {
			return httplimit.Config{
				Limiter: e.Limiter(t, FailingStore{}, core.WithFailureMode(core.FailClosed), core.WithFallback(e.Store)),
				Rules:   []httplimit.Rule{{Policy: PerIP, Key: httplimit.ClientIP()}},
			}
		}, Steps: []Step{
			{Times: 10, Want: Want{Status: 200, Header: allowed(0, 5)}, Outcome: outcome(core.OutcomeStoreFailed)},
			{Want: Want{Status: 429, Header: denied(), Body: QuotaProblem}},
		}},
		{Name: "client ip/spoofed X-Forwarded-For from untrusted peer", Config: perIP(trusting(httplimit.XForwardedFor)), Steps: []Step{
			{Req: Req{Remote: "203.0.113.5:1234", Header: hdr("X-Forwarded-For", "198.51.100.1")}, Times: 10, Want: Want{Status: 200}, Key: "203.0.113.5"},
			{Req: Req{Remote: "203.0.113.5:1234", Header: hdr("X-Forwarded-For", "198.51.100.2")}, Want: Want{Status: 429, Header: denied()}, Key: "203.0.113.5"},
		}},
		{Name: "client ip/trusted proxy honoured", Config: perIP(trusting(httplimit.XForwardedFor)), Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.7, 10.0.0.2")}, Times: 10, Want: Want{Status: 200}, Key: "198.51.100.7"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.7, 10.0.0.2")}, Want: Want{Status: 429, Header: denied()}},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.8, 10.0.0.2")}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "198.51.100.8"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "203.0.113.9, 198.51.100.8")}, Want: Want{Status: 200, Header: allowed(8, 1)}, Key: "198.51.100.8"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.9", "X-Forwarded-For", "10.0.0.3")}, Want: Want{Status: 200}, Key: "198.51.100.9"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "10.0.0.4, 10.0.0.3")}, Want: Want{Status: 200}, Key: "10.0.0.4"},
			{Req: Req{Remote: trustedProxyPeer}, Want: Want{Status: 200}, Key: "10.0.0.1"},
		}},
		{Name: "client ip/malformed X-Forwarded-For", Config: perIP(trusting(httplimit.XForwardedFor)), Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.7, not-an-ip")}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.7, not-an-ip, 10.0.0.2")}, Want: Want{Status: 200}, Key: "10.0.0.2"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "not-an-ip, 198.51.100.9:4711")}, Want: Want{Status: 200}, Key: "198.51.100.9"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", " , ,")}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "[2001:db8::1], 300.1.2.3")}, Want: Want{Status: 200}, Key: "10.0.0.1"},
		}},
		{Name: "client ip/Forwarded", Config: perIP(trusting(httplimit.Forwarded)), Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for=192.0.2.60;proto=http, For="[2001:db8:cafe::17]:4711";by=10.0.0.1`)}, Want: Want{Status: 200}, Key: "2001:db8:cafe::/64"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for="198.51.100.3:80", for=10.0.0.2`)}, Want: Want{Status: 200}, Key: "198.51.100.3"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for=198.51.100.1, for=unknown`)}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for=198.51.100.1, for=_hidden;proto=https`)}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `proto=https`)}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("Forwarded", `for="198.51.100.1`)}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.50")}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: "203.0.113.5:1", Header: hdr("Forwarded", "for=198.51.100.1")}, Want: Want{Status: 200}, Key: "203.0.113.5"},
		}},
		{Name: "client ip/X-Real-IP", Config: perIP(trusting(httplimit.XRealIP)), Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Real-IP", "198.51.100.4")}, Want: Want{Status: 200}, Key: "198.51.100.4"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Real-IP", "bogus")}, Want: Want{Status: 200}, Key: "10.0.0.1"},
			{Req: Req{Remote: "[2001:db8:ffff::1]:443", Header: hdr("X-Real-IP", "198.51.100.5")}, Want: Want{Status: 200}, Key: "198.51.100.5"},
			{Req: Req{Remote: "203.0.113.5:1", Header: hdr("X-Real-IP", "198.51.100.4")}, Want: Want{Status: 200}, Key: "203.0.113.5"},
		}},
		// A proxy that appends its element to the client's own field line
		// (nginx's "$http_forwarded, for=$remote_addr") or adds a line of its
		// own: nothing the client wrote before may choose the key.
		{Name: "client ip/Forwarded after a client's malformed element", Config: perIP(trusting(httplimit.Forwarded)), Steps: []Step{
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
		{Name: "client ip/X-Forwarded-For after a client's malformed element", Config: perIP(trusting(httplimit.XForwardedFor)), Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", `"203.0.113.66, 198.51.100.7`)}, Times: 10, Want: Want{Status: 200}, Key: "198.51.100.7"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", `[203.0.113.67, 198.51.100.7`)}, Want: Want{Status: 429, Header: denied()}, Key: "198.51.100.7"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "203.0.113.66,", "X-Forwarded-For", "198.51.100.8")}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "198.51.100.8"},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "203.0.113.66, 198.51.100.9", "X-Forwarded-For", "10.0.0.2")}, Want: Want{Status: 200}, Key: "198.51.100.9"},
		}},
		{Name: "client ip/X-Real-IP after a client's own", Config: perIP(trusting(httplimit.XRealIP)), Steps: []Step{
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
			}, Body: "ok"}, Outcome: outcome(core.OutcomeDenied)},
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
	}
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

func outcome(o core.Outcome) *core.Outcome { return &o }

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

func trusting(header httplimit.ProxyHeader) func(*httplimit.Config) {
	return func(c *httplimit.Config) {
		c.TrustedProxies = []string{"10.0.0.0/8", "2001:db8:ffff::1"}
		c.ProxyHeader = header
	}
}
