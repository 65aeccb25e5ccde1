package httplimittest

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
)

// chargeCases returns the cases of rules that charge by the response's
// status.
func chargeCases() []Case {
	const login = "/login"
	post := http.MethodPost
	return []Case{
		{Name: "charge/only failures count", Config: failedLogins(false), Steps: []Step{
			// A success gives its unit back, and its fields say so: the
			// standing as if it had taken nothing.
			{Req: Req{Method: post, Path: login}, Times: 5, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": FailuresPolicy, "RateLimit": rl("login-failures", 3, 0),
			}}},
			{Req: Req{Method: post, Path: login, Header: failing}, Want: Want{Status: 401, Header: map[string]string{"RateLimit": rl("login-failures", 2, 20)}}},
			{Req: Req{Method: post, Path: login, Header: failing}, Want: Want{Status: 401, Header: map[string]string{"RateLimit": rl("login-failures", 1, 40)}}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("login-failures", 1, 40)}}},
			{Req: Req{Method: post, Path: login, Header: failing}, Want: Want{Status: 401, Header: map[string]string{"RateLimit": rl("login-failures", 0, 60)}}},
			// Three failures kept: every request is refused until one
			// refills, successful ones too.
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 429, Header: map[string]string{
				"RateLimit": rl("login-failures", 0, 20), "Retry-After": "20",
			}, Body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded; retry after 20 seconds.","violated-policies":["login-failures"]}`}},
			{Req: Req{Method: post, Path: login, Header: failing}, Want: Want{Status: 429}},
			{Req: Req{Method: post, Path: login, Remote: "192.0.2.2:1"}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("login-failures", 3, 0)}}},
			{Advance: 20 * time.Second, Req: Req{Method: post, Path: login}, Times: 2, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("login-failures", 1, 40)}}},
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
		{Name: "charge/successes only", Config: func(t *testing.T, e *Env) admit.Config {
			cfg := failedLogins(false)(t, e)
			cfg.Rules[0].Charge = func(status int) bool { return status < 400 }
			return cfg
		}, Steps: []Step{
			{Req: Req{Method: post, Path: login, Header: hdr(StatusHeader, "404")}, Times: 4, Want: Want{Status: 404, Header: map[string]string{"RateLimit": rl("login-failures", 3, 0)}}},
			{Req: Req{Method: post, Path: login}, Times: 3, Want: Want{Status: 200}},
			{Req: Req{Method: post, Path: login, Header: hdr(StatusHeader, "404")}, Want: Want{Status: 429}},
		}},
		{Name: "charge/shadow mode settles too", Config: func(t *testing.T, e *Env) admit.Config {
			cfg := failedLogins(false)(t, e)
			cfg.Shadow = true
			return cfg
		}, Steps: []Step{
			{Req: Req{Method: post, Path: login, Header: failing}, Times: 4, Want: Want{Status: 401}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("login-failures", 0, 20)}}, Outcome: outcome(core.Denied)},
		}},
	}
}
