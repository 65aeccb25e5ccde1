package sluiceotel_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/observe/sluiceotel"
	"github.com/sluice-go/sluice/store/memory"
)

// clock is a core.Clock that moves only when told to, and whose
// timers never fire: no wait runs out unless a test says so.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// SleepUntil is never called: nothing here waits on the clock.
func (c *clock) SleepUntil(context.Context, time.Time) error { panic("clock: SleepUntil unused") }

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *clock) AfterFunc(time.Duration, func()) (stop func() bool) { return stopped{}.Stop }

type stopped struct{}

func (stopped) Stop() bool { return true }

// A concurrency limit of one with a queue of two: one request in flight,
// two waiting; a critical request displaces the sheddable one, the default
// one gives up, the critical one gets its turn. A second limiter without a
// queue sheds at once.
func TestBackpressure(t *testing.T) {
	f := newFixture(t, sluiceotel.WithLimits("checkout"))
	ctx := context.Background()
	clk := &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	l, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(1), Queue: 2, MaxWait: time.Minute,
		Clock: clk, Name: "checkout", Observer: f.metrics.Observe})
	require.NoError(t, err)

	type acquired struct {
		p   backpressure.Permit
		err error
	}
	acquire := func(ctx context.Context, class core.Class) <-chan acquired {
		c := make(chan acquired, 1)
		go func() {
			p, err := l.Acquire(ctx, "", class)
			c <- acquired{p, err}
		}()
		return c
	}
	waiting := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { return l.Waiting() == n }, 10*time.Second, time.Millisecond)
	}

	first, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	giveUp, cancel := context.WithCancel(ctx)
	defer cancel()
	def := acquire(giveUp, core.Default)
	waiting(1)
	sheddable := acquire(ctx, core.Sheddable)
	waiting(2)

	ms := f.collect(t)
	const checkout = "sluice.rate_limiting.policy=checkout"
	assert.Equal(t, map[string]int64{checkout: 2}, sums(t, ms, "sluice.rate_limiting.queued_requests"))
	assert.Equal(t, map[string]int64{checkout: 1}, sums(t, ms, "sluice.rate_limiting.active_requests"))
	assert.Equal(t, map[string]int64{checkout: 1}, gauges(t, ms, "sluice.rate_limiting.concurrency_limit"))

	clk.Advance(20 * time.Millisecond)
	critical := acquire(ctx, core.Critical)
	var rej *backpressure.ShedError
	require.ErrorAs(t, (<-sheddable).err, &rej)
	assert.Equal(t, backpressure.Displaced, rej.Reason)
	waiting(2)
	clk.Advance(10 * time.Millisecond)
	cancel()
	require.ErrorIs(t, (<-def).err, context.Canceled)
	waiting(1)
	clk.Advance(5 * time.Millisecond)
	first.Release()
	got := <-critical
	require.NoError(t, got.err)
	defer got.p.Release()

	search, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(1), Clock: clk, Name: "search", Observer: f.metrics.Observe})
	require.NoError(t, err)
	held, err := search.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	defer held.Release()
	_, err = search.Acquire(ctx, "", core.Sheddable)
	require.True(t, errors.As(err, &rej))

	ms = f.collect(t)
	const searchPol = "sluice.rate_limiting.policy=search"
	assert.Equal(t, map[string]int64{checkout: 0}, sums(t, ms, "sluice.rate_limiting.queued_requests"), "search queued none")
	assert.Equal(t, map[string]int64{checkout: 1, searchPol: 1}, sums(t, ms, "sluice.rate_limiting.active_requests"))
	assert.Equal(t, map[string]int64{checkout: 1, searchPol: 1}, gauges(t, ms, "sluice.rate_limiting.concurrency_limit"))
	assert.Equal(t, map[string]int64{
		"sluice.rate_limiting.class=sheddable," + checkout + ",sluice.rate_limiting.reason=displaced":                   1,
		"sluice.rate_limiting.class=default," + checkout + ",sluice.rate_limiting.reason=canceled":                      1,
		"sluice.rate_limiting.class=sheddable,sluice.rate_limiting.policy=search,sluice.rate_limiting.reason=saturated": 1,
	}, nonzero(sums(t, ms, "sluice.rate_limiting.shed_requests")), "WithLimits started checkout's at zero")

	h := ms["sluice.rate_limiting.request.time_in_queue"]
	assert.Equal(t, "s", h.Unit)
	counts, waits := map[string]uint64{}, map[string]float64{}
	for _, p := range h.Data.(metricdata.Histogram[float64]).DataPoints {
		counts[encode(p.Attributes)], waits[encode(p.Attributes)] = p.Count, p.Sum
	}
	// The sheddable request waited 20 ms, the default one 30, the critical
	// one 15: from its arrival, 20 ms in, to the release, 35 ms in.
	const (
		waitDisplaced = "sluice.rate_limiting.class=sheddable," + checkout + ",sluice.rate_limiting.result=displaced"
		waitCanceled  = "sluice.rate_limiting.class=default," + checkout + ",sluice.rate_limiting.result=canceled"
		waitAcquired  = "sluice.rate_limiting.class=critical," + checkout + ",sluice.rate_limiting.result=acquired"
	)
	assert.Equal(t, map[string]uint64{waitDisplaced: 1, waitCanceled: 1, waitAcquired: 1}, counts)
	assert.InDeltaMapValues(t, map[string]float64{waitDisplaced: 0.020, waitCanceled: 0.030, waitAcquired: 0.015}, waits, 1e-9)

	for name, unit := range map[string]string{
		"sluice.rate_limiting.queued_requests":   "{request}",
		"sluice.rate_limiting.active_requests":   "{request}",
		"sluice.rate_limiting.shed_requests":     "{request}",
		"sluice.rate_limiting.concurrency_limit": "{request}",
	} {
		assert.Equal(t, unit, ms[name].Unit, name)
		assert.NotEmpty(t, ms[name].Description, name)
	}
	assert.False(t, ms["sluice.rate_limiting.queued_requests"].Data.(metricdata.Sum[int64]).IsMonotonic)
}

// A limit's requests in flight count down as they end, to zero.
func TestActiveRequestsCountDown(t *testing.T) {
	f := newFixture(t)
	l, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(3), Name: "w", Observer: f.metrics.Observe})
	require.NoError(t, err)
	var held []backpressure.Permit
	for range 3 {
		p, err := l.Acquire(context.Background(), "", core.Default)
		require.NoError(t, err)
		held = append(held, p)
	}
	assert.Equal(t, map[string]int64{"sluice.rate_limiting.policy=w": 3}, sums(t, f.collect(t), "sluice.rate_limiting.active_requests"))
	for _, p := range held {
		p.Done(core.Succeeded)
		p.Release() // a second give-back counts nothing
	}
	ms := f.collect(t)
	assert.Equal(t, map[string]int64{"sluice.rate_limiting.policy=w": 0}, sums(t, ms, "sluice.rate_limiting.active_requests"))
	assert.Equal(t, map[string]int64{"sluice.rate_limiting.policy=w": 3}, gauges(t, ms, "sluice.rate_limiting.concurrency_limit"))
	assert.NotContains(t, ms, "sluice.rate_limiting.concurrency_baseline", "a static limit has none")
}

// An adaptive limit's baseline is a gauge, in seconds, once measured.
func TestBaselineGauge(t *testing.T) {
	f := newFixture(t)
	g, err := backpressure.NewGradient(backpressure.GradientConfig{Initial: 2, Min: 1, ProbeSamples: 1})
	require.NoError(t, err)
	clk := &clock{now: time.Unix(0, 0)}
	l, err := backpressure.New(backpressure.Config{Controller: g, Clock: clk, Name: "g", Observer: f.metrics.Observe})
	require.NoError(t, err)
	assert.NotContains(t, f.collect(t), "sluice.rate_limiting.concurrency_baseline", "not measured yet")
	p, err := l.Acquire(context.Background(), "", core.Default)
	require.NoError(t, err)
	clk.Advance(25 * time.Millisecond)
	p.Done(core.Succeeded)
	m := f.collect(t)["sluice.rate_limiting.concurrency_baseline"]
	assert.Equal(t, "s", m.Unit)
	pts := m.Data.(metricdata.Gauge[float64]).DataPoints
	require.Len(t, pts, 1)
	assert.Equal(t, "sluice.rate_limiting.policy=g", encode(pts[0].Attributes))
	assert.Equal(t, 0.025, pts[0].Value)
}

// gauges returns the points of the Int64 gauge named name, by attribute
// set.
func gauges(t *testing.T, ms map[string]metricdata.Metrics, name string) map[string]int64 {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		return nil
	}
	g, ok := m.Data.(metricdata.Gauge[int64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	got := map[string]int64{}
	for _, p := range g.DataPoints {
		got[encode(p.Attributes)] = p.Value
	}
	return got
}

// A LeakyQueue policy's waits, through the limiter's own observer: time in
// the queue under the policy, without a class; a client gone while it
// waits is a request shed, canceled.
func TestShapingQueue(t *testing.T) {
	f := newFixture(t)
	shaped := core.MustPolicy(core.PolicyConfig{Name: "shaped", Algorithm: core.LeakyQueue, Quota: 2, Period: time.Second, Burst: 1, MaxDelay: 5 * time.Second})
	store, err := memory.New(memory.WithClock(f.clock))
	require.NoError(t, err)
	defer store.Close()
	queued := make(chan struct{}, 4)
	l, err := core.NewLimiter(store, core.WithClock(f.clock), core.WithObserver(core.Observers(f.metrics.Observe, func(_ context.Context, e core.Event) {
		if e.Kind == core.Queued {
			queued <- struct{}{}
		}
	})))
	require.NoError(t, err)
	rs := []core.Request{{Key: "k", Policy: shaped, Cost: 1}}
	wait := func(ctx context.Context) <-chan error {
		c := make(chan error, 1)
		go func() {
			_, err := l.TakeTurn(ctx, rs, make([]core.Decision, 1))
			c <- err
		}()
		return c
	}
	require.NoError(t, <-wait(context.Background()), "the first passes at once")
	served := wait(context.Background())
	<-queued
	f.clock.Advance(500 * time.Millisecond)
	require.NoError(t, <-served)
	gone, leave := context.WithCancel(context.Background())
	left := wait(gone)
	<-queued
	f.clock.Advance(200 * time.Millisecond)
	leave()
	require.ErrorIs(t, <-left, context.Canceled)

	ms := f.collect(t)
	const policy = "sluice.rate_limiting.policy=shaped"
	h := ms["sluice.rate_limiting.request.time_in_queue"]
	waits := map[string]float64{}
	for _, p := range h.Data.(metricdata.Histogram[float64]).DataPoints {
		waits[encode(p.Attributes)] = p.Sum
	}
	assert.Equal(t, map[string]uint64{policy + ",sluice.rate_limiting.result=acquired": 1, policy + ",sluice.rate_limiting.result=canceled": 1},
		counts(t, ms, "sluice.rate_limiting.request.time_in_queue"))
	assert.InDeltaMapValues(t, map[string]float64{policy + ",sluice.rate_limiting.result=acquired": 0.5, policy + ",sluice.rate_limiting.result=canceled": 0.2}, waits, 1e-9)
	assert.Equal(t, map[string]int64{policy + ",sluice.rate_limiting.reason=canceled": 1}, sums(t, ms, "sluice.rate_limiting.shed_requests"))
	assert.Equal(t, map[string]int64{"sluice.rate_limiting.degraded=false,sluice.rate_limiting.near_limit=true," + policy + ",sluice.rate_limiting.result=acquired": 3}, sums(t, ms, "sluice.rate_limiting.requests"))
}

// nonzero returns the series of sums that have counted something.
func nonzero(sums map[string]int64) map[string]int64 {
	for k, v := range sums {
		if v == 0 {
			delete(sums, k)
		}
	}
	return sums
}
