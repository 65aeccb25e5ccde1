package httplimittest

import (
	"net/http"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
)

// fieldCases returns the cases of the header fields in each style, skips,
// key isolation, costs and rules layered in one middleware.
func fieldCases() []Case {
	const login = "/login"
	post := http.MethodPost
	return []Case{
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
		{Name: "draft headers", Config: perIP(func(c *admit.Config) { c.Headers = "draft" }), Steps: []Step{
			{Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Limit": "10", "RateLimit-Remaining": "9", "RateLimit-Reset": "1", "RateLimit": "", "RateLimit-Policy": "",
			}}},
			{Times: 9, Want: Want{Status: 200, Header: map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": "5"}}},
			{Want: Want{Status: 429, Header: map[string]string{
				"RateLimit-Limit": "10", "RateLimit-Remaining": "0", "RateLimit-Reset": "1", "Retry-After": "1", "Cache-Control": "no-store",
			}}},
		}},
		{Name: "legacy headers", Config: perIP(func(c *admit.Config) { c.Headers = "legacy" }), Steps: []Step{
			{Want: Want{Status: 200, Header: map[string]string{
				"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": "1893456001", "RateLimit": "",
			}}},
			{Advance: 250 * time.Millisecond, Times: 9, Want: Want{Status: 200, Header: map[string]string{
				"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1893456006",
			}}},
		}},
		{Name: "no headers", Config: perIP(func(c *admit.Config) { c.Headers = "none" }), Steps: []Step{
			{Times: 10, Want: Want{Status: 200, Header: noFields}},
			{Want: Want{Status: 429, Header: map[string]string{"Retry-After": "1", "RateLimit": "", "RateLimit-Policy": ""}, Body: QuotaProblem}},
		}},
		{Name: "skip middleware", Config: perIP(func(c *admit.Config) {
			c.Skip = func(r *admit.Request) bool { return r.Path() == "/other" }
		}), Steps: []Step{
			{Req: Req{Path: "/other"}, Times: 12, Want: Want{Status: 200, Header: noFields}},
			{Want: Want{Status: 200, Header: allowed(9, 1)}},
		}},
		{Name: "skip rule", Config: perIP(func(c *admit.Config) {
			c.Rules[0].Skip = func(r *admit.Request) bool { return r.Header("X-Internal") == "yes" }
		}), Steps: []Step{
			{Req: Req{Header: hdr("X-Internal", "yes")}, Times: 12, Want: Want{Status: 200, Header: noFields}},
			{Want: Want{Status: 200, Header: allowed(9, 1)}},
		}},
		{Name: "key isolation", Config: perIP(nil), Steps: []Step{
			{Times: 10, Want: Want{Status: 200}},
			{Want: Want{Status: 429, Header: denied()}},
			{Req: Req{Remote: "192.0.2.2:1234"}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "192.0.2.2"},
		}},
		{Name: "cost", Config: perIP(func(c *admit.Config) { c.Rules[0].Cost = headerCost }), Steps: []Step{
			{Req: Req{Header: hdr("X-Cost", "4")}, Want: Want{Status: 200, Header: allowed(6, 2)}},
			{Req: Req{Header: hdr("X-Cost", "7")}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit": rl("per-ip", 6, 1), "Retry-After": "1",
			}}},
			{Req: Req{Header: hdr("X-Cost", "6")}, Want: Want{Status: 200, Header: allowed(0, 5)}},
		}},
		{Name: "cost zero is free", Config: perIP(func(c *admit.Config) { c.Rules[0].Cost = headerCost }), Steps: []Step{
			{Req: Req{Header: hdr("X-Cost", "0")}, Times: 12, Want: Want{Status: 200, Header: noFields}},
			{Want: Want{Status: 200, Header: allowed(9, 1)}},
		}},
		{Name: "impossible cost", Config: perIP(func(c *admit.Config) { c.Rules[0].Cost = headerCost }), Steps: []Step{
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
	}
}
