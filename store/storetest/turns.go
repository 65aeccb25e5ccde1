package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// queueTurnsGivenBack: a queue releases requests one Interval apart, never
// two at once, however many waiters give up. Through core.Limiter.TakeTurn, on
// the store and the suite's clock: a waiter that gives up leaves a gap at
// its turn, which the next request fills, released at that very instant;
// the last in the queue gives its turn back to the end; a gap whose turn
// comes unfilled is lost (filling it late would release a request less
// than an Interval before the next). A store whose ReturnTurn shortens the
// queue from its end, as Adjust does, releases newcomers together with
// waiters, and fails here.
func queueTurnsGivenBack(t *testing.T, h *harness) {
	const ms = time.Millisecond
	p := queue(1, 10, time.Second, time.Second) // one every 100 ms, each waiting at most 1 s
	queued := make(chan core.Event, 64)
	l, err := core.NewLimiter(h.store, core.WithClock(h.clock), core.WithObserver(func(_ context.Context, e core.Event) {
		if e.Kind == core.Queued {
			queued <- e
		}
	}))
	require.NoError(t, err)
	at := func() time.Duration { return h.clock.Now().Sub(Epoch) }

	type waiter struct {
		turn   time.Duration // since Epoch
		cancel context.CancelFunc
		done   chan error
	}
	var all []*waiter
	// enqueue has a request wait for its turn, and returns once it is
	// queued (or served at once).
	enqueue := func() *waiter {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		w := &waiter{cancel: cancel, done: make(chan error, 1)}
		all = append(all, w)
		go func() {
			_, err := l.TakeTurn(ctx, []core.Request{{Key: h.key("q"), Policy: p, Cost: 1}}, make([]core.Decision, 1))
			w.done <- err
		}()
		select {
		case e := <-queued:
			w.turn = at() + e.Decision.Delay
		case err := <-w.done:
			require.NoError(t, err)
			w.turn = at()
			w.done <- nil
		case <-time.After(time.Minute): // a watchdog, not a measure
			t.Fatal("never queued")
		}
		return w
	}
	giveUp := func(w *waiter) {
		t.Helper()
		w.cancel()
		require.Error(t, <-w.done, "given up before its turn")
		w.turn = -1
	}
	turns := func(ws ...*waiter) []time.Duration {
		ds := make([]time.Duration, len(ws))
		for i, w := range ws {
			ds[i] = w.turn
		}
		return ds
	}

	// Six at once: turns at 0, 100, ..., 500 ms.
	var first []*waiter
	for range 6 {
		first = append(first, enqueue())
	}
	require.Equal(t, []time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms}, turns(first...))

	// The waiters at 200 and 300 ms give up: the next two fill their turns,
	// and the one after goes to the end.
	h.clock.Advance(ms)
	giveUp(first[2])
	giveUp(first[3])
	a, b, c := enqueue(), enqueue(), enqueue()
	assert.Equal(t, []time.Duration{200 * ms, 300 * ms, 600 * ms}, turns(a, b, c), "the gaps, then the end")

	// The last in the queue gives up: the queue ends earlier.
	giveUp(c)
	d := enqueue()
	assert.Equal(t, 600*ms, d.turn, "the end, given back")

	// The waiter at 400 ms gives up, and nobody comes before its turn: the
	// gap is lost, and the next request goes to the end.
	giveUp(first[4])
	h.clock.Advance(449 * ms)
	e := enqueue()
	assert.Equal(t, 700*ms, e.turn, "not the lapsed turn, not before the next waiter's")

	// Everyone left is served at their turn: one Interval apart at least,
	// never two at once.
	h.clock.Advance(time.Second)
	var served []time.Duration
	for _, w := range all {
		if w.turn < 0 {
			continue
		}
		require.NoError(t, <-w.done)
		w.cancel()
		served = append(served, w.turn)
	}
	slices.Sort(served)
	assert.Equal(t, []time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 500 * ms, 600 * ms, 700 * ms}, served, "400 ms lapsed")
	for i := 1; i < len(served); i++ {
		assert.GreaterOrEqual(t, served[i]-served[i-1], p.Interval(), "released %v after the one before", served[i]-served[i-1])
	}
}
