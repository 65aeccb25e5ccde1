package httplimittest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-go/sluice/adapters/admit"
)

// routeCases returns the cases of rules restricted to routes, and a
// middleware installed where the route is unknown.
func routeCases() []Case {
	cases := routedCases()
	for _, c := range cases {
		if !c.Blind {
			c.Name = "routes/before routing/" + strings.TrimPrefix(c.Name, "routes/")
			c.Blind = true
			cases = append(cases, c)
		}
	}
	return cases
}

// routedCases are the cases of rules restricted to routes, each of which
// holds where the framework has routed the request and, with Blind set,
// where it has not: the engine matches the templates itself there.
func routedCases() []Case {
	const login = "/login"
	post := http.MethodPost
	return []Case{
		{Name: "routes/method and template", Config: loginOn("POST /login"), Steps: []Step{
			{Req: Req{Path: login}, Want: Want{Status: 200, Header: allowed(9, 1)}},
			{Req: Req{Method: post, Path: login}, Times: 3, Want: Want{Status: 200, Header: map[string]string{
				"RateLimit-Policy": PerIPPolicy + ", " + LoginPolicy, "RateLimit": rl("per-ip", 6, 2) + ", " + rl("login", 0, 60),
			}}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 429}},
			{Req: Req{Path: login}, Want: Want{Status: 200, Header: allowed(5, 3)}},
		}},
		{Name: "routes/any method", Config: loginOn("/login"), Steps: []Step{
			{Req: Req{Path: login}, Times: 2, Want: Want{Status: 200, Header: map[string]string{"RateLimit-Policy": PerIPPolicy + ", " + LoginPolicy}}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("per-ip", 7, 2) + ", " + rl("login", 0, 60)}}},
			{Req: Req{Method: http.MethodPut, Path: login}, Want: Want{Status: 429}},
			{Want: Want{Status: 200, Header: allowed(6, 2)}},
		}},
		{Name: "routes/HEAD counts as GET", Config: loginOn("GET /login"), Steps: []Step{
			{Req: Req{Method: http.MethodHead, Path: login}, Times: 3, Want: Want{Status: 200, Header: map[string]string{"RateLimit-Policy": PerIPPolicy + ", " + LoginPolicy}}},
			{Req: Req{Path: login}, Want: Want{Status: 429}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 200, Header: allowed(6, 2)}},
		}},
		{Name: "routes/templated route", Config: func(t *testing.T, e *Env) admit.Config {
			return loginOn("GET "+e.ItemRoute)(t, e)
		}, Steps: []Step{
			{Req: Req{Path: "/items/1"}, Times: 2, Want: Want{Status: 200, Header: map[string]string{"RateLimit-Policy": PerIPPolicy + ", " + LoginPolicy}}},
			{Req: Req{Path: "/items/2"}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("per-ip", 7, 2) + ", " + rl("login", 0, 60)}}},
			{Req: Req{Path: "/items/3"}, Want: Want{Status: 429}},
			{Req: Req{Method: post, Path: "/items/3"}, Want: Want{Status: 200, Header: allowed(6, 2)}},
			{Req: Req{Path: "/other"}, Want: Want{Status: 200, Header: allowed(5, 3)}},
		}},
		// A request no route matches is not an error: rules with Routes and
		// Route keys leave it alone, whether or not the middleware runs.
		{Name: "routes/no route", Config: func(t *testing.T, e *Env) admit.Config {
			cfg := loginOn("POST /login")(t, e)
			cfg.Rules = append(cfg.Rules, admit.Rule{Policy: PerKey, Key: admit.Join(admit.ClientIP(), admit.Route())})
			return cfg
		}, Steps: []Step{
			{Req: Req{Method: post, Path: "/nope/x"}, Want: Want{Status: 404}},
			{Req: Req{Path: "/nope"}, Want: Want{Status: 404}},
		}},
		// Where the framework has not routed the request yet, a Route key
		// finds the template of the rules' Routes the request matches, and
		// keys a request none matches as admit.RouteUnknown, one limit
		// for all of them.
		{Name: "routes/before routing/Route key with Routes", Blind: true, Config: func(t *testing.T, e *Env) admit.Config {
			return admit.Config{Limiter: e.Limiter(t, nil), Rules: []admit.Rule{{Policy: PerKey, Key: admit.Route(), Routes: []string{"/login", e.ItemRoute}}}}
		}, Steps: []Step{
			{Req: Req{Path: "/items/7"}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": rl("per-key", 4, 1)}}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 200}, Key: login},
			{Req: Req{Path: "/other"}, Want: Want{Status: 200, Header: map[string]string{"RateLimit": "", "RateLimit-Policy": ""}}},
		}},
		{Name: "routes/before routing/Route key without Routes", Blind: true, Config: func(t *testing.T, e *Env) admit.Config {
			return admit.Config{Limiter: e.Limiter(t, nil), Rules: []admit.Rule{{Policy: PerKey, Key: admit.Route()}}}
		}, Steps: []Step{
			{Req: Req{Path: "/other"}, Want: Want{Status: 200, Body: "ok"}, Key: admit.RouteUnknown},
			{Req: Req{Path: login}, Want: Want{Status: 200, Body: "ok"}, Key: admit.RouteUnknown},
		}},
		{Name: "routes/unknown route leaves other rules alone", Blind: true, Config: perIP(nil), Steps: []Step{
			{Req: Req{Path: login}, Want: Want{Status: 200, Header: allowed(9, 1), Body: "ok"}, Key: "192.0.2.1"},
		}},
	}
}
