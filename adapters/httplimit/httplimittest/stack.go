package httplimittest

import (
	"net/http"
	"testing"

	"github.com/sluice-go/sluice/adapters/admit"
)

// StackHarness builds an application serving routes behind two of the
// adapter's middlewares: outer before the authentication step (see
// UserHeader), a per-IP limit as a real application has it, and inner after
// it, a per-user or per-plan limit. It is Harness otherwise.
type StackHarness func(t *testing.T, outer, inner admit.Config, routes []string) Server

// stackCase is a behaviour of two middlewares on one request's path.
type stackCase struct {
	name         string
	outer, inner func(t *testing.T, e *Env) admit.Config
	steps        []Step
}

// checkStacked checks that the fields of every middleware on a request's
// path add up: the IETF lists carry each middleware's item, the older
// styles the fewest remaining; a denial by the inner one keeps the outer's
// items, and one by the outer one never reaches the inner.
func checkStacked(t *testing.T, a Adapter) {
	if a.Stack == nil {
		t.Skip("the adapter gives no Stack harness")
	}
	for _, c := range stackCases() {
		t.Run(c.name, func(t *testing.T) {
			env := NewEnv(t)
			env.ItemRoute = "/items/" + a.Param("id")
			srv := a.Stack(t, c.outer(t, env), c.inner(t, env), append(Routes[:len(Routes):len(Routes)], env.ItemRoute))
			runSteps(t, env, srv, c.steps)
		})
	}
}

func stackCases() []stackCase {
	free := hdr("X-API-Key", "k1")
	const both = PerIPPolicy + `, "free";q=2;w=60`
	draft := func(cfg func(t *testing.T, e *Env) admit.Config) func(t *testing.T, e *Env) admit.Config {
		return func(t *testing.T, e *Env) admit.Config {
			c := cfg(t, e)
			c.Headers = "draft"
			return c
		}
	}
	return []stackCase{
		{name: "ietf lists add up", outer: perIP(nil), inner: plans(false), steps: []Step{
			{Req: Req{Header: free}, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": both, "RateLimit": rl("per-ip", 9, 1) + ", " + rl("free", 1, 30), "Retry-After": "",
			}, Body: "ok"}},
			{Req: Req{Header: free}, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": both, "RateLimit": rl("per-ip", 8, 1) + ", " + rl("free", 0, 60),
			}}},
			{Req: Req{Header: free}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit-Policy": both, "RateLimit": rl("per-ip", 7, 2) + ", " + rl("free", 0, 30),
				"Retry-After": "30", "Cache-Control": "no-store", "Content-Type": ProblemType,
			}, Body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded; retry after 30 seconds.","violated-policies":["free"]}`}},
			// No API key: the inner middleware's rule does not apply, and
			// it adds nothing.
			{Want: Want{Status: 200, Header: allowed(6, 2)}},
			{Times: 6, Want: Want{Status: 200, Header: allowed(0, 5)}},
			// The outer middleware denies: the inner one never runs.
			{Req: Req{Header: free}, Want: Want{Status: 429, Header: denied(), Body: QuotaProblem}},
		}},
		// The inner middleware's member, set again for the status, stays
		// second in the list.
		{name: "charge sets its own member again", outer: perIP(nil), inner: failedLogins(false), steps: []Step{
			{Req: Req{Method: http.MethodPost, Path: "/login"}, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": PerIPPolicy + ", " + FailuresPolicy, "RateLimit": rl("per-ip", 9, 1) + ", " + rl("login-failures", 3, 0),
			}}},
			{Req: Req{Method: http.MethodPost, Path: "/login", Header: failing}, Want: Want{Status: 401, Header: map[string]string{
				"RateLimit": rl("per-ip", 8, 1) + ", " + rl("login-failures", 2, 20),
			}}},
		}},
		{name: "draft fields keep the fewest remaining", outer: draft(perIP(nil)), inner: draft(plans(false)), steps: []Step{
			{Req: Req{Header: free}, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Limit": "2", "RateLimit-Remaining": "1", "RateLimit-Reset": "30", "RateLimit": "",
			}}},
			{Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Limit": "10", "RateLimit-Remaining": "8", "RateLimit-Reset": "1",
			}}},
		}},
	}
}
