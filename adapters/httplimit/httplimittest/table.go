package httplimittest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-go/sluice/adapters/admit"
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
	return slices.Concat(fieldCases(), routeCases(), clientCases(), keyCases(), planCases(), chargeCases(), concurrencyCases(), dependencyCases())
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
func perIP(edit func(*admit.Config)) func(t *testing.T, e *Env) admit.Config {
	return func(t *testing.T, e *Env) admit.Config {
		cfg := admit.Config{
			Limiter: e.Limiter(t, nil),
			Rules:   []admit.Rule{{Policy: PerIP, Key: admit.ClientIP()}},
			Clock:   e.Clock,
		}
		if edit != nil {
			edit(&cfg)
		}
		return cfg
	}
}

// headerCost costs what the X-Cost header says (1 without it).
func headerCost(r *admit.Request) int64 {
	v := r.Header("X-Cost")
	if v == "" {
		return 1
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// loginOn is per-ip everywhere plus login on the routes given, decided as
// one.
func loginOn(routes ...string) func(t *testing.T, e *Env) admit.Config {
	return func(t *testing.T, e *Env) admit.Config {
		cfg := layered(t, e)
		cfg.Rules[1].Routes = routes
		return cfg
	}
}

// layered is per-ip everywhere plus login on /login, decided as one.
func layered(t *testing.T, e *Env) admit.Config {
	return admit.Config{
		Limiter: e.Limiter(t, nil),
		Rules: []admit.Rule{
			{Policy: PerIP, Key: admit.ClientIP()},
			{Policy: Login, Key: admit.ClientIP(), Routes: []string{"/login"}},
		},
	}
}

// byUser limits authenticated requests per user, and with perIP every
// request per IP as well.
func byUser(perIP bool) func(t *testing.T, e *Env) admit.Config {
	return func(t *testing.T, e *Env) admit.Config {
		cfg := admit.Config{
			Limiter: e.Limiter(t, nil),
			Rules:   []admit.Rule{{Policy: PerUser, Key: admit.User(UserOf)}},
		}
		if perIP {
			cfg.Rules = append([]admit.Rule{{Policy: PerIP, Key: admit.ClientIP()}}, cfg.Rules...)
		}
		return cfg
	}
}

// failing makes a route's handler answer 401, as a failed login.
var failing = hdr(StatusHeader, "401")

// failedLogins limits failed POST /login requests per IP, and with perIP
// every request per IP as well.
func failedLogins(perIP bool) func(t *testing.T, e *Env) admit.Config {
	return func(t *testing.T, e *Env) admit.Config {
		cfg := admit.Config{Limiter: e.Limiter(t, nil), Rules: []admit.Rule{
			{Policy: LoginFailures, Key: admit.ClientIP(), Routes: []string{"POST /login"}, Charge: func(status int) bool { return status >= 400 }},
		}}
		if perIP {
			cfg.Rules = append([]admit.Rule{{Policy: PerIP, Key: admit.ClientIP()}}, cfg.Rules...)
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
func PlanOf(r *admit.Request) (*core.Policy, error) {
	key := r.Header("X-API-Key")
	switch {
	case key == "":
		return nil, admit.ErrNoKey
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
func plans(perIP bool) func(t *testing.T, e *Env) admit.Config {
	return func(t *testing.T, e *Env) admit.Config {
		cfg := admit.Config{Limiter: e.Limiter(t, nil), Rules: []admit.Rule{
			{Policies: []*core.Policy{Free, Pro, Internal}, Select: PlanOf, Key: admit.Header("X-API-Key")},
		}}
		if perIP {
			cfg.Rules = append([]admit.Rule{{Policy: PerIP, Key: admit.ClientIP()}}, cfg.Rules...)
		}
		return cfg
	}
}

// exempting limits every request per key on a store that fails every call,
// failing closed: a request the store sees is answered 503.
func exempting(key admit.Key) func(t *testing.T, e *Env) admit.Config {
	return func(t *testing.T, e *Env) admit.Config {
		return admit.Config{
			Limiter: e.Limiter(t, FailingStore{}, core.WithFailClosed(0)),
			Rules:   []admit.Rule{{Policy: PerIP, Key: key}},
		}
	}
}

func trusting(header string) func(*admit.Config) {
	return func(c *admit.Config) {
		c.TrustedProxies = []string{"10.0.0.0/8", "2001:db8:ffff::1"}
		c.ProxyHeader = header
	}
}
