package core_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/sluicetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// brokenStore fails every call, as a store whose server is down does.
type brokenStore struct{}

var errDown = errors.New("connection refused")

func (brokenStore) Take(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, errDown
}
func (brokenStore) TakeAll(context.Context, []core.Request, []core.Decision) error { return errDown }
func (brokenStore) Adjust(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, errDown
}

// ReturnTurn gives a turn back as Adjust gives units back.
func (s brokenStore) ReturnTurn(ctx context.Context, r core.Request, _ time.Duration) (core.Decision, error) {
	r.Cost = -r.Cost
	return s.Adjust(ctx, r)
}
func (brokenStore) Reset(context.Context, string, *core.Policy) error { return errDown }

// recorder is an Observer that keeps what it sees.
type recorder struct {
	mu     sync.Mutex
	events []core.Event
}

func (r *recorder) observe(_ context.Context, e core.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) outcomes() []core.Kind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var os []core.Kind
	for _, e := range r.events {
		os = append(os, e.Kind)
	}
	return os
}

func newMemory(t *testing.T) core.Store {
	s, err := memory.New(memory.WithClock(sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var perIP = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 2, Period: time.Second, Burst: 10})

func TestLimiterObservesEveryOutcome(t *testing.T) {
	var rec recorder
	l, err := core.NewLimiter(newMemory(t), core.WithObserver(rec.observe), core.WithNearLimit(0.2))
	require.NoError(t, err)
	for range 11 {
		_, err := l.Take(context.Background(), core.Request{Key: "1.2.3.4", Policy: perIP, Cost: 1})
		require.NoError(t, err)
	}
	want := []core.Kind{}
	for range 7 {
		want = append(want, core.Allowed)
	}
	want = append(want, core.NearLimit, core.NearLimit, core.NearLimit, core.Denied)
	assert.Equal(t, want, rec.outcomes())
	assert.Equal(t, "1.2.3.4", rec.events[0].Key)
	assert.Same(t, perIP, rec.events[10].Decision.Policy)
	assert.Equal(t, "near-limit", core.NearLimit.String())
}

func TestLimiterFailOpen(t *testing.T) {
	var rec recorder
	l, err := core.NewLimiter(brokenStore{}, core.WithObserver(rec.observe))
	require.NoError(t, err)
	d, err := l.Take(context.Background(), core.Request{Key: "k", Policy: perIP, Cost: 1})
	require.NoError(t, err, "a store failure is not the caller's error")
	assert.True(t, d.Allowed)
	assert.True(t, d.Degraded)
	assert.Zero(t, d.Limit, "fail-open invents no figures")
	require.Len(t, rec.events, 1)
	assert.Equal(t, core.StoreFailed, rec.events[0].Kind)
	assert.ErrorIs(t, rec.events[0].Err, errDown)
	var se *core.StoreError
	assert.ErrorAs(t, rec.events[0].Err, &se)
}

func TestLimiterFailClosed(t *testing.T) {
	l, err := core.NewLimiter(brokenStore{}, core.WithFailClosed(3*time.Second))
	require.NoError(t, err)
	d, err := l.Take(context.Background(), core.Request{Key: "k", Policy: perIP, Cost: 1})
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.True(t, d.Degraded)
	assert.Equal(t, 3*time.Second, d.RetryAfter)

	ds := make([]core.Decision, 2)
	d, err = l.TakeAll(context.Background(), []core.Request{{Key: "a", Policy: perIP, Cost: 1}, {Key: "b", Policy: perIP, Cost: 1}}, ds)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.True(t, ds[0].Degraded && ds[1].Degraded)
}

func TestLimiterFallsBackToLocalStore(t *testing.T) {
	var rec recorder
	l, err := core.NewLimiter(brokenStore{}, core.WithFallback(newMemory(t), 1), core.WithFailClosed(0), core.WithObserver(rec.observe))
	require.NoError(t, err)
	allowed := 0
	for range 15 {
		d, err := l.Take(context.Background(), core.Request{Key: "k", Policy: perIP, Cost: 1})
		require.NoError(t, err)
		assert.True(t, d.Degraded)
		if d.Allowed {
			allowed++
		}
	}
	assert.Equal(t, 10, allowed, "the fallback enforces the policy locally")
	assert.Equal(t, core.StoreFailed, rec.events[0].Kind)
	assert.Equal(t, int64(10), rec.events[0].Decision.Limit, "with the fallback's figures")
}

func TestLimiterRejectsBadInput(t *testing.T) {
	_, err := core.NewLimiter(nil)
	assert.Error(t, err)
	_, err = core.NewLimiter(brokenStore{}, core.WithNearLimit(1.5))
	assert.Error(t, err)
	_, err = core.NewLimiter(brokenStore{}, core.WithFallback(brokenStore{}, 0))
	assert.ErrorContains(t, err, "fallback share must be 1 to 65536, got 0")
	_, err = core.NewLimiter(brokenStore{}, core.WithFallback(nil, 1))
	assert.Error(t, err)
	_, err = core.NewLimiter(brokenStore{}, core.WithFailClosed(time.Millisecond))
	assert.Error(t, err)

	l, err := core.NewLimiter(newMemory(t))
	require.NoError(t, err)
	_, err = l.Take(context.Background(), core.Request{Key: "k", Policy: perIP, Cost: 0})
	assert.ErrorAs(t, err, new(*core.RequestError))
	_, err = l.Take(context.Background(), core.Request{Key: "k", Policy: nil, Cost: 1})
	assert.ErrorAs(t, err, new(*core.RequestError))
	_, err = l.TakeAll(context.Background(), nil, nil)
	assert.Error(t, err)
}

// Reservations for token-metered work: reserve an estimate, then refund what
// was not used or charge the extra.
func TestReservationReconciles(t *testing.T) {
	tokens := core.MustPolicy(core.PolicyConfig{Name: "tokens", Algorithm: core.TokenBucket, Quota: 1000, Period: time.Minute, Burst: 1000})
	l, err := core.NewLimiter(newMemory(t))
	require.NoError(t, err)
	ctx := context.Background()

	res, err := l.Reserve(ctx, []core.Request{{Key: "user", Policy: tokens, Cost: 500}}, nil)
	require.NoError(t, err)
	require.True(t, res.Decision.Allowed)
	assert.Equal(t, int64(500), res.Decision.Remaining)
	require.NoError(t, res.Reconcile(ctx, 120), "used less: 380 back")
	assert.ErrorIs(t, res.Reconcile(ctx, 120), core.ErrSettled)

	d, err := l.Take(ctx, core.Request{Key: "user", Policy: tokens, Cost: 1})
	require.NoError(t, err)
	assert.Equal(t, int64(879), d.Remaining)

	res, err = l.Reserve(ctx, []core.Request{{Key: "user", Policy: tokens, Cost: 100}}, nil)
	require.NoError(t, err)
	require.NoError(t, res.Reconcile(ctx, 1500), "used more than the bucket holds: into debt")
	d, err = l.Take(ctx, core.Request{Key: "user", Policy: tokens, Cost: 1})
	require.NoError(t, err)
	assert.False(t, d.Allowed, "the debt is paid before anything else passes")

	denied, err := l.Reserve(ctx, []core.Request{{Key: "user", Policy: tokens, Cost: 10}}, nil)
	require.NoError(t, err)
	assert.False(t, denied.Decision.Allowed)
	assert.NoError(t, denied.Reconcile(ctx, 10), "a denied reservation settles to nothing")

	other, err := l.Reserve(ctx, []core.Request{{Key: "other", Policy: tokens, Cost: 300}}, nil)
	require.NoError(t, err)
	require.NoError(t, other.Reconcile(ctx, 0))
	d, err = l.Take(ctx, core.Request{Key: "other", Policy: tokens, Cost: 1})
	require.NoError(t, err)
	assert.Equal(t, int64(999), d.Remaining, "a cancelled reservation gives everything back")
	assert.Error(t, other.Reconcile(ctx, -1))
}

// A layered reservation settles each layer at its own cost: the login
// layer is refunded, the per-IP layer keeps its unit.
func TestReservationReconcilesEachLayer(t *testing.T) {
	logins := core.MustPolicy(core.PolicyConfig{Name: "logins", Algorithm: core.GCRA, Quota: 3, Period: time.Hour, Burst: 3})
	l, err := core.NewLimiter(newMemory(t))
	require.NoError(t, err)
	ctx := context.Background()
	layers := []core.Request{{Key: "ip", Policy: perIP, Cost: 1}, {Key: "ip", Policy: logins, Cost: 1}}

	res, err := l.Reserve(ctx, layers, nil)
	require.NoError(t, err)
	require.True(t, res.Decision.Allowed)
	assert.Error(t, res.ReconcileEach(ctx, []int64{1}), "one cost for two layers")
	var ce *core.RequestError
	require.ErrorAs(t, res.ReconcileEach(ctx, []int64{1, -1}), &ce)
	assert.Equal(t, "logins", ce.Policy)
	require.NoError(t, res.ReconcileEach(ctx, []int64{1, 0}), "checks failed before anything settled")
	assert.ErrorIs(t, res.ReconcileEach(ctx, []int64{1, 0}), core.ErrSettled)

	ds := make([]core.Decision, 2)
	_, err = l.TakeAll(ctx, layers, ds)
	require.NoError(t, err)
	assert.Equal(t, int64(8), ds[0].Remaining, "per-ip kept the reserved unit and took one more")
	assert.Equal(t, int64(2), ds[1].Remaining, "logins got the reserved unit back")
}

func TestReservationAdjustFailureIsReported(t *testing.T) {
	var rec recorder
	flaky := &flakyStore{Store: newMemory(t)}
	l, err := core.NewLimiter(flaky, core.WithObserver(rec.observe))
	require.NoError(t, err)
	res, err := l.Reserve(context.Background(), []core.Request{{Key: "k", Policy: perIP, Cost: 5}}, nil)
	require.NoError(t, err)
	flaky.down = true
	err = res.Reconcile(context.Background(), 1)
	assert.ErrorIs(t, err, errDown)
	assert.Equal(t, core.StoreFailed, rec.events[len(rec.events)-1].Kind)
}

type flakyStore struct {
	core.Store
	down bool
}

func (f *flakyStore) Adjust(ctx context.Context, r core.Request) (core.Decision, error) {
	if f.down {
		return core.Decision{}, errDown
	}
	return f.Store.Adjust(ctx, r)
}

// failingStore fails every call with its own error.
type failingStore struct{ err error }

func (f failingStore) Take(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, f.err
}
func (f failingStore) TakeAll(context.Context, []core.Request, []core.Decision) error { return f.err }
func (f failingStore) Adjust(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, f.err
}
func (f failingStore) Reset(context.Context, string, *core.Policy) error { return f.err }
func (f failingStore) ReturnTurn(context.Context, core.Request, time.Duration) (core.Decision, error) {
	return core.Decision{}, f.err
}

func TestLimiterReportsAFallbackThatFailsToo(t *testing.T) {
	errLocal := errors.New("local store broken")
	var rec recorder
	l, err := core.NewLimiter(brokenStore{}, core.WithFallback(failingStore{errLocal}, 1),
		core.WithFailClosed(0), core.WithObserver(rec.observe))
	require.NoError(t, err)
	d, err := l.Take(context.Background(), core.Request{Key: "k", Policy: perIP, Cost: 1})
	require.NoError(t, err)
	assert.False(t, d.Allowed, "the failure mode decides when the fallback fails")
	assert.Zero(t, d.Limit)
	ds := make([]core.Decision, 2)
	_, err = l.TakeAll(context.Background(), []core.Request{{Key: "a", Policy: perIP, Cost: 1}, {Key: "b", Policy: perIP, Cost: 1}}, ds)
	require.NoError(t, err)
	assert.False(t, ds[0].Allowed || ds[1].Allowed)
	require.Len(t, rec.events, 2)
	for _, e := range rec.events {
		assert.Equal(t, core.StoreFailed, e.Kind)
		assert.ErrorIs(t, e.Err, errDown, "the store's error")
		assert.ErrorIs(t, e.Err, errLocal, "and the fallback's")
	}
}

func TestLimiterFallbackAppliesItsShare(t *testing.T) {
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	local, err := memory.New(memory.WithClock(clock))
	require.NoError(t, err)
	t.Cleanup(func() { _ = local.Close() })
	l, err := core.NewLimiter(brokenStore{}, core.WithFallback(local, 4))
	require.NoError(t, err)
	ctx := context.Background()
	count := func(key string, p *core.Policy, n int) (allowed int) {
		for range n {
			d, err := l.Take(ctx, core.Request{Key: key, Policy: p, Cost: 1})
			require.NoError(t, err)
			require.True(t, d.Degraded)
			require.Same(t, p, d.Policy, "reported under the policy asked for")
			if d.Allowed {
				allowed++
			}
		}
		return allowed
	}
	// perIP: burst 10, 2/s. A quarter: burst 2, one unit every 2s.
	assert.Equal(t, 2, count("k", perIP, 10))
	clock.Advance(2 * time.Second)
	assert.Equal(t, 1, count("k", perIP, 10), "a quarter of the rate")
	window := core.MustPolicy(core.PolicyConfig{Name: "w", Algorithm: core.FixedWindow, Quota: 10, Period: time.Minute})
	assert.Equal(t, 2, count("k", window, 10), "10/4 per window, rounded down")

	ds := make([]core.Decision, 2)
	clock.Advance(time.Hour)
	d, err := l.TakeAll(ctx, []core.Request{{Key: "a", Policy: perIP, Cost: 2}, {Key: "a", Policy: window, Cost: 2}}, ds)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(2), ds[0].Limit, "the share's figures")
	assert.Same(t, window, ds[1].Policy)

	// A reservation the fallback granted is settled on the fallback, under
	// the share.
	clock.Advance(time.Hour)
	res, err := l.Reserve(ctx, []core.Request{{Key: "r", Policy: perIP, Cost: 1}}, nil)
	require.NoError(t, err)
	require.True(t, res.Decision.Allowed)
	require.NoError(t, res.Reconcile(ctx, 0))
	assert.Equal(t, 2, count("r", perIP, 10), "the unit came back to the share")

	_, err = core.NewLimiter(brokenStore{}, core.WithFallback(newMemory(t), 0))
	assert.Error(t, err)
}

// slowStore is a memory store whose calls last until the monotonic clock has
// moved, however coarse it is: a store call that takes time, without a sleep.
type slowStore struct{ core.Store }

func (s slowStore) wait() {
	for start := time.Now(); time.Since(start) == 0; {
	}
}

func (s slowStore) Take(ctx context.Context, r core.Request) (core.Decision, error) {
	s.wait()
	return s.Store.Take(ctx, r)
}

func (s slowStore) TakeAll(ctx context.Context, rs []core.Request, ds []core.Decision) error {
	s.wait()
	return s.Store.TakeAll(ctx, rs, ds)
}

// Events carry the time the store took, unless the limiter is told they
// need not: then it reads no clock, and Latency is zero.
func TestLimiterLatency(t *testing.T) {
	ctx := context.Background()
	for _, timed := range []bool{true, false} {
		rec := &recorder{}
		opts := []core.Option{core.WithObserver(rec.observe)}
		if !timed {
			opts = append(opts, core.WithoutLatency())
		}
		l, err := core.NewLimiter(slowStore{newMemory(t)}, opts...)
		require.NoError(t, err)
		_, err = l.Take(ctx, core.Request{Key: "k", Policy: perIP, Cost: 1})
		require.NoError(t, err)
		_, err = l.TakeAll(ctx, []core.Request{{Key: "k", Policy: perIP, Cost: 1}}, make([]core.Decision, 1))
		require.NoError(t, err)
		require.Len(t, rec.events, 2)
		for _, e := range rec.events {
			if timed {
				assert.Positive(t, e.Latency, "the store's call took time")
			} else {
				assert.Zero(t, e.Latency)
			}
		}
	}
}
