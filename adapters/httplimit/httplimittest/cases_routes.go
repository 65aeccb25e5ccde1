package httplimittest

import (
	"net/http"
	"testing"

	"github.com/sluice-go/sluice/adapters/admit"
)

// routeCases returns the cases of rules restricted to routes, and a
// middleware installed where the route is unknown.
func routeCases() []Case {
	const login = "/login"
	post := http.MethodPost
	return []Case{
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
		{Name: "routes/templated route", Config: func(t *testing.T, e *Env) admit.Config {
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
		{Name: "routes/no route", Config: func(t *testing.T, e *Env) admit.Config {
			cfg := loginOn("POST /login")(t, e)
			cfg.Rules = append(cfg.Rules, admit.Rule{Policy: PerKey, Key: admit.Join(admit.ClientIP(), admit.Route())})
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
		{Name: "routes/unknown route reaches OnError", Blind: true, Config: func(t *testing.T, e *Env) admit.Config {
			cfg := loginOn("POST /login")(t, e)
			cfg.OnError = func(_ *admit.Request, err error) *admit.Response {
				return &admit.Response{Status: http.StatusNotImplemented, Body: []byte(err.Error())}
			}
			return cfg
		}, Steps: []Step{
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 501,
				Body: "admit: rule 1 (login) has Routes: admit: the route is not known where the middleware runs"}},
		}},
		{Name: "routes/unknown route fails a Route key", Blind: true, Config: func(t *testing.T, e *Env) admit.Config {
			return admit.Config{Limiter: e.Limiter(t, nil), Rules: []admit.Rule{{Policy: PerKey, Key: admit.Route()}}}
		}, Steps: []Step{
			{Req: Req{Path: login}, Want: Want{Status: 500, Body: InternalBody}},
		}},
		{Name: "routes/unknown route leaves other rules alone", Blind: true, Config: perIP(nil), Steps: []Step{
			{Req: Req{Path: login}, Want: Want{Status: 200, Header: allowed(9, 1), Body: "ok"}, Key: "192.0.2.1"},
		}},
	}
}
