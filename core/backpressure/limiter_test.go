package backpressure

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/core"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newLimiter(t *testing.T, c Config) (*Limiter, *fakeClock, *recorder) {
	t.Helper()
	clock, rec := newFakeClock(), &recorder{}
	c.Clock, c.Observer = clock, rec.observe
	l, err := New(c)
	require.NoError(t, err)
	rec.l = l
	return l, clock, rec
}

func TestStaticAdmitsUpToTheLimit(t *testing.T) {
	ctx := context.Background()
	l, clock, rec := newLimiter(t, Config{Controller: Static(2)})
	p1, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	p2, err := l.Acquire(ctx, "", core.Critical)
	require.NoError(t, err)
	_, err = l.Acquire(ctx, "", core.Critical)
	r := rejection(t, err)
	assert.Equal(t, ShedError{Reason: Saturated, Class: core.Critical, RetryAfter: time.Second}, *r)
	assert.Equal(t, "backpressure: critical request shed: saturated", r.Error())
	assert.Equal(t, []core.Event{{Kind: core.Shed, Class: core.Critical, Err: r}}, rec.take())
	assert.Equal(t, [][2]int{{2, 0}}, rec.takenCounts())

	clock.Advance(10 * time.Millisecond)
	p1.Done(core.Succeeded)
	assert.Equal(t, 1, l.InFlight())
	p3, err := l.Acquire(ctx, "", core.Sheddable)
	require.NoError(t, err)
	p2.Release()
	p3.Release()
	assert.Equal(t, 0, l.InFlight())
	assert.Equal(t, 2, l.Limit())
	assert.Empty(t, rec.take(), "a static limit never changes")
}

func TestPermitReleasesOnce(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(3)})
	p, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	q, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	copied := p
	p.Done(core.Succeeded)
	p.Done(core.Failed)
	p.Release()
	copied.Release()
	assert.Equal(t, 1, l.InFlight(), "only the first release of a permit counts")

	// The freed slot is reused: the stale permit must not free its new holder.
	r, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	require.Same(t, p.s, r.s, "the slot is reused")
	p.Release()
	assert.Equal(t, 2, l.InFlight())
	r.Release()
	q.Release()
	assert.Equal(t, 0, l.InFlight())
	Permit{}.Release() // holds nothing
}

func TestQueueAdmitsInOrder(t *testing.T) {
	ctx := context.Background()
	l, clock, rec := newLimiter(t, Config{Controller: Static(1), Queue: 3, MaxWait: time.Second})
	holder, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	a := acquireAsync(t, ctx, l, "", core.Default, 1)
	clock.Advance(10 * time.Millisecond)
	b := acquireAsync(t, ctx, l, "", core.Default, 2)
	clock.Advance(10 * time.Millisecond)
	c := acquireAsync(t, ctx, l, "", core.Default, 3)

	_, err = l.Acquire(ctx, "", core.Default)
	assert.Equal(t, QueueFull, rejection(t, err).Reason)

	clock.Advance(5 * time.Millisecond)
	holder.Done(core.Succeeded)
	ra := recv(t, a)
	require.NoError(t, ra.err)
	assert.Equal(t, 2, l.Waiting())
	ra.p.Done(core.Succeeded)
	rb := recv(t, b)
	require.NoError(t, rb.err)
	assert.Equal(t, 1, l.Waiting())
	rb.p.Done(core.Succeeded)
	rc := recv(t, c)
	require.NoError(t, rc.err)
	rc.p.Done(core.Succeeded)
	assert.Equal(t, 0, l.InFlight())
	assert.Equal(t, 0, clock.pending(), "every wait's timer is stopped")

	var waits []time.Duration
	for _, e := range rec.take() {
		if e.Kind == core.Waited {
			waits = append(waits, e.Waited)
		}
	}
	assert.Equal(t, []time.Duration{25 * time.Millisecond, 15 * time.Millisecond, 5 * time.Millisecond}, waits)
}

func TestQueueSheds(t *testing.T) {
	ctx := context.Background()
	l, clock, rec := newLimiter(t, Config{Controller: Static(1), Queue: 2, MaxWait: 100 * time.Millisecond})
	holder, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	a := acquireAsync(t, ctx, l, "", core.Default, 1)
	clock.Advance(60 * time.Millisecond)
	b := acquireAsync(t, ctx, l, "", core.Default, 2)
	rec.take()

	clock.Advance(40 * time.Millisecond) // a has waited MaxWait, b 40ms
	ra := rejection(t, recv(t, a).err)
	assert.Equal(t, WaitTimeout, ra.Reason)
	assert.Equal(t, 1, l.Waiting())
	clock.Advance(59 * time.Millisecond)
	assert.Equal(t, 1, l.Waiting(), "b has waited 99ms")
	clock.Advance(time.Millisecond)
	rb := rejection(t, recv(t, b).err)
	assert.Equal(t, WaitTimeout, rb.Reason)
	assert.Equal(t, 0, l.Waiting())
	assert.Equal(t, []core.Event{
		{Kind: core.Shed, Class: core.Default, Waited: 100 * time.Millisecond, Err: ra},
		{Kind: core.Shed, Class: core.Default, Waited: 100 * time.Millisecond, Err: rb},
	}, rec.take())
	assert.Equal(t, [][2]int{{1, 1}, {1, 0}}, rec.takenCounts())
	holder.Release()
}

func TestCancelFreesThePlace(t *testing.T) {
	ctx := context.Background()
	l, clock, rec := newLimiter(t, Config{Controller: Static(1), Queue: 1, MaxWait: time.Second})
	holder, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	a := acquireAsync(t, cctx, l, "", core.Default, 1)
	_, err = l.Acquire(ctx, "", core.Default)
	assert.Equal(t, QueueFull, rejection(t, err).Reason)

	clock.Advance(30 * time.Millisecond)
	cancel()
	r := recv(t, a)
	assert.ErrorIs(t, r.err, context.Canceled)
	assert.NotErrorIs(t, r.err, ErrShed)
	assert.Equal(t, 0, l.Waiting())
	assert.Equal(t, 0, clock.pending())

	b := acquireAsync(t, ctx, l, "", core.Default, 1) // the place is free again
	holder.Done(core.Succeeded)
	rb := recv(t, b)
	require.NoError(t, rb.err)
	rb.p.Release()
	es := rec.take()
	require.Len(t, es, 5)
	assert.Equal(t, core.Event{Kind: core.Shed, Class: core.Default, Waited: 30 * time.Millisecond, Err: context.Canceled}, es[2])
	assert.Equal(t, [2]int{1, 0}, rec.takenCounts()[2])

	_, err = l.Acquire(cctx, "", core.Default)
	assert.ErrorIs(t, err, context.Canceled, "a done context is refused before anything")
	assert.Equal(t, 0, l.InFlight())
}

// TestDeadlineIsShedWithAdvice: a request whose deadline passes while it
// waits (a server's timeout, its caller still there) is shed with a
// RetryAfter, as WaitTimeout, and its error still says the deadline
// passed; so is one whose deadline passed before it asked.
func TestDeadlineIsShedWithAdvice(t *testing.T) {
	ctx := context.Background()
	l, clock, rec := newLimiter(t, Config{Controller: Static(1), Queue: 1, MaxWait: time.Second})
	holder, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	dctx, cancel := context.WithCancelCause(ctx)
	a := acquireAsync(t, deadlineCtx{dctx}, l, "", core.Default, 1)
	clock.Advance(30 * time.Millisecond)
	cancel(context.DeadlineExceeded)
	r := recv(t, a)
	rej := rejection(t, r.err)
	assert.Equal(t, WaitTimeout, rej.Reason)
	assert.Positive(t, rej.RetryAfter)
	assert.ErrorIs(t, r.err, context.DeadlineExceeded)
	assert.Equal(t, 0, l.Waiting())
	es := rec.take()
	assert.Equal(t, core.Event{Kind: core.Shed, Class: core.Default, Waited: 30 * time.Millisecond, Err: rej}, es[len(es)-1])

	_, err = l.Acquire(deadlineCtx{dctx}, "", core.Default)
	assert.Equal(t, WaitTimeout, rejection(t, err).Reason, "a deadline passed before it asked")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	holder.Release()
	assert.Equal(t, 0, l.InFlight())
}

// deadlineCtx is a context whose Err, once done, is its cause: a deadline
// a test passes by hand.
type deadlineCtx struct{ context.Context }

func (c deadlineCtx) Err() error {
	if c.Context.Err() == nil {
		return nil
	}
	return context.Cause(c.Context)
}

func TestPrioritiesOrderTheQueue(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(1), Queue: 10, MaxWait: time.Second})
	holder, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	s1 := acquireAsync(t, ctx, l, "", core.Sheddable, 1)
	d1 := acquireAsync(t, ctx, l, "", core.Default, 2)
	c1 := acquireAsync(t, ctx, l, "", core.Critical, 3)
	s2 := acquireAsync(t, ctx, l, "", core.Sheddable, 4)
	d2 := acquireAsync(t, ctx, l, "", core.Default, 5)
	c2 := acquireAsync(t, ctx, l, "", core.Critical, 6)

	prev := holder
	for i, ch := range []<-chan result{c1, c2, d1, d2, s1, s2} {
		prev.Done(core.Succeeded)
		r := recv(t, ch)
		require.NoError(t, r.err, "waiter %d", i)
		assert.Equal(t, 5-i, l.Waiting(), "waiter %d", i)
		prev = r.p
	}
	prev.Release()
}

func TestHigherClassDisplacesTheLowest(t *testing.T) {
	ctx := context.Background()
	l, _, rec := newLimiter(t, Config{Controller: Static(1), Queue: 3, MaxWait: time.Second})
	holder, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	d1 := acquireAsync(t, ctx, l, "", core.Default, 1)
	s1 := acquireAsync(t, ctx, l, "", core.Sheddable, 2)
	s2 := acquireAsync(t, ctx, l, "", core.Sheddable, 3)

	_, err = l.Acquire(ctx, "", core.Sheddable)
	assert.Equal(t, QueueFull, rejection(t, err).Reason, "a class displaces only lower classes")
	rec.take()

	c1 := acquireAsync(t, ctx, l, "", core.Critical, 3)
	r := recv(t, s2)
	assert.Equal(t, ShedError{Reason: Displaced, Class: core.Sheddable, RetryAfter: time.Second}, *rejection(t, r.err), "the newest of the lowest class goes first")
	d2 := acquireAsync(t, ctx, l, "", core.Default, 3)
	r = recv(t, s1)
	assert.Equal(t, Displaced, rejection(t, r.err).Reason)

	_, err = l.Acquire(ctx, "", core.Default)
	assert.Equal(t, QueueFull, rejection(t, err).Reason)

	prev := holder
	for _, ch := range []<-chan result{c1, d1, d2} {
		prev.Done(core.Succeeded)
		r := recv(t, ch)
		require.NoError(t, r.err)
		prev = r.p
	}
	prev.Release()
	var displaced int
	for _, e := range rec.take() {
		if se, ok := e.Err.(*ShedError); ok && se.Reason == Displaced {
			displaced++
		}
	}
	assert.Equal(t, 2, displaced)
}

func TestReserveKeepsRoomForHigherClasses(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(10), Headroom: Headroom{Critical: 0.2, Default: 0.3}})
	fill := func(class core.Class) (n int, ps []Permit) {
		for {
			p, err := l.Acquire(ctx, "", class)
			if err != nil {
				assert.Equal(t, Saturated, rejection(t, err).Reason)
				return n, ps
			}
			n++
			ps = append(ps, p)
		}
	}
	n, sheddable := fill(core.Sheddable)
	assert.Equal(t, 5, n, "sheddable: 10 - 2 - 3")
	n, def := fill(core.Default)
	assert.Equal(t, 3, n, "default: up to 10 - 2")
	n, critical := fill(core.Critical)
	assert.Equal(t, 2, n, "critical: up to 10")
	for _, ps := range [][]Permit{sheddable, def, critical} {
		for _, p := range ps {
			p.Release()
		}
	}
}

func TestReserveHoldsWaitersBack(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(4), Headroom: Headroom{Critical: 0.25}, Queue: 4, MaxWait: time.Second})
	var ps []Permit
	for range 4 {
		p, err := l.Acquire(ctx, "", core.Critical)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	d := acquireAsync(t, ctx, l, "", core.Default, 1)
	ps[0].Release()
	assert.Equal(t, 1, l.Waiting(), "the fourth slot is critical's")
	c, err := l.Acquire(ctx, "", core.Critical)
	require.NoError(t, err, "a critical request takes it at once")
	ps[1].Release()
	assert.Equal(t, 1, l.Waiting(), "3 in flight: default's room is full")
	ps[2].Release()
	rd := recv(t, d)
	require.NoError(t, rd.err)
	for _, p := range []Permit{ps[3], rd.p, c} {
		p.Release()
	}
}

func TestPerKey(t *testing.T) {
	ctx := context.Background()
	l, _, rec := newLimiter(t, Config{Controller: Static(5), PerKey: 2, MaxKeys: 2})
	a1, err := l.Acquire(ctx, "a", core.Default)
	require.NoError(t, err)
	a2, err := l.Acquire(ctx, "a", core.Default)
	require.NoError(t, err)
	_, err = l.Acquire(ctx, "a", core.Critical)
	assert.Equal(t, KeySaturated, rejection(t, err).Reason)
	b1, err := l.Acquire(ctx, "b", core.Default)
	require.NoError(t, err)
	_, err = l.Acquire(ctx, "c", core.Default)
	assert.Equal(t, TooManyKeys, rejection(t, err).Reason)
	assert.Len(t, l.keys, 2, "a shed key leaves nothing behind")
	a1.Done(core.Succeeded)
	b1.Done(core.Succeeded)
	assert.Len(t, l.keys, 1, "an idle key is forgotten")
	c1, err := l.Acquire(ctx, "c", core.Default)
	require.NoError(t, err)
	for _, p := range []Permit{a2, c1} {
		p.Release()
	}
	assert.Empty(t, l.keys)
	var keys []string
	for _, e := range rec.take() {
		keys = append(keys, e.Key)
	}
	assert.Equal(t, []string{"a", "c"}, keys, "shed events carry the key")
}

func TestPerKeyWaitersSkipFullKeys(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{Controller: Static(2), PerKey: 1, Queue: 4, MaxWait: time.Second})
	a, err := l.Acquire(ctx, "a", core.Default)
	require.NoError(t, err)
	b, err := l.Acquire(ctx, "b", core.Default)
	require.NoError(t, err)
	a2 := acquireAsync(t, ctx, l, "a", core.Default, 1)
	_, err = l.Acquire(ctx, "a", core.Default)
	assert.Equal(t, KeySaturated, rejection(t, err).Reason, "a key never has more waiting than PerKey")
	c := acquireAsync(t, ctx, l, "c", core.Default, 2)

	b.Done(core.Succeeded) // a's waiter is first, but its key is full
	rc := recv(t, c)
	require.NoError(t, rc.err)
	assert.Equal(t, 1, l.Waiting())
	rc.p.Done(core.Succeeded)
	assert.Equal(t, 1, l.Waiting(), "a slot is free, but not for key a")
	a.Done(core.Succeeded)
	ra := recv(t, a2)
	require.NoError(t, ra.err)
	ra.p.Release()
	assert.Empty(t, l.keys)
}

func TestPerKeyWithoutGlobalLimit(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLimiter(t, Config{PerKey: 1})
	var ps []Permit
	for _, k := range []string{"a", "b", "c", "d"} {
		p, err := l.Acquire(ctx, k, core.Sheddable)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	_, err := l.Acquire(ctx, "a", core.Default)
	assert.Equal(t, KeySaturated, rejection(t, err).Reason)
	for _, p := range ps {
		p.Release()
	}
	assert.Equal(t, 0, l.InFlight())
}

func TestRetryAfterDrainsTheBacklog(t *testing.T) {
	ctx := context.Background()
	l, clock, _ := newLimiter(t, Config{Controller: Static(2), Queue: 2, MaxWait: time.Minute, MinRetryAfter: 100 * time.Millisecond})
	p1, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	clock.Advance(400 * time.Millisecond)
	p1.Done(core.Succeeded) // mean latency 400ms
	var ps []Permit
	for range 2 {
		p, err := l.Acquire(ctx, "", core.Default)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	_ = acquireAsync(t, ctx, l, "", core.Default, 1)
	_ = acquireAsync(t, ctx, l, "", core.Default, 2)
	_, err = l.Acquire(ctx, "", core.Default)
	// (2 in flight + 2 waiting) × 400ms / 2 slots
	assert.Equal(t, 800*time.Millisecond, rejection(t, err).RetryAfter)
	clock.Advance(time.Minute) // the waiters time out
	require.Eventually(t, func() bool { return l.Waiting() == 0 }, 10*time.Second, time.Millisecond)
	for _, p := range ps {
		p.Release()
	}
}

func TestMaxLatencyCountsAsDropped(t *testing.T) {
	ctx := context.Background()
	aimd, err := NewAIMD(AIMDConfig{Initial: 10, Tolerance: -1})
	require.NoError(t, err)
	l, clock, rec := newLimiter(t, Config{Controller: aimd, MaxLatency: 100 * time.Millisecond})
	p, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	clock.Advance(100 * time.Millisecond)
	p.Done(core.Succeeded)
	assert.Equal(t, 10, l.Limit(), "at MaxLatency a request is still healthy (and one in flight says nothing)")
	p, err = l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	clock.Advance(101 * time.Millisecond)
	p.Done(core.Succeeded)
	assert.Equal(t, 9, l.Limit())
	assert.Equal(t, []core.Event{{Kind: core.LimitChanged, Limit: 9, Cause: "drops"}}, rec.take())
	p, err = l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	p.Done(core.Ignored)
	p, err = l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	p.Done(core.Failed)
	assert.Equal(t, 8, l.Limit(), "an ignored request teaches nothing, a dropped one shrinks the limit")
}

func TestLimitChangeAdmitsWaiters(t *testing.T) {
	ctx := context.Background()
	aimd, err := NewAIMD(AIMDConfig{Initial: 2, Min: 2, Tolerance: -1})
	require.NoError(t, err)
	l, _, _ := newLimiter(t, Config{Controller: aimd, Queue: 4, MaxWait: time.Second})
	p1, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	p2, err := l.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	w := acquireAsync(t, ctx, l, "", core.Default, 1)
	p1.Done(core.Succeeded) // 2 + 1/2 = 2.5: one slot frees, the waiter takes it
	r := recv(t, w)
	require.NoError(t, r.err)
	assert.Equal(t, 2, l.InFlight())
	for _, p := range []Permit{p2, r.p} {
		p.Release()
	}
}

func TestGrantedAfterCancelIsGivenBack(t *testing.T) {
	// A waiter granted a slot whose context ends before it wakes gives the
	// slot back: run many times so that both select cases are taken.
	l, err := New(Config{Controller: Static(1), Queue: 1, MaxWait: time.Minute})
	require.NoError(t, err)
	for range 200 {
		holder, err := l.Acquire(context.Background(), "", core.Default)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		ch := make(chan result, 1)
		go func() {
			p, err := l.Acquire(ctx, "", core.Default)
			ch <- result{p, err}
		}()
		require.Eventually(t, func() bool { return l.Waiting() == 1 }, 10*time.Second, 10*time.Microsecond)
		go cancel()
		holder.Release()
		r := recv(t, ch)
		if r.err == nil {
			r.p.Release()
		} else {
			require.ErrorIs(t, r.err, context.Canceled)
		}
		require.Equal(t, 0, l.InFlight())
		require.Equal(t, 0, l.Waiting())
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		c    Config
	}{
		{"nothing to limit", Config{}},
		{"zero static", Config{Controller: Static(0)}},
		{"huge static", Config{Controller: Static(MaxLimit + 1)}},
		{"negative PerKey", Config{PerKey: -1}},
		{"MaxKeys", Config{PerKey: 1, MaxKeys: -1}},
		{"queue without wait", Config{Controller: Static(1), Queue: 1}},
		{"negative queue", Config{Controller: Static(1), Queue: -1}},
		{"huge queue", Config{Controller: Static(1), Queue: maxQueueCap + 1, MaxWait: time.Second}},
		{"negative wait", Config{Controller: Static(1), MaxWait: -1}},
		{"reserve sums to 1", Config{Controller: Static(1), Headroom: Headroom{Critical: 0.5, Default: 0.5}}},
		{"negative reserve", Config{Controller: Static(1), Headroom: Headroom{Critical: -0.1}}},
		{"NaN reserve", Config{Controller: Static(1), Headroom: Headroom{Default: nan()}}},
		{"negative max latency", Config{Controller: Static(1), MaxLatency: -1}},
		{"retry-after", Config{Controller: Static(1), MinRetryAfter: time.Hour}},
	} {
		_, err := New(c.c)
		assert.Error(t, err, c.name)
	}
	l, err := New(Config{Controller: Static(1)})
	require.NoError(t, err)
	_, err = l.Acquire(context.Background(), "", core.Class(7))
	assert.EqualError(t, err, "backpressure: unknown class 7")
	assert.False(t, errors.Is(err, ErrShed))
}
