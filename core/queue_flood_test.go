package core_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

// TestWaitFloodWithCancellations: a flood on a 10/s queue, a third of whose
// waiters give up before their turn, is released one Interval apart, never
// two at once, and serves every turn someone was waiting for: over any
// second, at most Burst + 10.
func TestWaitFloodWithCancellations(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	require.NoError(t, err)
	defer store.Close()
	p := core.MustPolicy(core.PolicyConfig{Name: "flood", Algorithm: core.LeakyQueue, Quota: 10, Period: time.Second, Burst: 1, MaxDelay: 2 * time.Second})
	queued := make(chan core.Event, 1)
	l, err := core.NewLimiter(store, core.WithClock(clock), core.WithObserver(func(_ context.Context, e core.Event) {
		if e.Kind == core.Queued {
			queued <- e
		}
	}))
	require.NoError(t, err)

	type waiter struct {
		turn   time.Time
		cancel context.CancelFunc
		done   chan error
		gaveUp bool
	}
	var waiters []*waiter
	enqueue := func() {
		ctx, cancel := context.WithCancel(context.Background())
		w := &waiter{cancel: cancel, done: make(chan error, 1)}
		go func() {
			d, err := l.TakeTurn(ctx, []core.Request{{Key: "k", Policy: p, Cost: 1}}, make([]core.Decision, 1))
			if err == nil && !d.Allowed {
				err = errDenied
			}
			w.done <- err
		}()
		select {
		case e := <-queued:
			w.turn = clock.Now().Add(e.Decision.Delay)
			waiters = append(waiters, w)
		case err := <-w.done:
			cancel()
			if err == nil { // served at once
				w.turn, w.done = clock.Now(), closedNil()
				waiters = append(waiters, w)
			}
		case <-time.After(time.Minute): // a watchdog, not a measure
			t.Fatal("never decided")
		}
	}
	rng := rand.New(rand.NewPCG(18, 5))
	for range 400 {
		clock.Advance(time.Duration(rng.IntN(60)) * time.Millisecond)
		for range rng.IntN(3) {
			enqueue()
		}
		for _, w := range waiters {
			if !w.gaveUp && w.turn.After(clock.Now()) && rng.IntN(60) == 0 {
				w.cancel()
				require.Error(t, <-w.done, "given up before its turn")
				w.gaveUp = true
			}
		}
	}
	clock.Advance(time.Hour)
	var served []time.Time
	gaveUp := 0
	for _, w := range waiters {
		if w.gaveUp {
			gaveUp++
			continue
		}
		require.NoError(t, <-w.done)
		w.cancel()
		served = append(served, w.turn)
	}
	slices.SortFunc(served, func(a, b time.Time) int { return a.Compare(b) })
	apart := 0
	for i := 1; i < len(served); i++ {
		if served[i].Sub(served[i-1]) < p.Interval() {
			apart++
		}
	}
	t.Logf("%d served, %d gave up", len(served), gaveUp)
	assert.Positive(t, gaveUp)
	assert.Zero(t, apart, "releases less than an Interval after the one before")
	most := 0
	for i := range served {
		j := i
		for j < len(served) && served[j].Sub(served[i]) < time.Second {
			j++
		}
		most = max(most, j-i)
	}
	t.Logf("at most %d served in one second", most)
	assert.LessOrEqual(t, most, 1+10, "served in one second: Burst + 10")
}

var errDenied = errors.New("denied")

func closedNil() chan error {
	c := make(chan error, 1)
	c <- nil
	return c
}
