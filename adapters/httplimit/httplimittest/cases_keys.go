package httplimittest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
)

// keyCases returns the cases of denials rendered by the application, shadow
// mode, and the keys of rules: headers, users, joins, errors.
func keyCases() []Case {
	const login = "/login"
	return []Case{
		{Name: "custom deny handler", Config: perIP(func(c *admit.Config) {
			c.Deny = func(_ *admit.Request, d *admit.Denial) admit.Response {
				return admit.Response{Status: d.Status, ContentType: "text/plain; charset=utf-8",
					Body: fmt.Appendf(nil, "slow down %v, retry in %ds", slices.Collect(d.Violated()), d.RetryAfter)}
			}
		}), Steps: []Step{
			{Times: 10, Want: Want{Status: 200}},
			{Want: Want{Status: 429, Header: map[string]string{
				"RateLimit": rl("per-ip", 0, 1), "Retry-After": "1", "Cache-Control": "no-store", "Content-Type": "text/plain; charset=utf-8",
			}, Body: "slow down [per-ip], retry in 1s"}},
		}},
		{Name: "custom deny handler without a status", Config: perIP(func(c *admit.Config) {
			c.Deny = func(*admit.Request, *admit.Denial) admit.Response {
				return admit.Response{Body: []byte("no")}
			}
		}), Steps: []Step{
			{Times: 10, Want: Want{Status: 200}},
			{Want: Want{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: "no"}},
		}},
		{Name: "shadow mode", Config: perIP(func(c *admit.Config) { c.Shadow = true }), Steps: []Step{
			{Times: 10, Want: Want{Status: 200}},
			{Times: 2, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": PerIPPolicy, "RateLimit": rl("per-ip", 0, 1), "Retry-After": "", "Cache-Control": "",
			}, Body: "ok"}, Outcome: outcome(core.Denied)},
		}},
		{Name: "header key", Config: func(t *testing.T, e *Env) admit.Config {
			return admit.Config{Limiter: e.Limiter(t, nil), Rules: []admit.Rule{{Policy: PerKey, Key: admit.Header("x-api-key")}}}
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
		{Name: "joined key", Config: perIP(func(c *admit.Config) {
			c.Rules[0].Key = admit.Join(admit.ClientIP(), admit.Route())
		}), Steps: []Step{
			{Req: Req{Path: "/other"}, Times: 10, Want: Want{Status: 200}, Key: "9:192.0.2.16:/other"},
			{Req: Req{Path: login}, Want: Want{Status: 200, Header: allowed(9, 1)}, Key: "9:192.0.2.16:/login"},
		}},
		{Name: "key error", Config: perIP(func(c *admit.Config) {
			c.Rules[0].Key = admit.Func(func(*admit.Request) (string, error) { return "", errors.New("secret: db down") })
		}), Steps: []Step{
			{Want: Want{Status: 500, Header: map[string]string{
				"Content-Type": ProblemType, "Cache-Control": "no-store", "RateLimit": "",
			}, Body: InternalBody}},
		}},
		{Name: "key error in shadow mode", Config: perIP(func(c *admit.Config) {
			c.Shadow = true
			c.Rules[0].Key = admit.Func(func(*admit.Request) (string, error) { return "", errors.New("db down") })
		}), Steps: []Step{
			{Want: Want{Status: 200, Header: noFields, Body: "ok"}},
		}},
		{Name: "constant key shared by all", Config: func(t *testing.T, e *Env) admit.Config {
			return admit.Config{Limiter: e.Limiter(t, nil), Rules: []admit.Rule{{Policy: PerIP, Key: admit.Const("everyone")}}}
		}, Steps: []Step{
			{Req: Req{Remote: "192.0.2.7:1"}, Times: 5, Want: Want{Status: 200}, Key: "everyone"},
			{Req: Req{Remote: "192.0.2.8:1"}, Times: 5, Want: Want{Status: 200, Header: allowed(0, 5)}},
			{Req: Req{Remote: "192.0.2.9:1"}, Want: Want{Status: 429}},
		}},
		// Policies chosen per request: free, pro and internal by API key,
		// each with its own figures in the header fields and the body.
	}
}
