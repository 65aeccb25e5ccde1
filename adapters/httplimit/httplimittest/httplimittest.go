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
//			Serve: func(t *testing.T, cfg httplimit.Config, routes []string) httplimittest.Server {
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
//			New:   func(cfg httplimit.Config) error { _, err := mylimit.New(cfg); return err },
//		})
//	}
//
// Time is a sluicetest.ManualClock: no case sleeps, and no check measures time.
package httplimittest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/adapters/httplimit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

// Harness builds an application serving routes behind the adapter's
// middleware configured with cfg, and returns the means to query it. Each
// route answers the body "ok" to any method, with the status StatusOf reads
// from the request's StatusHeader (200 without it), or panics if it says
// so; any other path is the framework's 404.
type Harness func(t *testing.T, cfg httplimit.Config, routes []string) Server

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
	New func(cfg httplimit.Config) error
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
	for i, s := range c.Steps {
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

// Routes are the route templates a Harness serves, besides the templated
// route Env.ItemRoute.
var Routes = []string{"/", "/login", "/other"}

// Req is a request to send.
type Req struct {
	Method string      // default GET
	Path   string      // default "/"
	Remote string      // the peer, "ip:port"; default DefaultRemote
	Header http.Header // request header fields
	// Context is the request's context (default context.Background()): a
	// Server hands it to the framework as the request context (for Fiber,
	// the context its handlers and the middleware see), so that a test can
	// end it, as a client that goes away or a deadline that passes would.
	Context context.Context
}

// DefaultRemote is the peer of requests that name none.
const DefaultRemote = "192.0.2.1:1234"

// WithDefaults returns r with its empty fields set to their defaults. Run
// sends requests with them set; a Server called otherwise may need it.
func (r Req) WithDefaults() Req {
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	if r.Path == "" {
		r.Path = "/"
	}
	if r.Remote == "" {
		r.Remote = DefaultRemote
	}
	if r.Context == nil {
		r.Context = context.Background()
	}
	return r
}

// AddrOf parses a Req.Remote (for harnesses that need a net.Addr).
func AddrOf(remote string) netip.AddrPort { return netip.MustParseAddrPort(remote) }

// Resp is what a Server answered.
type Resp struct {
	Status int         // the status code
	Header http.Header // the header, with canonical keys
	Body   string      // the body
}

// Handler returns a Server that has h serve each request: the Server of
// frameworks built on net/http. It fills in the defaults of Req. A panic h
// lets through is answered 500, as a recovery middleware would.
func Handler(h http.Handler) Server {
	return func(r Req) (resp Resp) {
		r = r.WithDefaults()
		req := httptest.NewRequestWithContext(r.Context, r.Method, r.Path, nil)
		req.RemoteAddr = r.Remote
		for k, vs := range r.Header {
			req.Header[k] = vs
		}
		rec := httptest.NewRecorder()
		defer func() {
			if p := recover(); p != nil {
				resp = Resp{Status: http.StatusInternalServerError, Header: rec.Header()}
			}
		}()
		h.ServeHTTP(rec, req)
		return Resp{Status: rec.Code, Header: rec.Header(), Body: rec.Body.String()}
	}
}

// StatusHeader carries the status a route's handler answers a request with
// (see StatusOf), for the rules that charge by status. Its value "panic"
// makes the handler panic: a Harness installs its framework's own panic
// recovery, answering 500, outside the middleware (net/http has none:
// Handler answers 500). Its value "wait" makes the handler work until the
// request's context ends (Req.Context), as a handler does whose client
// goes away or whose deadline passes, and answer 504.
const StatusHeader = "X-Status"

// StatusOf returns the status a route's handler answers with, given the
// request's context (for Fiber, the one its handlers see) and StatusHeader
// value: that status, 200 if value is empty, 504 once ctx ends if value is
// "wait". It panics if value is "panic", as the handler then must.
func StatusOf(ctx context.Context, value string) int {
	switch value {
	case "":
		return http.StatusOK
	case "panic":
		panic("httplimittest: the handler panics, as asked")
	case "wait":
		<-ctx.Done()
		return http.StatusGatewayTimeout
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 200 || n > 599 {
		panic("httplimittest: bad " + StatusHeader + " " + strconv.Quote(value))
	}
	return n
}

// UserHeader names the user a request is authenticated as. A Harness
// installs, in front of the middleware, the authentication step of its
// framework: when the header is present, it stores its value under the
// string key UserKey where that framework's authentication middleware would
// (c.Set with Gin and Echo, c.Locals with Fiber), or, for a framework that
// keeps no per-request values (net/http), in the request context with
// WithUser. The table's User rules find it with UserOf.
const UserHeader = "X-User"

// UserKey is the key a Harness stores the user under.
const UserKey = "user"

type userKey struct{}

// WithUser returns a copy of ctx carrying user, for frameworks that keep no
// per-request values of their own.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserOf is the table's user lookup (for httplimit.User): the string stored
// under UserKey in the framework's per-request values, else the one WithUser
// put in the request context.
func UserOf(ctx context.Context) (string, bool) {
	if u, ok := ctx.Value(UserKey).(string); ok {
		return u, true
	}
	u, ok := ctx.Value(userKey{}).(string)
	return u, ok
}

// Epoch is the manual clock's start: a whole day, so a boundary of every
// window the table uses (Unix 1893456000).
var Epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Env is one test's clock, store and recorded limiter events.
type Env struct {
	Clock *sluicetest.ManualClock // the time of the store
	Store core.Store              // a memory store
	// ItemRoute is a route with a path parameter, "/items/:id" written as
	// the adapter's framework writes it, which the application serves.
	ItemRoute string

	mu     sync.Mutex
	events []core.Event
	held   []backpressure.Permit // slots Hold took
}

// NewEnv returns a manual clock at Epoch and a memory store on it, closed
// when the test ends.
func NewEnv(t *testing.T) *Env {
	clock := sluicetest.NewManualClock(Epoch)
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

// SlotsName is the name the concurrency limits of Env.Slots report their
// events under (core.Event.LimitName).
const SlotsName = "slots"

// Slots returns a concurrency limit configured by c, reporting its events
// to the Env's recorder (see Last) under SlotsName, on a clock that reads
// Env.Clock and never runs a wait out: a request waits in its queue until a
// slot frees or its context ends. Its rejections suggest a RetryAfter of
// c.MinRetryAfter (1 s by default) while its requests take no time on
// Env.Clock.
func (e *Env) Slots(t *testing.T, c backpressure.Config) *backpressure.Limiter {
	c.Clock = slotClock{e.Clock}
	c.Name, c.Observer = SlotsName, e.observe
	l, err := backpressure.New(c)
	require.NoError(t, err)
	return l
}

// Hold takes n slots of l for requests of key and class that the
// application never sees (the service is busy with them), until the next
// Step with Release, or the end of the test. It fails the test if l sheds
// one.
func (e *Env) Hold(t *testing.T, l *backpressure.Limiter, key string, class core.Class, n int) {
	for range n {
		p, err := l.Acquire(context.Background(), key, class)
		require.NoError(t, err)
		e.mu.Lock()
		e.held = append(e.held, p)
		e.mu.Unlock()
	}
	t.Cleanup(e.release)
}

// release frees the slots Hold took.
func (e *Env) release() {
	e.mu.Lock()
	held := e.held
	e.held = nil
	e.mu.Unlock()
	for _, p := range held {
		p.Done(backpressure.Succeeded)
	}
}

// slotClock is a core.Clock reading a sluicetest.ManualClock, whose
// timers never fire.
type slotClock struct{ c *sluicetest.ManualClock }

func (c slotClock) Now() time.Time { return c.c.Now() }

func (slotClock) AfterFunc(time.Duration, func()) (stop func() bool) { return idleTimer{}.Stop }

type idleTimer struct{}

func (idleTimer) Stop() bool { return true }

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

// Events returns the events of outcome the limiters reported, oldest first.
func (e *Env) Events(outcome core.Kind) []core.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var es []core.Event
	for _, ev := range e.events {
		if ev.Kind == outcome {
			es = append(es, ev)
		}
	}
	return es
}

// Keys returns the keys of the events the limiter reported, oldest first.
func (e *Env) Keys() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([]string, len(e.events))
	for i, ev := range e.events {
		keys[i] = ev.Key
	}
	return keys
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
	Name   string                                      // the subtest's name
	Config func(t *testing.T, e *Env) httplimit.Config // the middleware's configuration
	Steps  []Step                                      // the requests, in order
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

// checkUserAllocs checks that finding the user in the framework's values
// allocates nothing: a User key costs no more than a Header key reading the
// same name from the request.
func checkUserAllocs(t *testing.T, h Harness) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts vary")
	}
	roomy := core.MustPolicy(core.PolicyConfig{Name: "roomy", Algorithm: core.TokenBucket, Quota: 1_000_000, Period: time.Second, Burst: 1 << 30})
	perRequest := func(key httplimit.Key) float64 {
		env := NewEnv(t)
		srv := h(t, httplimit.Config{Limiter: env.Limiter(t, nil), Rules: []httplimit.Rule{{Policy: roomy, Key: key}}}, Routes)
		req := Req{Header: hdr(UserHeader, "ann")}.WithDefaults()
		return testing.AllocsPerRun(100, func() {
			if resp := srv(req); resp.Header.Get("RateLimit") == "" {
				t.Fatalf("no RateLimit field (status %d)", resp.Status)
			}
		})
	}
	byHeader := perRequest(httplimit.Header(UserHeader))
	byUser := perRequest(httplimit.User(UserOf))
	assert.LessOrEqual(t, byUser, byHeader, "allocations per request with a User key, and with a Header key")
}

// checkBadRoutes checks that the adapter's constructor refuses malformed
// Routes entries, saying which rule and entry.
func checkBadRoutes(t *testing.T, a Adapter) {
	for _, tc := range []struct {
		routes []string
		want   string
	}{
		{[]string{""}, `rule 1 (login): route "": want "METHOD /template" or "/template"`},
		{[]string{"login"}, `route "login": want "METHOD /template" or "/template"`},
		{[]string{"post /login"}, `route "post /login": method "post" is not upper-case (methods are case-sensitive)`},
		{[]string{"POST  /login"}, `route "POST  /login": want "METHOD /template" or "/template"`},
		{[]string{"POST\t/login"}, `route "POST\t/login": want "METHOD /template" or "/template"`},
		{[]string{" /login"}, `route " /login": leading or trailing space`},
		{[]string{"/login "}, `route "/login ": leading or trailing space`},
		{[]string{"GET example.com/login"}, `route "GET example.com/login": want "METHOD /template" or "/template"`},
		{[]string{"GET /a b"}, `route "GET /a b": the template holds a space or a control character`},
		{[]string{"G(T /x"}, `route "G(T /x": method "G(T" is not a token`},
		{[]string{"/login?x"}, `route "/login?x": the template holds '?' outside a parameter`},
		{[]string{"POST /login?next=/"}, `route "POST /login?next=/": the template holds '?' outside a parameter`},
		{[]string{"/login?"}, `route "/login?": the template holds '?' outside a parameter`},
		{[]string{"/items/:id/x?"}, `route "/items/:id/x?": the template holds '?' outside a parameter`},
		{[]string{"/login#"}, `route "/login#": the template holds '#'`},
		{[]string{"GET /docs#top"}, `route "GET /docs#top": the template holds '#'`},
		{[]string{"/login", "POST /login", "/login"}, `rule 1 (login): route "/login" is listed twice`},
	} {
		env := NewEnv(t)
		err := a.New(httplimit.Config{Limiter: env.Limiter(t, nil), Rules: []httplimit.Rule{
			{Policy: PerIP, Key: httplimit.ClientIP()},
			{Policy: Login, Key: httplimit.ClientIP(), Routes: tc.routes},
		}})
		if assert.Errorf(t, err, "Routes %q", tc.routes) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	env := NewEnv(t)
	assert.NoError(t, a.New(httplimit.Config{Limiter: env.Limiter(t, nil), Rules: []httplimit.Rule{
		{Policy: Login, Key: httplimit.ClientIP(), Routes: []string{"/", "POST /login", "GET /login", "M-SEARCH /x", "GET " + "/items/" + a.Param("id"), "/users/:id?", "/span/:from?-:to?"}},
	}}))
}
