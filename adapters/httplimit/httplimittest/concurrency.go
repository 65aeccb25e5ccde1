package httplimittest

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

// ShedBody is the problem body of a request the concurrency limit shed with
// a RetryAfter of one second.
const ShedBody = `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"The service is overloaded; retry after 1 second."}`

// PriorityHeader carries a request's class in the table's concurrency
// cases: "critical" or "sheddable", Default otherwise (see ClassOf).
const PriorityHeader = "X-Priority"

// ClassOf is the table's admit.Config.Class function: the class PriorityHeader
// names.
func ClassOf(r *admit.Request) core.Class {
	switch r.Header(PriorityHeader) {
	case "critical":
		return core.Critical
	case "sheddable":
		return core.Sheddable
	}
	return core.Default
}

// concurrencyCases are the cases of Config.Concurrency: a request the rules
// allow takes a slot, and one that finds none is answered 503.
func concurrencyCases() []Case {
	const login = "/login"
	post := http.MethodPost
	shed := map[string]string{
		"Retry-After": "1", "Cache-Control": "no-store", "Content-Type": ProblemType,
		"RateLimit-Policy": PerIPPolicy, "RateLimit": rl("per-ip", 9, 1),
	}
	critical, sheddable := hdr(PriorityHeader, "critical"), hdr(PriorityHeader, "sheddable")
	return []Case{
		{Name: "concurrency/saturated is a 503", Config: busy(1, 1, nil), Steps: []Step{
			// The rules allowed the request, and counted it: their fields say so.
			{Want: Want{Status: 503, Header: shed, Body: ShedBody}, Outcome: outcome(core.Shed)},
			{Release: true, Want: Want{Status: 200, Header: allowed(8, 1), Body: "ok"}, Outcome: outcome(core.Allowed)},
		}},
		{Name: "concurrency/rules first: a rate denial takes no slot", Config: busy(1, 1, nil), Steps: []Step{
			{Times: 10, Want: Want{Status: 503}, Outcome: outcome(core.Shed)},
			{Want: Want{Status: 429, Header: denied(), Body: QuotaProblem}, Outcome: outcome(core.Denied)},
			{Release: true, Want: Want{Status: 429}},
			{Advance: 500 * time.Millisecond, Want: Want{Status: 200, Header: allowed(0, 5)}},
		}},
		// Reserve keeps half the limit for critical requests: with two
		// default ones in flight, default and sheddable requests are shed,
		// critical ones served.
		{Name: "concurrency/critical admitted while default is shed", Config: func(t *testing.T, e *Env) admit.Config {
			slots := e.Slots(t, backpressure.Config{Controller: backpressure.Static(4), Headroom: backpressure.Headroom{Critical: 0.5}})
			e.Hold(t, slots, "", core.Default, 2)
			return admit.Config{Concurrency: slots, Class: ClassOf}
		}, Steps: []Step{
			{Want: Want{Status: 503, Header: noFields, Body: ShedBody}},
			{Req: Req{Header: sheddable}, Want: Want{Status: 503, Body: ShedBody}},
			{Req: Req{Header: critical}, Times: 3, Want: Want{Status: 200, Header: noFields, Body: "ok"}},
			{Release: true, Req: Req{Header: sheddable}, Want: Want{Status: 200}},
		}},
		{Name: "concurrency/per client", Config: func(t *testing.T, e *Env) admit.Config {
			slots := e.Slots(t, backpressure.Config{PerKey: 1})
			e.Hold(t, slots, "192.0.2.1", core.Default, 1)
			return admit.Config{Concurrency: slots, ConcurrencyKey: admit.ClientIP()}
		}, Steps: []Step{
			{Want: Want{Status: 503, Body: ShedBody}, Key: "192.0.2.1", Outcome: outcome(core.Shed)},
			{Req: Req{Remote: "192.0.2.2:1234"}, Times: 2, Want: Want{Status: 200}},
		}},
		{Name: "concurrency/exempt clients take no slot", Config: func(t *testing.T, e *Env) admit.Config {
			slots := e.Slots(t, backpressure.Config{Controller: backpressure.Static(1)})
			e.Hold(t, slots, "", core.Default, 1)
			return admit.Config{Concurrency: slots, ConcurrencyKey: admit.ClientIP().Except("198.51.100.7")}
		}, Steps: []Step{
			{Req: Req{Remote: "198.51.100.7:1"}, Times: 2, Want: Want{Status: 200}},
			{Want: Want{Status: 503}},
		}},
		{Name: "concurrency/skipped requests take no slot", Config: busy(1, 1, func(c *admit.Config) {
			c.Skip = func(r *admit.Request) bool { return r.Path() == "/other" }
		}), Steps: []Step{
			{Req: Req{Path: "/other"}, Times: 2, Want: Want{Status: 200, Header: noFields}},
			{Want: Want{Status: 503}},
		}},
		{Name: "concurrency/Deny renders sheds", Config: busy(1, 1, func(c *admit.Config) {
			c.Deny = func(_ *admit.Request, d *admit.Denial) admit.Response {
				if d.Shed != nil {
					return admit.Response{ContentType: "text/plain", Body: fmt.Appendf(nil, "busy: %s request %s, retry in %d", d.Shed.Class, d.Shed.Reason, d.RetryAfter)}
				}
				return admit.Response{ContentType: "text/plain", Body: []byte("slow down")}
			}
		}), Steps: []Step{
			{Want: Want{Status: 503, Header: map[string]string{"Retry-After": "1", "Content-Type": "text/plain"}, Body: "busy: default request saturated, retry in 1"}},
			// The shed request took its unit of per-ip: nine more fit.
			{Release: true, Times: 9, Want: Want{Status: 200}},
			{Want: Want{Status: 429, Body: "slow down"}},
		}},
		{Name: "concurrency/shadow mode sheds nothing", Config: busy(1, 1, func(c *admit.Config) { c.Shadow = true }), Steps: []Step{
			{Times: 2, Want: Want{Status: 200, Body: "ok"}, Outcome: outcome(core.Shed)},
		}},
		// A request shed never reached the handler: a charge on its status
		// is given back.
		{Name: "concurrency/a shed request is not charged", Config: func(t *testing.T, e *Env) admit.Config {
			cfg := failedLogins(false)(t, e)
			cfg.Concurrency = e.Slots(t, backpressure.Config{Controller: backpressure.Static(1)})
			e.Hold(t, cfg.Concurrency.(*backpressure.Limiter), "", core.Default, 1)
			return cfg
		}, Steps: []Step{
			{Req: Req{Method: post, Path: login, Header: failing}, Times: 4, Want: Want{Status: 503}},
			{Release: true, Req: Req{Method: post, Path: login, Header: failing}, Times: 3, Want: Want{Status: 401}},
			{Req: Req{Method: post, Path: login}, Want: Want{Status: 429}},
		}},
		{Name: "concurrency/a class the limit does not know fails", Config: func(t *testing.T, e *Env) admit.Config {
			return admit.Config{
				Concurrency: e.Slots(t, backpressure.Config{Controller: backpressure.Static(1)}),
				Class:       func(*admit.Request) core.Class { return 7 },
			}
		}, Steps: []Step{
			{Want: Want{Status: 500, Body: InternalBody}},
		}},
	}
}

// busy is per-ip with a concurrency limit of n, hold of whose slots are
// taken.
func busy(n, hold int, edit func(*admit.Config)) func(t *testing.T, e *Env) admit.Config {
	return func(t *testing.T, e *Env) admit.Config {
		cfg := perIP(edit)(t, e)
		cfg.Concurrency = e.Slots(t, backpressure.Config{Controller: backpressure.Static(n)})
		e.Hold(t, cfg.Concurrency.(*backpressure.Limiter), "", core.Default, hold)
		return cfg
	}
}

// checkBadConcurrency checks that the adapter's constructor refuses a
// Config whose concurrency settings make no sense.
func checkBadConcurrency(t *testing.T, a Adapter) {
	env := NewEnv(t)
	slots := env.Slots(t, backpressure.Config{Controller: backpressure.Static(1)})
	for _, tc := range []struct {
		cfg  admit.Config
		want string
	}{
		{admit.Config{}, "Config.Limiter is nil"},
		{admit.Config{Limiter: env.Limiter(t, nil)}, "Config.Rules is empty, and there is no Concurrency limit"},
		{admit.Config{Concurrency: slots, Rules: []admit.Rule{{Policy: PerIP, Key: admit.ClientIP()}}}, "Config.Limiter is nil"},
		{admit.Config{Limiter: env.Limiter(t, nil), Rules: []admit.Rule{{Policy: PerIP, Key: admit.ClientIP()}}, Class: ClassOf},
			"Config.ConcurrencyKey or Class is set without a Concurrency limit"},
		{admit.Config{Concurrency: slots, ConcurrencyKey: admit.KeyFunc(nil)}, "ConcurrencyKey is nil"},
	} {
		err := a.New(tc.cfg)
		if assert.Errorf(t, err, "want %q", tc.want) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	assert.NoError(t, a.New(admit.Config{Concurrency: slots, ConcurrencyKey: admit.ClientIP(), Class: ClassOf}))
}

// checkSlotsNeverLeak is the bar every adapter passes: whatever becomes of
// a request (its handler panics, works until its deadline passes or its
// client goes away; it waits for a slot and its client goes away; it
// succeeds or fails), every slot and every place in the queue comes back,
// and no goroutine is left behind. First in a known order, then all at
// once.
func checkSlotsNeverLeak(t *testing.T, h Harness) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	env := NewEnv(t)
	slots := env.Slots(t, backpressure.Config{Controller: backpressure.Static(2), Queue: 4, MaxWait: time.Minute})
	srv := h(t, admit.Config{Concurrency: slots, Class: ClassOf}, Routes)

	type answer struct {
		name   string
		status int
	}
	answers := make(chan answer, 8)
	send := func(name string, ctx context.Context, status string) {
		req := Req{Context: ctx}
		if status != "" {
			req.Header = hdr(StatusHeader, status)
		}
		go func() { answers <- answer{name, srv(req).Status} }()
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		require.Eventuallyf(t, cond, 10*time.Second, time.Millisecond, "never: %s (in flight %d, waiting %d)", what, slots.InFlight(), slots.Waiting())
	}

	// Two handlers at work until their client goes, or their deadline
	// passes; four requests wait behind them, two of whose clients go.
	gone, leave := context.WithCancel(context.Background())
	late := newDeadline()
	send("client gone while served", gone, "wait")
	send("deadline passed while served", late, "wait")
	until("two in flight", func() bool { return slots.InFlight() == 2 })
	impatient := make([]context.CancelFunc, 2)
	for i := range impatient {
		var ctx context.Context
		ctx, impatient[i] = context.WithCancel(context.Background())
		send("client gone while waiting", ctx, "")
		until("waiting", func() bool { return slots.Waiting() == i+1 })
	}
	send("panics", context.Background(), "panic")
	send("succeeds", context.Background(), "")
	until("four waiting", func() bool { return slots.Waiting() == 4 })

	for _, cancel := range impatient {
		cancel()
	}
	leave()
	late.expire()
	got := map[string][]int{}
	for range 6 {
		a := <-answers
		got[a.name] = append(got[a.name], a.status)
	}
	assert.Equal(t, map[string][]int{
		"client gone while served":     {504},
		"deadline passed while served": {504},
		"client gone while waiting":    {503, 503},
		"panics":                       {500},
		"succeeds":                     {200},
	}, got)
	assert.Zero(t, slots.InFlight(), "in flight")
	assert.Zero(t, slots.Waiting(), "waiting")

	// All at once: clients that go at any moment, before, while waiting,
	// while served; handlers at work until their client goes.
	const n = 200
	var (
		wg       sync.WaitGroup
		statuses [600]atomic.Int64
		start    = make(chan struct{})
		cancels  = make(chan context.CancelFunc, n)
	)
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		status := [...]string{"wait", "panic", "", "503"}[i%4]
		if status == "wait" || i%3 == 0 {
			cancels <- cancel
		}
		req := Req{Context: ctx, Header: hdr(StatusHeader, status, PriorityHeader, [...]string{"critical", "", "sheddable"}[i%3])}
		wg.Go(func() {
			defer cancel()
			<-start
			statuses[srv(req).Status].Add(1)
		})
	}
	close(cancels)
	close(start)
	for cancel := range cancels {
		runtime.Gosched()
		cancel()
	}
	wg.Wait()
	assert.Zero(t, slots.InFlight(), "in flight")
	assert.Zero(t, slots.Waiting(), "waiting")
	t.Logf("200: %d, 500: %d, 503: %d, 504: %d", statuses[200].Load(), statuses[500].Load(), statuses[503].Load(), statuses[504].Load())
}

// deadline is a context whose deadline passes when the test says so: its
// Err is then context.DeadlineExceeded. It tells no time (Deadline), which
// only the test knows.
type deadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newDeadline() *deadline {
	return &deadline{Context: context.Background(), done: make(chan struct{})}
}

func (d *deadline) expire() { d.once.Do(func() { close(d.done) }) }

func (d *deadline) Done() <-chan struct{} { return d.done }

func (d *deadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
