package httplimittest

import (
	"net/http"
	"testing"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
)

// planCases returns the cases of policies chosen per request, and exempt
// clients.
func planCases() []Case {
	const login = "/login"
	return []Case{
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
		{Name: "policy per request/state kept per policy", Config: func(t *testing.T, e *Env) admit.Config {
			return admit.Config{Limiter: e.Limiter(t, nil), Rules: []admit.Rule{{
				Policies: []*core.Policy{Free, Pro},
				Select: func(r *admit.Request) (*core.Policy, error) {
					if r.Header("X-Plan") == "pro" {
						return Pro, nil
					}
					return Free, nil
				},
				Key: admit.Header("X-API-Key"),
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
		{Name: "policy per request/a policy not listed fails", Config: func(t *testing.T, e *Env) admit.Config {
			cfg := plans(false)(t, e)
			cfg.OnError = func(_ *admit.Request, err error) *admit.Response {
				return &admit.Response{Status: http.StatusNotImplemented, Body: []byte(err.Error())}
			}
			return cfg
		}, Steps: []Step{
			{Req: Req{Header: hdr("X-API-Key", "rogue-1")}, Want: Want{Status: 501, Header: noFields,
				Body: `admit: policy for rule 0 (free|pro|internal): admit: Select chose a policy not among the rule's Policies: "rogue"`}},
			{Req: Req{Header: hdr("X-API-Key", "nil-1")}, Want: Want{Status: 501,
				Body: `admit: policy for rule 0 (free|pro|internal): admit: Select chose a policy not among the rule's Policies: nil`}},
		}},
		{Name: "policy per request/a policy not listed fails with a 500", Config: plans(false), Steps: []Step{
			{Req: Req{Header: hdr("X-API-Key", "rogue-1")}, Want: Want{Status: 500, Body: InternalBody}},
		}},
		// Exempt clients and keys skip the rule without asking the store:
		// FailingStore, failing closed, would answer any request it sees 503.
		{Name: "exempt/client addresses and prefixes", Config: exempting(admit.ClientIP().Except("198.51.100.0/24", "2001:db8:1:2::1")), Steps: []Step{
			{Req: Req{Remote: "198.51.100.7:1"}, Times: 3, Want: Want{Status: 200, Header: noFields, Body: "ok"}},
			{Req: Req{Remote: "[::ffff:198.51.100.8]:1"}, Want: Want{Status: 200, Header: noFields}},
			{Req: Req{Remote: "[2001:db8:1:2::1]:1"}, Want: Want{Status: 200, Header: noFields}},
			// The same /64, another address: not exempt.
			{Req: Req{Remote: "[2001:db8:1:2::2]:1"}, Want: Want{Status: 503, Body: UnavailableBody}},
			{Req: Req{Remote: "198.51.101.7:1"}, Want: Want{Status: 503}},
			{Want: Want{Status: 503}},
		}},
		{Name: "exempt/client address behind a trusted proxy", Config: func(t *testing.T, e *Env) admit.Config {
			cfg := exempting(admit.ClientIP().Except("198.51.100.7"))(t, e)
			trusting("X-Forwarded-For")(&cfg)
			return cfg
		}, Steps: []Step{
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.7")}, Want: Want{Status: 200, Header: noFields}},
			// A client cannot claim the exempt address.
			{Req: Req{Remote: "203.0.113.5:1", Header: hdr("X-Forwarded-For", "198.51.100.7")}, Want: Want{Status: 503}},
			{Req: Req{Remote: trustedProxyPeer, Header: hdr("X-Forwarded-For", "198.51.100.7, 203.0.113.9")}, Want: Want{Status: 503}},
		}},
		{Name: "exempt/API keys", Config: exempting(admit.Header("X-API-Key").Except("internal-secret")), Steps: []Step{
			{Req: Req{Header: hdr("X-API-Key", "internal-secret")}, Times: 3, Want: Want{Status: 200, Header: noFields}},
			{Req: Req{Header: hdr("X-API-Key", "Internal-Secret")}, Want: Want{Status: 503}},
			{Req: Req{Header: hdr("X-API-Key", "k1")}, Want: Want{Status: 503}},
			{Want: Want{Status: 200, Header: noFields}}, // no key: the rule does not apply
		}},
		{Name: "exempt/within a Join", Config: exempting(admit.Join(admit.ClientIP().Except("198.51.100.7"), admit.Route())), Steps: []Step{
			{Req: Req{Remote: "198.51.100.7:1", Path: login}, Want: Want{Status: 200, Header: noFields}},
			{Req: Req{Path: login}, Want: Want{Status: 503}},
		}},
		// Charge: the unit is taken before the handler runs and given back
		// when the response is not one Charge selects.
	}
}
