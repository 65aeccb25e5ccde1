// Package httplimittest is the behaviour table every sluice HTTP adapter
// passes: statuses, exact header values, Retry-After, bodies, skips, key
// isolation, costs, layered limits, routes, store failures, client addresses
// behind proxies, users set by authentication middleware, policies chosen
// per request, exempt clients, rules that charge by the response's status,
// under concurrency too, a concurrency limit (503s, classes, and slots that
// never leak, whatever becomes of their requests) and a shaping queue's
// turns. An adapter supplies an Adapter that builds
// applications with the middleware; the table drives them. Adapters written
// outside sluice can run it too:
//
//	func TestBehaviour(t *testing.T) {
//		httplimittest.Run(t, httplimittest.Adapter{
//			Serve: func(t *testing.T, cfg admit.Config, routes []string) httplimittest.Server {
//				app := myframework.New()
//				... install the framework's panic recovery (see StatusHeader), an
//				... authentication step (see UserHeader), then mylimit.New(cfg),
//				... and a handler answering "ok" to any method on each route,
//				... with the status StatusOf reads from the request, under the
//				... context the Req carries (Req.Context) ...
//				return func(r httplimittest.Req) httplimittest.Resp { ... }
//			},
//			Blind: ..., // the same, with the middleware where the route is not known yet
//			Param: func(name string) string { return ":" + name },
//			New:   func(cfg admit.Config) error { _, err := mylimit.New(cfg); return err },
//		})
//	}
//
// Time is a sluicetest.ManualClock: no case sleeps, and no check measures time.
package httplimittest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
)

// Harness builds an application serving routes behind the adapter's
// middleware configured with cfg, and returns the means to query it. Each
// route answers the body "ok" to any method, with the status StatusOf reads
// from the request's StatusHeader (200 without it), or panics if it says
// so; any other path is the framework's 404.
type Harness func(t *testing.T, cfg admit.Config, routes []string) Server

// Server performs one request against an application. It must be safe for
// concurrent use.
type Server func(Req) Resp

// Adapter is an adapter under test.
type Adapter struct {
	// Serve builds applications with the middleware installed where it sees
	// the route a request matched.
	Serve Harness
	// Blind, if set, builds them with the middleware installed where the
	// framework has not routed the request yet (Echo's Pre, Fiber's app.Use,
	// net/http around a handler that is not a ServeMux). Nil for a framework
	// that routes before running any middleware (Gin).
	Blind Harness
	// Param writes a path parameter as the framework's route templates do:
	// ":id", or net/http's "{id}".
	Param func(name string) string
	// New builds the middleware configured with cfg, returning the error of
	// the adapter's constructor.
	New func(cfg admit.Config) error
	// Stack builds applications with two of the adapter's middlewares on
	// every request's path (see StackHarness); the stacked cases are
	// skipped without it.
	Stack StackHarness
}

// Run runs every case of the table against the adapter, then checks that
// malformed Routes and other rules New must refuse are refused, that a User
// key allocates nothing to find the user, that a rule charging by status
// counts exactly the responses it selects under concurrent requests, and
// that a concurrency limit's slots all come back whatever becomes of the
// requests that held them, and that a shaping queue holds each request
// until its turn, which a request that will not be served gives back.
func Run(t *testing.T, a Adapter) {
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) { runCase(t, a, c) })
	}
	t.Run("stacked", func(t *testing.T) { checkStacked(t, a) })
	t.Run("routes/misplacement logged once", func(t *testing.T) { checkMisplacedLogged(t, a) })
	t.Run("routes/malformed entries refused", func(t *testing.T) { checkBadRoutes(t, a) })
	t.Run("rules/refused", func(t *testing.T) { checkBadRules(t, a) })
	t.Run("user/allocates nothing", func(t *testing.T) { checkUserAllocs(t, a.Serve) })
	t.Run("charge/concurrent requests held", func(t *testing.T) { checkChargeHeld(t, a.Serve) })
	t.Run("charge/concurrent requests", func(t *testing.T) { checkChargeConcurrent(t, a.Serve) })
	t.Run("concurrency/refused", func(t *testing.T) { checkBadConcurrency(t, a) })
	t.Run("concurrency/slots never leak", func(t *testing.T) { checkSlotsNeverLeak(t, a.Serve) })
	t.Run("queue/turns, given back", func(t *testing.T) { checkShapingQueue(t, a.Serve) })
	t.Run("shed/every answer carries its advice", func(t *testing.T) { checkShedAdvice(t, a.Serve) })
}

func runCase(t *testing.T, a Adapter, c Case) {
	h := a.Serve
	if c.Blind {
		if h = a.Blind; h == nil {
			t.Skip("the framework routes every request before running any middleware")
		}
	}
	env := NewEnv(t)
	env.ItemRoute = "/items/" + a.Param("id")
	srv := h(t, c.Config(t, env), append(Routes[:len(Routes):len(Routes)], env.ItemRoute))
	runSteps(t, env, srv, c.Steps)
}

// runSteps sends each step's requests to srv and checks the answers.
func runSteps(t *testing.T, env *Env, srv Server, steps []Step) {
	for i, s := range steps {
		env.Clock.Advance(s.Advance)
		if s.Release {
			env.release()
		}
		req := s.Req.WithDefaults()
		var resp Resp
		for n := range max(s.Times, 1) {
			resp = srv(req)
			require.Equalf(t, s.Want.Status, resp.Status, "step %d, request %d: status (body %q)", i, n+1, resp.Body)
		}
		for k, v := range s.Want.Header {
			if v == "" {
				assert.Emptyf(t, resp.Header.Values(k), "step %d: header %s should be absent", i, k)
			} else {
				assert.Equalf(t, []string{v}, resp.Header.Values(k), "step %d: header %s", i, k)
			}
		}
		if s.Want.Body != "" {
			assert.Equalf(t, s.Want.Body, resp.Body, "step %d: body", i)
		}
		if s.Key != "" || s.Outcome != nil {
			ev, ok := env.Last()
			require.Truef(t, ok, "step %d: no limiter event", i)
			if s.Key != "" {
				assert.Equalf(t, s.Key, ev.Key, "step %d: key", i)
			}
			if s.Outcome != nil {
				assert.Equalf(t, *s.Outcome, ev.Kind, "step %d: outcome", i)
			}
		}
	}
}

// Case is one behaviour: a configuration and the requests that show it.
type Case struct {
	Name   string                                  // the subtest's name
	Config func(t *testing.T, e *Env) admit.Config // the middleware's configuration
	Steps  []Step                                  // the requests, in order
	// Blind runs the case against Adapter.Blind, skipping it if there is
	// none.
	Blind bool
}

// Step sends Req Times times (default once), after moving the clock by
// Advance, and checks the answers.
type Step struct {
	Advance time.Duration // how far the clock moves first
	Req     Req           // the request to send
	Times   int           // how many times to send it; 0 means once
	// Status is checked on every answer; Header and Body on the last.
	Want Want
	// Key, if set, is the key of the limiter's last event.
	Key string
	// Outcome, if set, is the outcome of the limiter's last event.
	Outcome *core.Kind
	// Release frees the slots Env.Hold took, before the request.
	Release bool
}

// Want is an expected answer.
type Want struct {
	// Status is the status code.
	Status int
	// Header maps field names to exact values; "" means absent.
	Header map[string]string
	// Body, if set, is the exact body.
	Body string
}
