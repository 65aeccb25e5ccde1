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
	"github.com/sluice-go/sluice/core/backpressure"
)

// checkShedAdvice checks that every request the middleware turns away
// while it waits carries its advice, a Retry-After, except one whose
// client has gone: a request whose deadline passes (a server's timeout)
// while it waits for a slot of Config.Concurrency is shed, 503 with
// Retry-After and the shed body; one whose deadline passes while it waits
// for its turn in a shaping queue is denied, 429 with the turn as
// Retry-After. A request whose client goes while it waits gets a bare 503.
func checkShedAdvice(t *testing.T, h Harness) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
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
	until := func(what string, cond func() bool) {
		t.Helper()
		require.Eventuallyf(t, cond, 10*time.Second, time.Millisecond, "never: %s", what)
	}

	t.Run("slot", func(t *testing.T) {
		env := NewEnv(t)
		slots := env.Slots(t, backpressure.Config{Controller: backpressure.Static(1), Queue: 2, MaxWait: time.Minute})
		env.Hold(t, slots, "", core.Default, 1)
		srv := h(t, admit.Config{Concurrency: slots}, Routes)
		send := func(ctx context.Context) <-chan Resp {
			c := make(chan Resp, 1)
			go func() { c <- srv(Req{Context: ctx}) }()
			return c
		}

		late := newDeadline()
		c := send(late)
		until("waiting for a slot", func() bool { return slots.Waiting() == 1 })
		late.expire()
		resp := answer(c)
		assert.Equal(t, http.StatusServiceUnavailable, resp.Status, "a deadline passed while waiting for a slot")
		assert.Equal(t, "1", resp.Header.Get("Retry-After"), "its advice")
		assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		assert.Equal(t, ProblemType, resp.Header.Get("Content-Type"))
		assert.Equal(t, ShedBody, resp.Body)

		gone, leave := context.WithCancel(context.Background())
		c = send(gone)
		until("waiting for a slot", func() bool { return slots.Waiting() == 1 })
		leave()
		resp = answer(c)
		assert.Equal(t, http.StatusServiceUnavailable, resp.Status, "a client gone while waiting for a slot")
		assert.Empty(t, resp.Header.Get("Retry-After"), "nobody to advise")
		assert.Empty(t, resp.Body)
		assert.Zero(t, slots.Waiting())
	})

	t.Run("turn", func(t *testing.T) {
		env := NewEnv(t)
		srv := h(t, admit.Config{
			Limiter: env.Limiter(t, nil, core.WithClock(env.Clock)),
			Rules:   []admit.Rule{{Policy: Shaped, Key: admit.ClientIP()}},
		}, Routes)
		require.Equal(t, http.StatusOK, srv(Req{}).Status, "the first request passes at once")
		late := newDeadline() // tells no deadline: the turn cannot be refused up front
		c := make(chan Resp, 1)
		go func() { c <- srv(Req{Context: late}) }()
		until("queued", func() bool { return len(env.Events(core.Queued)) == 1 })
		late.expire()
		resp := answer(c)
		assert.Equal(t, http.StatusTooManyRequests, resp.Status, "a deadline passed while waiting for its turn")
		assert.Equal(t, "1", resp.Header.Get("Retry-After"), "the turn it was offered, 500 ms, in whole seconds")
		assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		assert.Equal(t, `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"detail":"Rate limit exceeded; retry after 1 second.","violated-policies":["shaped"]}`, resp.Body)
	})
}
