// Package httplimittest is the behaviour table every sluice HTTP adapter
// passes: statuses, exact header values, Retry-After, bodies, skips, key
// isolation, costs, layered limits, store failures and client addresses
// behind proxies. An adapter supplies a Harness that builds an application
// with the middleware; the table drives it. Adapters written outside sluice
// can run it too:
//
//	func TestBehaviour(t *testing.T) {
//		httplimittest.Run(t, func(t *testing.T, cfg httplimit.Config, routes []string) httplimittest.Server {
//			app := myframework.New()
//			... install mylimit.New(cfg), and a handler answering 200 "ok" on each route ...
//			return func(r httplimittest.Req) httplimittest.Resp { ... }
//		})
//	}
//
// Time is a core.ManualClock: no case sleeps.
package httplimittest

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// Routes are the route templates a Harness must serve, each answering 200
// with the body "ok" to any method.
var Routes = []string{"/", "/login", "/other"}

// Req is a request to send.
type Req struct {
	Method string      // default GET
	Path   string      // default "/"
	Remote string      // the peer, "ip:port"; default DefaultRemote
	Header http.Header // request header fields
}

// DefaultRemote is the peer of requests that name none.
const DefaultRemote = "192.0.2.1:1234"

// Resp is what a Server answered.
type Resp struct {
	Status int
	Header http.Header // canonical keys
	Body   string
}

// Server performs one request against an application.
type Server func(Req) Resp

// Harness builds an application serving Routes behind the adapter's
// middleware configured with cfg, and returns the means to query it.
type Harness func(t *testing.T, cfg httplimit.Config, routes []string) Server

// Epoch is the manual clock's start: a whole day, so a boundary of every
// window the table uses (Unix 1893456000).
var Epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Env is one case's clock, store and recorded limiter events.
type Env struct {
	Clock *core.ManualClock
	Store core.Store

	mu     sync.Mutex
	events []core.Event
}

func newEnv(t *testing.T) *Env {
	clock := core.NewManualClock(Epoch)
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return &Env{Clock: clock, Store: s}
}

// Limiter returns a limiter on store (Env.Store if nil) that records events.
func (e *Env) Limiter(t *testing.T, store core.Store, opts ...core.Option) *core.Limiter {
	if store == nil {
		store = e.Store
	}
	l, err := core.NewLimiter(store, append(opts, core.WithObserver(e.observe))...)
	require.NoError(t, err)
	return l
}

func (e *Env) observe(_ context.Context, ev core.Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

// Last returns the last event the limiter reported.
func (e *Env) Last() (core.Event, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.events) == 0 {
		return core.Event{}, false
	}
	return e.events[len(e.events)-1], true
}

// FailingStore is a core.Store whose every call fails: a fault injector for
// the limiter's failure modes.
type FailingStore struct{}

// ErrStoreDown is FailingStore's error.
var ErrStoreDown = errors.New("httplimittest: store down")

// Take implements core.Store.
func (FailingStore) Take(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, ErrStoreDown
}

// TakeAll implements core.Store.
func (FailingStore) TakeAll(context.Context, []core.Request, []core.Decision) error {
	return ErrStoreDown
}

// Adjust implements core.Store.
func (FailingStore) Adjust(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, ErrStoreDown
}

// Reset implements core.Store.
func (FailingStore) Reset(context.Context, string, *core.Policy) error { return ErrStoreDown }

// Case is one behaviour: a configuration and the requests that show it.
type Case struct {
	Name   string
	Config func(t *testing.T, e *Env) httplimit.Config
	Steps  []Step
}

// Step sends Req Times times (default once), after moving the clock by
// Advance, and checks the answers.
type Step struct {
	Advance time.Duration
	Req     Req
	Times   int
	// Status is checked on every answer; Header and Body on the last.
	Want Want
	// Key, if set, is the key of the limiter's last event.
	Key string
	// Outcome, if set, is the outcome of the limiter's last event.
	Outcome *core.Outcome
}

// Want is an expected answer.
type Want struct {
	Status int
	// Header maps field names to exact values; "" means absent.
	Header map[string]string
	// Body, if set, is the exact body.
	Body string
}

// Run runs every case of the table against the harness.
func Run(t *testing.T, h Harness) {
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			env := newEnv(t)
			srv := h(t, c.Config(t, env), Routes)
			for i, s := range c.Steps {
				env.Clock.Advance(s.Advance)
				req := s.Req
				if req.Method == "" {
					req.Method = http.MethodGet
				}
				if req.Path == "" {
					req.Path = "/"
				}
				if req.Remote == "" {
					req.Remote = DefaultRemote
				}
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
						assert.Equalf(t, *s.Outcome, ev.Outcome, "step %d: outcome", i)
					}
				}
			}
		})
	}
}

// AddrOf parses a Req.Remote (for harnesses that need a net.Addr).
func AddrOf(remote string) netip.AddrPort { return netip.MustParseAddrPort(remote) }
