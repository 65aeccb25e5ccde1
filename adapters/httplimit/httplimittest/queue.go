package httplimittest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/adapters/admit"
	"github.com/sluice-go/sluice/core"
)

// Shaped is the shaping queue of the queue check: one request every 500 ms
// per client, the first at once, the others held for their turn up to 5 s
// (nginx's limit_req rate=2r/s burst=10, without nodelay).
var Shaped = core.MustPolicy(core.PolicyConfig{Name: "shaped", Algorithm: core.LeakyQueue,
	Quota: 2, Period: time.Second, Burst: 1, MaxDelay: 5 * time.Second})

// checkShapingQueue checks that the middleware holds a request a LeakyQueue
// policy queues until its turn, on the limiter's clock (Env.Clock), and
// honours the request's context: a client that goes while it waits is
// answered a bare 503 and gives its turn back, so that the next request
// gets it; a request whose deadline falls before its turn is denied at
// once, 429 with the turn as Retry-After. In shadow mode, nothing waits.
func checkShapingQueue(t *testing.T, h Harness) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	env := NewEnv(t)
	srv := h(t, admit.Config{
		Limiter: env.Limiter(t, nil, core.WithClock(env.Clock)),
		Rules:   []admit.Rule{{Policy: Shaped, Key: admit.ClientIP()}},
	}, Routes)
	send := func(ctx context.Context) <-chan Resp {
		c := make(chan Resp, 1)
		go func() { c <- srv(Req{Context: ctx}) }()
		return c
	}
	queued := func(n int) core.Event {
		t.Helper()
		var e core.Event
		require.Eventuallyf(t, func() bool {
			es := env.Events(core.Queued)
			if len(es) < n {
				return false
			}
			e = es[n-1]
			return true
		}, 10*time.Second, time.Millisecond, "request %d never queued", n)
		return e
	}
	answer := func(c <-chan Resp) Resp {
		t.Helper()
		select {
		case r := <-c:
			return r
		case <-time.After(time.Minute): // a watchdog, not a measure
			t.Fatal("no answer")
			return Resp{}
		}
	}

	first := srv(Req{})
	require.Equal(t, http.StatusOK, first.Status, "the first request passes at once")
	assert.Equal(t, `"shaped";q=1;w=1`, first.Header.Get("RateLimit-Policy"))

	// The second waits for its turn, 500 ms on; its client goes first.
	gone, leave := context.WithCancel(context.Background())
	second := send(gone)
	assert.Equal(t, 500*time.Millisecond, queued(1).Decision.Delay)
	leave()
	resp := answer(second)
	assert.Equal(t, http.StatusServiceUnavailable, resp.Status, "a client gone while it waits")
	assert.Empty(t, resp.Body)
	assert.Empty(t, resp.Header.Get("Retry-After"))

	// The third gets the turn the second gave back, and is served when it
	// comes, not before.
	third := send(context.Background())
	assert.Equal(t, 500*time.Millisecond, queued(2).Decision.Delay, "the turn given back")
	env.Clock.Advance(499 * time.Millisecond)
	select {
	case r := <-third:
		t.Fatalf("served before its turn: %d", r.Status)
	default:
	}
	env.Clock.Advance(time.Millisecond)
	resp = answer(third)
	assert.Equal(t, http.StatusOK, resp.Status)
	assert.Equal(t, "ok", resp.Body)
	assert.Equal(t, `"shaped";r=0;t=1`, resp.Header.Get("RateLimit"))

	// A deadline before the turn: denied at once, and the turn goes back.
	soon, cancel := context.WithDeadline(context.Background(), env.Clock.Now().Add(100*time.Millisecond))
	defer cancel()
	resp = srv(Req{Context: soon})
	assert.Equal(t, http.StatusTooManyRequests, resp.Status)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"), "the turn it was offered, 500 ms, in whole seconds")
	assert.Equal(t, `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded; retry after 1 second.","violated-policies":["shaped"]}`, resp.Body)
	last := send(context.Background())
	assert.Equal(t, 500*time.Millisecond, queued(3).Decision.Delay, "the turn the denied request gave back")
	env.Clock.Advance(500 * time.Millisecond)
	assert.Equal(t, http.StatusOK, answer(last).Status)

	waited := env.Events(core.Waited)
	require.Len(t, waited, 2)
	for _, e := range waited {
		assert.Equal(t, 500*time.Millisecond, e.Waited, "time in the queue, on the limiter's clock")
	}
	assert.Len(t, env.Events(core.Shed), 1)

	// In shadow mode nothing waits: every request proceeds at once, with
	// the turn it would have had in the observer's eyes.
	env = NewEnv(t)
	srv = h(t, admit.Config{
		Limiter: env.Limiter(t, nil, core.WithClock(env.Clock)),
		Rules:   []admit.Rule{{Policy: Shaped, Key: admit.ClientIP()}},
		Shadow:  true,
	}, Routes)
	for i := range 3 {
		resp := answer(send(context.Background()))
		assert.Equalf(t, http.StatusOK, resp.Status, "shadow request %d", i)
		ev, _ := env.Last()
		assert.Equal(t, time.Duration(i)*500*time.Millisecond, ev.Decision.Delay)
	}
	assert.Empty(t, env.Events(core.Queued))
}
