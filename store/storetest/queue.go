package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shapingQueue is the test: a burst of 20 requests against 2/s with
// a maximum delay of 5s. Exactly the 11 whose turns fall within the delay
// pass, released at 0, 0.5, ..., 5.0s; the other 9 are denied at once, take
// nothing, and may retry when the queue has drained to the bound.
func shapingQueue(t *testing.T, h *harness) {
	p := queue(1, 2, time.Second, 5*time.Second)
	for k := range 20 {
		want := core.Decision{Policy: p, Limit: 1}
		if k <= 10 {
			want.Allowed = true
			want.Delay = time.Duration(k) * 500 * ms
			want.ResetAfter = time.Duration(k+1) * 500 * ms
		} else {
			want.ResetAfter = 5500 * ms
			want.RetryAfter = 500 * ms
		}
		require.Equal(t, want, h.take("k", p, 1), "request %d", k)
	}
	// As the queue drains, each turn freed goes to the next request, at
	// the bound.
	h.clock.Advance(499999 * time.Microsecond)
	require.Equal(t, core.Decision{Policy: p, Limit: 1, ResetAfter: 5500*ms - 499999*time.Microsecond, RetryAfter: time.Microsecond}, h.take("k", p, 1))
	h.clock.Advance(time.Microsecond)
	require.Equal(t, core.Decision{Policy: p, Allowed: true, Limit: 1, ResetAfter: 5500 * ms, Delay: 5 * sec}, h.take("k", p, 1))
	// Once drained, a request passes at once again.
	h.clock.Advance(5500 * ms)
	require.Equal(t, core.Decision{Policy: p, Allowed: true, Limit: 1, ResetAfter: 500 * ms}, h.take("k", p, 1))
}

// queueDelayN: nginx's rate=2r/s burst=10 delay=4 is Burst 5 (four excess
// requests pass at once, plus the first) and MaxQueue 6 (the burst less
// the delay). Of 20 at once, 5 pass at once, 6 wait their turns, 9 are
// denied.
func queueDelayN(t *testing.T, h *harness) {
	p := core.MustPolicy(core.PolicyConfig{Name: "delay-4", Algorithm: core.LeakyQueue,
		Quota: 2, Period: time.Second, Burst: 5, MaxQueue: 6})
	for k := range 20 {
		d := h.take("k", p, 1)
		switch {
		case k < 5:
			require.Equal(t, as(p, queued(int64(4-k), time.Duration(k+1)*500*ms, 0)), d, "request %d passes at once", k)
		case k < 11:
			require.Equal(t, as(p, queued(0, time.Duration(k+1)*500*ms, time.Duration(k-4)*500*ms)), d, "request %d waits", k)
		default:
			require.Equal(t, as(p, deny(0, 5500*ms, 500*ms)), d, "request %d", k)
		}
	}
}

// queueLength: MaxQueue bounds the units waiting at once; given with
// MaxDelay, the tighter bound holds. A cost waits for its last unit's turn.
func queueLength(t *testing.T, h *harness) {
	for _, tc := range []struct {
		name     string
		maxDelay time.Duration
		maxQueue int64
		admitted int
	}{
		{"queue", 0, 3, 4},
		{"queue-tighter", time.Minute, 3, 4},
		{"delay-tighter", time.Second, 10, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := core.MustPolicy(core.PolicyConfig{Name: "length-" + tc.name, Algorithm: core.LeakyQueue,
				Quota: 2, Period: time.Second, Burst: 1, MaxDelay: tc.maxDelay, MaxQueue: tc.maxQueue})
			assert.Equal(t, tc.admitted, h.count(tc.name, p, 20))
		})
	}
	p := core.MustPolicy(core.PolicyConfig{Name: "length-costs", Algorithm: core.LeakyQueue,
		Quota: 2, Period: time.Second, Burst: 1, MaxQueue: 3})
	require.Equal(t, as(p, impossible(1, 0)), h.take("costs", p, 5), "1 at once + 3 waiting is the most")
	require.Equal(t, as(p, queued(0, 2*sec, 1500*ms)), h.take("costs", p, 4))
	require.Equal(t, as(p, deny(0, 2*sec, 500*ms)), h.take("costs", p, 1))
}

// queueGivesTurnsBack: a waiter that gives up gives its turn back (a
// negative Adjust), and the next request gets it; never beyond empty. A
// charge puts the queue past its bound: denied until it drains.
func queueGivesTurnsBack(t *testing.T, h *harness) {
	p := queue(1, 2, time.Second, 5*time.Second)
	for range 5 {
		require.True(t, h.take("k", p, 1).Allowed) // turns at 0, 0.5, 1, 1.5, 2s
	}
	h.clock.Advance(100 * ms)
	require.Equal(t, as(p, core.Decision{Allowed: true, ResetAfter: 1900 * ms}), h.adjust("k", p, -1), "a standing, without a delay")
	require.Equal(t, as(p, queued(0, 2400*ms, 1900*ms)), h.take("k", p, 1), "the turn given back")
	require.Equal(t, as(p, core.Decision{Allowed: true, Remaining: 1}), h.adjust("k", p, -100), "never beyond empty")
	require.Equal(t, as(p, queued(0, 500*ms, 0)), h.take("k", p, 1))

	require.Equal(t, as(p, core.Decision{ResetAfter: 10500 * ms, RetryAfter: 5 * sec}), h.adjust("k", p, 20), "in debt")
	require.Equal(t, as(p, deny(0, 10500*ms, 5500*ms)), h.take("k", p, 1))
	h.clock.Advance(5500 * ms)
	require.Equal(t, as(p, queued(0, 5500*ms, 5*sec)), h.take("k", p, 1))
}

// queueLayered: a queue layer with a rate layer, and two queues, as one.
// Each queue layer reports its own turn; a denial by any layer takes
// nothing from any, and the layers that would have passed report their
// standing, without a delay.
func queueLayered(t *testing.T, h *harness) {
	ctx := context.Background()
	q := queue(1, 2, time.Second, 5*time.Second)
	slow := core.MustPolicy(core.PolicyConfig{Name: "slow", Algorithm: core.LeakyQueue,
		Quota: 1, Period: time.Second, Burst: 1, MaxQueue: 10})
	user := core.MustPolicy(core.PolicyConfig{Name: "user", Algorithm: core.FixedWindow, Quota: 3, Period: time.Minute})
	rs := []core.Request{{Key: h.key("user"), Policy: user, Cost: 1}, {Key: h.key("api"), Policy: q, Cost: 1}, {Key: h.key("api"), Policy: slow, Cost: 1}}
	ds := make([]core.Decision, 3)
	for i := range 3 {
		require.NoError(t, h.store.TakeAll(ctx, rs, ds))
		require.Equal(t, as(user, allow(int64(2-i), time.Minute)), ds[0], "request %d", i)
		require.Equal(t, as(q, queued(0, time.Duration(i+1)*500*ms, time.Duration(i)*500*ms)), ds[1], "request %d", i)
		require.Equal(t, as(slow, queued(0, time.Duration(i+1)*sec, time.Duration(i)*sec)), ds[2], "request %d", i)
		assert.Same(t, slow, storekit.MostRestrictive(ds).Policy, "the longest turn is reported")
	}
	// The window is spent: the request is denied and takes no turn.
	require.NoError(t, h.store.TakeAll(ctx, rs, ds))
	require.Equal(t, as(user, deny(0, time.Minute, time.Minute)), ds[0])
	require.Equal(t, as(q, core.Decision{Allowed: true, ResetAfter: 1500 * ms, RetryAfter: 0}), ds[1], "its standing")
	require.Equal(t, as(slow, core.Decision{Allowed: true, ResetAfter: 3 * sec}), ds[2], "its standing")
	require.NoError(t, h.store.TakeAll(ctx, rs[1:], ds[:2]))
	require.Equal(t, as(q, queued(0, 2*sec, 1500*ms)), ds[0], "the denial took nothing")
	require.Equal(t, as(slow, queued(0, 4*sec, 3*sec)), ds[1], "the denial took nothing")

	// A queue that would wait too long denies the layered request: the
	// rate layer keeps its units.
	full := queue(1, 2, time.Second, 500*ms)
	rs = []core.Request{{Key: h.key("ip"), Policy: bucket(core.GCRA, 10, 1, time.Second), Cost: 1}, {Key: h.key("api"), Policy: full, Cost: 2}}
	require.NoError(t, h.store.TakeAll(ctx, rs, ds[:2]))
	require.True(t, ds[0].Allowed && ds[1].Allowed)
	require.Equal(t, as(full, queued(0, sec, 500*ms)), ds[1])
	require.NoError(t, h.store.TakeAll(ctx, rs, ds[:2]))
	require.Equal(t, as(rs[0].Policy, allow(9, sec)), ds[0], "its standing, the denied request not taken")
	require.Equal(t, as(full, deny(0, sec, sec)), ds[1])
}
