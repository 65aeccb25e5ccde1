package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
)

// upstream is the queue: 2/s, one request at once, up to 5s of
// waiting (nginx's rate=2r/s burst=10).
var upstream = core.MustPolicy(core.PolicyConfig{Name: "upstream", Algorithm: core.LeakyQueue,
	Quota: 2, Period: time.Second, Burst: 1, MaxDelay: 5 * time.Second})

// queueRig is a limiter on a memory store, both on one manual clock, with an
// observer that signals every decision: a test waits for a waiter's
// decision, then moves the clock, with no sleeping and no race. The events
// of the waits themselves (queued, waited, shed) go to waits.
type queueRig struct {
	clock   *sluicetest.ManualClock
	store   *memory.Store
	limiter *core.Limiter
	events  chan core.Event
	waits   chan core.Event
}

func newQueueRig(t *testing.T, opts ...core.Option) *queueRig {
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	require.NoError(t, err)
	rig := &queueRig{clock: clock, store: store, events: make(chan core.Event, 64), waits: make(chan core.Event, 256)}
	observe := func(_ context.Context, e core.Event) {
		switch e.Kind {
		case core.Queued, core.Waited, core.Shed:
			rig.waits <- e
		default:
			rig.events <- e
		}
	}
	opts = append([]core.Option{core.WithClock(clock), core.WithObserver(observe)}, opts...)
	rig.limiter, err = core.NewLimiter(store, opts...)
	require.NoError(t, err)
	return rig
}

// wait starts a Wait and returns once the limiter has decided it (the
// waiter may then be waiting for its turn), with the decision the observer
// saw.
func (rig *queueRig) wait(t *testing.T, ctx context.Context, rs ...core.Request) *waiter {
	t.Helper()
	w := &waiter{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.d, w.err = rig.limiter.TakeTurn(ctx, rs, make([]core.Decision, len(rs)))
	}()
	w.seen = (<-rig.events).Decision
	return w
}

// waiter is a Wait running on its own goroutine.
type waiter struct {
	seen core.Decision // as decided, before any wait
	d    core.Decision
	err  error
	done chan struct{}
}

// finish waits for w to return. The watchdog only turns a waiter that is
// never released into a failure rather than a hung test; nothing depends
// on how long the wait takes.
func (w *waiter) finish(t *testing.T) (core.Decision, error) {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(time.Minute):
		t.Fatalf("waiter for %v never released", w.seen.Delay)
	}
	return w.d, w.err
}

// running reports whether w has not returned yet. It can only be wrong by
// reporting true for a waiter about to return, never the other way: it
// never fails a correct limiter.
func (w *waiter) running() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

func req(key string, p *core.Policy) core.Request { return core.Request{Key: key, Policy: p, Cost: 1} }

// The shaping test through Wait: of 20 requests at once, 11 are
// served, one at the start and one every half second up to 5s, each when
// its turn comes; the other 9 are denied at once.
func TestWaitShapesABurst(t *testing.T) {
	defer goleak.VerifyNone(t)
	rig := newQueueRig(t)
	ctx := context.Background()
	var queued []*waiter
	for range 20 {
		w := rig.wait(t, ctx, req("api", upstream))
		if !w.seen.Allowed {
			d, err := w.finish(t)
			require.NoError(t, err)
			assert.False(t, d.Allowed)
			assert.Equal(t, 500*time.Millisecond, d.RetryAfter)
			continue
		}
		queued = append(queued, w)
	}
	require.Len(t, queued, 11)
	for k, w := range queued {
		require.Equal(t, time.Duration(k)*500*time.Millisecond, w.seen.Delay, "turn %d", k)
	}
	for k, w := range queued {
		d, err := w.finish(t) // released at its turn
		require.NoError(t, err)
		assert.True(t, d.Allowed)
		for _, later := range queued[k+1:] {
			assert.True(t, later.running(), "turn %d is released before its time", k+1)
		}
		rig.clock.Advance(500 * time.Millisecond)
	}
}

// A waiter is released exactly at its turn, and not a microsecond before
// as far as the clock goes.
func TestWaitReleasesAtTheTurn(t *testing.T) {
	defer goleak.VerifyNone(t)
	rig := newQueueRig(t)
	ctx := context.Background()
	d, err := rig.limiter.TakeTurn(ctx, []core.Request{req("api", upstream)}, make([]core.Decision, 1))
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Zero(t, d.Delay, "the first request passes at once")
	<-rig.events

	w := rig.wait(t, ctx, req("api", upstream))
	rig.clock.Advance(500*time.Millisecond - time.Microsecond)
	assert.True(t, w.running(), "a microsecond before its turn")
	rig.clock.Advance(time.Microsecond)
	d, err = w.finish(t)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, 500*time.Millisecond, d.Delay)
}

// A waiter whose context ends gives its turn back: the next request gets
// it, and the waiter gets the context's error.
func TestWaitCancelledGivesTheTurnBack(t *testing.T) {
	defer goleak.VerifyNone(t)
	rig := newQueueRig(t)
	bg := context.Background()
	first := rig.wait(t, bg, req("api", upstream))  // at once
	second := rig.wait(t, bg, req("api", upstream)) // 0.5s
	ctx, cancel := context.WithCancel(bg)
	third := rig.wait(t, ctx, req("api", upstream)) // 1s
	require.Equal(t, time.Second, third.seen.Delay)
	cancel()
	d, err := third.finish(t)
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, d.Allowed, "the decision as made")

	fourth := rig.wait(t, bg, req("api", upstream))
	assert.Equal(t, time.Second, fourth.seen.Delay, "the turn given back")

	rig.clock.Advance(time.Second)
	for _, w := range []*waiter{first, second, fourth} {
		d, err := w.finish(t)
		require.NoError(t, err)
		assert.True(t, d.Allowed)
	}
}

// A context whose deadline comes before the turn never waits: the units go
// back at once and the request is denied, RetryAfter its Delay. The
// observer sees the denial.
func TestWaitDeadlineBeforeTheTurnDeniesUpFront(t *testing.T) {
	defer goleak.VerifyNone(t)
	rig := newQueueRig(t)
	bg := context.Background()
	for range 4 { // turns at 0, 0.5, 1, 1.5s
		_, err := rig.limiter.TakeAll(bg, []core.Request{req("api", upstream)}, make([]core.Decision, 1))
		require.NoError(t, err)
		<-rig.events
	}
	// The manual clock reads 2030: this deadline is years away in real
	// time, so only the limiter's comparison can act on it.
	ctx, cancel := context.WithDeadline(bg, rig.clock.Now().Add(2*time.Second))
	defer cancel()
	d, err := rig.limiter.TakeTurn(ctx, []core.Request{req("api", upstream)}, make([]core.Decision, 1))
	require.NoError(t, err, "a denial, not an error")
	assert.False(t, d.Allowed)
	assert.Zero(t, d.Delay)
	assert.Equal(t, 2*time.Second, d.RetryAfter, "its turn was 2s away")
	e := <-rig.events
	assert.Equal(t, core.Denied, e.Kind)

	// A deadline exactly at the turn is too late as well; a microsecond
	// after, the request waits.
	ctx2, cancel2 := context.WithDeadline(bg, rig.clock.Now().Add(2*time.Second))
	defer cancel2()
	d, err = rig.limiter.TakeTurn(ctx2, []core.Request{req("api", upstream)}, make([]core.Decision, 1))
	require.NoError(t, err)
	assert.False(t, d.Allowed, "the units came back: the turn is 2s away again")
	<-rig.events
	ctx3, cancel3 := context.WithDeadline(bg, rig.clock.Now().Add(2*time.Second+time.Microsecond))
	defer cancel3()
	w := rig.wait(t, ctx3, req("api", upstream))
	assert.Equal(t, 2*time.Second, w.seen.Delay)
	rig.clock.Advance(2 * time.Second)
	d, err = w.finish(t)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
}

// Layered: a queue layer and a rate layer decide as one. The reported
// Delay is the longest; a denial by any layer takes nothing from any.
func TestWaitLayered(t *testing.T) {
	defer goleak.VerifyNone(t)
	rig := newQueueRig(t)
	bg := context.Background()
	perUser := core.MustPolicy(core.PolicyConfig{Name: "per-user", Algorithm: core.FixedWindow, Quota: 3, Period: time.Minute})
	slow := core.MustPolicy(core.PolicyConfig{Name: "slow", Algorithm: core.LeakyQueue,
		Quota: 1, Period: time.Second, Burst: 1, MaxQueue: 10})
	rs := []core.Request{req("user", perUser), req("api", upstream), req("api", slow)}
	ds := make([]core.Decision, 3)

	d, err := rig.limiter.TakeAll(bg, rs, ds)
	require.NoError(t, err)
	<-rig.events
	require.True(t, d.Allowed)
	d, err = rig.limiter.TakeAll(bg, rs, ds)
	require.NoError(t, err)
	<-rig.events
	require.True(t, d.Allowed)
	assert.Equal(t, 500*time.Millisecond, ds[1].Delay)
	assert.Equal(t, time.Second, ds[2].Delay)
	assert.Equal(t, time.Second, d.Delay, "the longest turn is reported")
	assert.Same(t, slow, d.Policy)

	w := rig.wait(t, bg, rs...)
	assert.Equal(t, 2*time.Second, w.seen.Delay)

	// The per-user window is spent: the next request is denied, and takes
	// no turn from either queue.
	d, err = rig.limiter.TakeTurn(bg, rs, ds)
	require.NoError(t, err)
	<-rig.events
	assert.False(t, d.Allowed)
	assert.Same(t, perUser, d.Policy)
	assert.Zero(t, d.Delay)
	alone, err := rig.limiter.TakeAll(bg, rs[1:], ds[:2])
	require.NoError(t, err)
	<-rig.events
	assert.Equal(t, 1500*time.Millisecond, ds[0].Delay, "the denial took no turn from upstream")
	assert.Equal(t, 3*time.Second, alone.Delay, "nor from slow")

	rig.clock.Advance(2 * time.Second)
	_, err = w.finish(t)
	require.NoError(t, err)
}

// A cancelled layered waiter gives back every layer's units.
func TestWaitCancelledLayeredGivesEveryLayerBack(t *testing.T) {
	defer goleak.VerifyNone(t)
	rig := newQueueRig(t)
	bg := context.Background()
	perUser := core.MustPolicy(core.PolicyConfig{Name: "per-user", Algorithm: core.TokenBucket, Quota: 1, Period: time.Hour, Burst: 5})
	rs := []core.Request{req("user", perUser), req("api", upstream)}
	_, err := rig.limiter.TakeAll(bg, rs, make([]core.Decision, 2))
	require.NoError(t, err)
	<-rig.events
	ctx, cancel := context.WithCancel(bg)
	w := rig.wait(t, ctx, rs...)
	require.Equal(t, 500*time.Millisecond, w.seen.Delay)
	cancel()
	_, err = w.finish(t)
	require.ErrorIs(t, err, context.Canceled)

	ds := make([]core.Decision, 2)
	_, err = rig.limiter.TakeAll(bg, rs, ds)
	require.NoError(t, err)
	assert.Equal(t, int64(3), ds[0].Remaining, "the token came back")
	assert.Equal(t, 500*time.Millisecond, ds[1].Delay, "the turn came back")
}

// With the store down, a fallback decides; a cancelled waiter gives its
// turn back to the fallback, under the share it decided with.
func TestWaitOnTheFallback(t *testing.T) {
	defer goleak.VerifyNone(t)
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	local, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	require.NoError(t, err)
	l, err := core.NewLimiter(brokenStore{}, core.WithFallback(local, 2), core.WithClock(clock))
	require.NoError(t, err)
	bg := context.Background()
	rs := []core.Request{req("api", upstream)}
	d, err := l.TakeAll(bg, rs, make([]core.Decision, 1))
	require.NoError(t, err)
	require.True(t, d.Allowed && d.Degraded)
	// A half share: one unit a second, so the next turn is 1s away.
	ctx, cancel := context.WithCancel(bg)
	cancel()
	d, err = l.TakeTurn(ctx, rs, make([]core.Decision, 1))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, time.Second, d.Delay)
	d, err = l.TakeAll(bg, rs, make([]core.Decision, 1))
	require.NoError(t, err)
	assert.Equal(t, time.Second, d.Delay, "the turn came back to the fallback")
}

// Without a queue policy, Wait is TakeAll: it returns at once.
func TestWaitWithoutAQueueIsTakeAll(t *testing.T) {
	defer goleak.VerifyNone(t)
	rig := newQueueRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 11 {
		d, err := rig.limiter.TakeTurn(ctx, []core.Request{req("k", perIP)}, make([]core.Decision, 1))
		require.NoError(t, err, "a done context changes nothing when nobody waits")
		assert.Equal(t, i < 10, d.Allowed)
		assert.Zero(t, d.Delay)
		<-rig.events
	}
	_, err := rig.limiter.TakeTurn(ctx, nil, nil)
	assert.Error(t, err)
	_, err = rig.limiter.TakeTurn(ctx, []core.Request{{Key: "k", Policy: upstream}}, make([]core.Decision, 1))
	assert.ErrorAs(t, err, new(*core.RequestError))
}

func TestWithClockRefusesNil(t *testing.T) {
	store, err := memory.New(memory.WithSweepInterval(0))
	require.NoError(t, err)
	_, err = core.NewLimiter(store, core.WithClock(nil))
	assert.Error(t, err)
}

// A store that cannot give units back: the observer hears of it.
type noRefunds struct{ core.Store }

var errNoRefund = errors.New("refund refused")

func (noRefunds) Adjust(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, errNoRefund
}

func (noRefunds) ReturnTurn(context.Context, core.Request, time.Duration) (core.Decision, error) {
	return core.Decision{}, errNoRefund
}

func TestWaitReportsAFailedGiveBack(t *testing.T) {
	defer goleak.VerifyNone(t)
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	store, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	require.NoError(t, err)
	var rec recorder
	l, err := core.NewLimiter(noRefunds{store}, core.WithClock(clock), core.WithObserver(rec.observe))
	require.NoError(t, err)
	rs := []core.Request{req("api", upstream)}
	_, err = l.TakeTurn(context.Background(), rs, make([]core.Decision, 1))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = l.TakeTurn(ctx, rs, make([]core.Decision, 1))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []core.Kind{core.NearLimit, core.NearLimit, core.Queued, core.StoreFailed, core.Shed}, rec.outcomes())
	assert.ErrorIs(t, rec.events[3].Err, errNoRefund)
}

// The observer sees each wait: queued with its turn, then waited for as
// long as the clock moved, or shed with the context's error if the client
// goes first. A request served at once is not queued.
func TestWaitReportsTheWait(t *testing.T) {
	defer goleak.VerifyNone(t)
	rig := newQueueRig(t)
	ctx := context.Background()
	_, err := rig.limiter.TakeTurn(ctx, []core.Request{req("at-once", upstream)}, make([]core.Decision, 1))
	require.NoError(t, err)
	<-rig.events

	w := rig.wait(t, ctx, req("at-once", upstream))
	queued := <-rig.waits
	assert.Equal(t, core.Event{Kind: core.Queued, Key: "at-once", Decision: w.seen}, queued)
	assert.Equal(t, 500*time.Millisecond, queued.Decision.Delay)
	rig.clock.Advance(200 * time.Millisecond)
	rig.clock.Advance(300 * time.Millisecond)
	_, err = w.finish(t)
	require.NoError(t, err)
	assert.Equal(t, core.Event{Kind: core.Waited, Key: "at-once", Decision: w.seen, Waited: 500 * time.Millisecond}, <-rig.waits)

	gone, leave := context.WithCancel(ctx)
	w = rig.wait(t, gone, req("at-once", upstream))
	assert.Equal(t, core.Queued, (<-rig.waits).Kind)
	rig.clock.Advance(100 * time.Millisecond)
	leave()
	_, err = w.finish(t)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, core.Event{Kind: core.Shed, Key: "at-once", Decision: w.seen, Waited: 100 * time.Millisecond, Err: context.Canceled}, <-rig.waits)
	assert.Empty(t, rig.waits)
}

func TestManualClockSleepUntil(t *testing.T) {
	defer goleak.VerifyNone(t)
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx := context.Background()
	require.NoError(t, clock.SleepUntil(ctx, clock.Now()), "now has come")
	done := make(chan error)
	then := clock.Now().Add(time.Second)
	go func() { done <- clock.SleepUntil(ctx, then) }()
	clock.Advance(time.Second)
	require.NoError(t, <-done, "woken when the clock reaches the time, whenever it began to sleep")
	cctx, cancel := context.WithCancel(ctx)
	then = clock.Now().Add(time.Second)
	go func() { done <- clock.SleepUntil(cctx, then) }()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestSystemClockSleepUntil(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, core.SystemClock{}.SleepUntil(ctx, time.Now().Add(-time.Second)), "a time past")
	cancel()
	assert.ErrorIs(t, core.SystemClock{}.SleepUntil(ctx, time.Now().Add(time.Hour)), context.Canceled)
}

// Wait on a request that does not wait allocates nothing beyond what the
// store does (here none: the memory store on a key it holds).
func TestWaitAllocatesNothingWhenNobodyWaits(t *testing.T) {
	store, err := memory.New(memory.WithSweepInterval(0))
	require.NoError(t, err)
	l, err := core.NewLimiter(store)
	require.NoError(t, err)
	ctx := context.Background()
	fast := core.MustPolicy(core.PolicyConfig{Name: "fast", Algorithm: core.LeakyQueue,
		Quota: 1_000_000, Period: time.Second, Burst: 1 << 30, MaxDelay: time.Second})
	for _, p := range []*core.Policy{core.PerSecond(1_000_000), fast} {
		rs := []core.Request{{Key: "k", Policy: p, Cost: 1}}
		ds := make([]core.Decision, 1)
		_, err = l.TakeTurn(ctx, rs, ds)
		require.NoError(t, err)
		allocs := testing.AllocsPerRun(100, func() {
			d, err := l.TakeTurn(ctx, rs, ds)
			if err != nil || !d.Allowed || d.Delay != 0 {
				t.Fatalf("%v: %+v, %v", p, d, err)
			}
		})
		assert.Zero(t, allocs, "%v", p)
	}
}

// Wait on a request that does not wait, against TakeAll on the same: the
// price of the one call a middleware makes.
//
//	go test ./core -run '^$' -bench 'Wait|TakeAll' -benchmem
func BenchmarkWaitNobodyWaits(b *testing.B) {
	store, err := memory.New(memory.WithSweepInterval(0))
	require.NoError(b, err)
	l, err := core.NewLimiter(store)
	require.NoError(b, err)
	ctx := context.Background()
	rs := []core.Request{{Key: "k", Policy: core.PerSecond(1_000_000), Cost: 1}}
	ds := make([]core.Decision, 1)
	b.Run("Wait", func(b *testing.B) {
		for b.Loop() {
			_, _ = l.TakeTurn(ctx, rs, ds)
		}
	})
	b.Run("TakeAll", func(b *testing.B) {
		for b.Loop() {
			_, _ = l.TakeAll(ctx, rs, ds)
		}
	})
}
