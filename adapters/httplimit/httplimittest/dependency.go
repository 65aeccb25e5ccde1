package httplimittest

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
)

// DependencyBody is the problem body of a request shed for the table's
// dependency, "upstream", with a Retry-After of one second.
const DependencyBody = `{"type":"https://iana.org/assignments/http-problem-types#temporary-reduced-capacity","title":"Service Unavailable","status":503,"detail":"A dependency of this service, upstream, has reduced capacity; retry after 1 second.","dependency":"upstream"}`

// scripted is the capacity of the table's dependency, as its client would
// report it, by the time since Epoch: 2 requests a second for 10s (a quota
// it reported), then closed until 13s (a Retry-After), then unlimited.
type scripted struct{}

func (scripted) Capacity(now time.Time) (float64, time.Duration, string) {
	switch since := now.Sub(Epoch); {
	case since < 10*time.Second:
		return 2, 0, "quota"
	case since < 13*time.Second:
		return 0, 13*time.Second - since, "retry-after"
	}
	return 0, 0, ""
}

// dependencyCases are the cases of Config.Dependencies: the routes that
// call a dependency admit what it accepts, and answer the rest 503 at once.
func dependencyCases() []Case {
	const login = "/login"
	shed := map[string]string{
		"Retry-After": "1", "Cache-Control": "no-store", "Content-Type": ProblemType,
		"RateLimit-Policy": PerIPPolicy,
	}
	return []Case{
		{Name: "dependency/the excess is a 503 at once, other routes untouched", Config: upstream, Steps: []Step{
			{Req: Req{Path: login}, Want: Want{Status: 200, Header: allowed(9, 1), Body: "ok"}, Outcome: outcome(core.LimitChanged)},
			// 2/s: one at once, the next half a second later.
			{Req: Req{Path: login}, Want: Want{Status: 503, Header: shed, Body: DependencyBody}, Outcome: outcome(core.Shed)},
			{Times: 3, Want: Want{Status: 200, Header: allowed(5, 3)}},
			{Advance: 500 * time.Millisecond, Req: Req{Path: login}, Want: Want{Status: 200}},
			{Req: Req{Path: login}, Want: Want{Status: 503}},
		}},
		{Name: "dependency/Retry-After is the dependency's", Config: upstream, Steps: []Step{
			{Advance: 10 * time.Second, Req: Req{Path: login}, Want: Want{Status: 503, Header: map[string]string{"Retry-After": "3"}}, Outcome: outcome(core.Shed)},
			{Req: Req{Method: http.MethodPost, Path: login}, Want: Want{Status: 503, Header: map[string]string{"Retry-After": "3"}}},
			{Want: Want{Status: 200}},
			{Advance: 3 * time.Second, Req: Req{Path: login}, Times: 5, Want: Want{Status: 200}},
		}},
		{Name: "dependency/shadow mode proceeds", Config: func(t *testing.T, e *Env) admit.Config {
			cfg := upstream(t, e)
			cfg.Shadow = true
			return cfg
		}, Steps: []Step{
			{Req: Req{Path: login}, Times: 3, Want: Want{Status: 200, Header: map[string]string{"Retry-After": ""}}, Outcome: outcome(core.Shed)},
		}},
	}
}

// upstream is the per-ip config with the scripted dependency on /login.
func upstream(t *testing.T, e *Env) admit.Config {
	return perIP(func(c *admit.Config) {
		c.Observer = e.observe
		c.Dependencies = []admit.Dependency{{Name: "upstream", Routes: []string{login}, Capacity: scripted{}}}
	})(t, e)
}

const login = "/login"
