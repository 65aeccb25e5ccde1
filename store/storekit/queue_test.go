package storekit_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

func queuePolicy(burst, quota int64, period, maxDelay time.Duration, maxQueue int64) *core.Policy {
	return core.MustPolicy(core.PolicyConfig{Name: "q", Algorithm: core.LeakyQueue, Quota: quota, Period: period,
		Burst: burst, MaxDelay: maxDelay, MaxQueue: maxQueue})
}

// The shaping test: a burst of 20 requests against 2/s with a
// maximum delay of 5s. The 11 whose turns fall within the delay pass,
// released at 0, 0.5, ..., 5.0s; the other 9 are denied at once, each
// retrying when the queue has drained to the bound, and take nothing.
func TestLeakyQueueShapesABurst(t *testing.T) {
	p := queuePolicy(1, 2, time.Second, 5*time.Second, 0)
	var st storekit.State
	const halfSecond = 500 * time.Millisecond
	for k := range 20 {
		d := storekit.Take(p, &st, start, 1)
		want := core.Decision{Policy: p, Limit: 1}
		if k <= 10 {
			want.Allowed = true
			want.Delay = time.Duration(k) * halfSecond
			want.ResetAfter = time.Duration(k+1) * halfSecond
		} else {
			want.ResetAfter = 11 * halfSecond
			want.RetryAfter = halfSecond
		}
		require.Equal(t, want, d, "request %d", k)
	}
	// The queue drains at the rate: half a second later one more turn is
	// free, at the bound.
	d := storekit.Take(p, &st, start+500_000, 1)
	assert.True(t, d.Allowed)
	assert.Equal(t, 5*time.Second, d.Delay)
	assert.Equal(t, 5500*time.Millisecond, d.ResetAfter)
}

// nginx's delay=N: rate=2r/s burst=10 delay=4 is Burst 5 (4 + the request
// itself) and MaxQueue 6 (the burst less the delay). Of 20 at once, 5 pass
// at once and 6 wait 0.5s to 3s, 11 in all as in nginx.
func TestLeakyQueueDelayN(t *testing.T) {
	p := queuePolicy(5, 2, time.Second, 0, 6)
	assert.Equal(t, 3*time.Second, p.MaxDelay())
	var st storekit.State
	var delays []time.Duration
	for k := range 20 {
		d := storekit.Take(p, &st, start, 1)
		if k < 5 {
			assert.Equal(t, int64(4-k), d.Remaining, "request %d passes at once", k)
		}
		if d.Allowed {
			delays = append(delays, d.Delay)
		} else {
			assert.Equal(t, 500*time.Millisecond, d.RetryAfter, "request %d", k)
			assert.Zero(t, d.Delay)
		}
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{0, 0, 0, 0, 0, 500 * ms, 1000 * ms, 1500 * ms, 2000 * ms, 2500 * ms, 3000 * ms}, delays)
}

// MaxQueue bounds the units waiting; with MaxDelay too, the tighter holds.
func TestLeakyQueueLength(t *testing.T) {
	count := func(p *core.Policy) (n int) {
		var st storekit.State
		for range 20 {
			if storekit.Take(p, &st, start, 1).Allowed {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 4, count(queuePolicy(1, 2, time.Second, 0, 3)), "one at once, three waiting")
	assert.Equal(t, 3, count(queuePolicy(1, 2, time.Second, time.Second, 10)), "MaxDelay is tighter")
	assert.Equal(t, 4, count(queuePolicy(1, 2, time.Second, time.Minute, 3)), "MaxQueue is tighter")
	assert.Equal(t, 1500*time.Millisecond, queuePolicy(1, 2, time.Second, time.Minute, 3).MaxDelay())

	// A bound shorter than an interval still smooths: a request half an
	// interval behind another waits the other half.
	p := queuePolicy(1, 2, time.Second, 300*time.Millisecond, 0)
	var st storekit.State
	require.Equal(t, time.Duration(0), storekit.Take(p, &st, start, 1).Delay)
	d := storekit.Take(p, &st, start+250_000, 1)
	require.True(t, d.Allowed)
	assert.Equal(t, 250*time.Millisecond, d.Delay)
	d = storekit.Take(p, &st, start+250_000, 1)
	assert.False(t, d.Allowed, "its turn would be 750ms away")
	assert.Equal(t, 450*time.Millisecond, d.RetryAfter)
}

// Costs: a cost takes cost turns, waiting for its last. A cost above Burst
// plus the units the bound holds (here 1 + 5s/0.5s = 11) is Impossible.
func TestLeakyQueueCosts(t *testing.T) {
	p := queuePolicy(1, 2, time.Second, 5*time.Second, 0)
	var st storekit.State
	d := storekit.Take(p, &st, start, 12)
	assert.Equal(t, core.Decision{Policy: p, Limit: 1, Remaining: 1, Impossible: true}, d)
	assert.True(t, st.IsZero(), "an impossible cost takes nothing")
	d = storekit.Take(p, &st, start, 11)
	assert.True(t, d.Allowed)
	assert.Equal(t, 5*time.Second, d.Delay, "the whole queue at once, released when its last unit's turn comes")
	d = storekit.Take(p, &st, start, 1)
	assert.False(t, d.Allowed)
	assert.False(t, d.Impossible)
	assert.Equal(t, 500*time.Millisecond, d.RetryAfter)
	d = storekit.Take(p, &st, start, storekit.MaxCost)
	assert.True(t, d.Impossible, "MaxCost is impossible and overflows nothing")
}

// A refund gives a turn back: the queue ends one interval earlier, so the
// next request gets the earlier turn. Never beyond empty.
func TestLeakyQueueRefund(t *testing.T) {
	p := queuePolicy(1, 2, time.Second, 5*time.Second, 0)
	var st storekit.State
	for range 5 {
		storekit.Take(p, &st, start, 1) // turns at 0, 0.5, 1, 1.5, 2s
	}
	d := storekit.Adjust(p, &st, start+100_000, -1) // the one waiting 2s gives up
	assert.True(t, d.Allowed)
	assert.Zero(t, d.Delay, "a standing has no delay")
	assert.Equal(t, 1900*time.Millisecond, d.ResetAfter)
	d = storekit.Take(p, &st, start+100_000, 1)
	assert.Equal(t, 1900*time.Millisecond, d.Delay, "the next request gets the turn given back")

	d = storekit.Adjust(p, &st, start+100_000, -100)
	assert.Equal(t, core.Decision{Policy: p, Allowed: true, Limit: 1, Remaining: 1}, d, "never beyond empty")
	assert.True(t, storekit.Full(p, st, start+100_000))
	assert.Zero(t, storekit.Take(p, &st, start+100_000, 1).Delay)

	// A charge puts the key past its bound: denied until the queue drains.
	st = storekit.State{}
	storekit.Adjust(p, &st, start, 20)
	d = storekit.Status(p, st, start)
	assert.False(t, d.Allowed, "in debt")
	assert.Equal(t, 4500*time.Millisecond, d.RetryAfter, "20 turns: 9.5s of waiting, 4.5s past the bound")
	d = storekit.Take(p, &st, start, 1)
	assert.Equal(t, 5*time.Second, d.RetryAfter)
}

// Full: the key is full once its queue has drained.
func TestLeakyQueueFull(t *testing.T) {
	p := queuePolicy(2, 2, time.Second, 5*time.Second, 0)
	var st storekit.State
	assert.True(t, storekit.Full(p, st, start))
	storekit.Take(p, &st, start, 3)
	assert.False(t, storekit.Full(p, st, start+1_499_999))
	assert.True(t, storekit.Full(p, st, start+1_500_000))
}

// A queue whose bound is a whole number Q of intervals admits exactly what
// GCRA with burst Burst+Q admits, with the same RetryAfter and ResetAfter,
// through takes, refunds and charges (to the debt bound): the queue is GCRA
// whose last Q units wait. Its Remaining counts only the units that pass at
// once, and a grant's Delay is how far its turn lies beyond the first Burst.
func TestLeakyQueueIsGCRAWithWaiting(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, shape := range []struct {
		burst, queue, quota int64
		period              time.Duration
	}{{1, 10, 2, time.Second}, {5, 6, 2, time.Second}, {3, 1, 7, 10 * time.Second}, {1, 1, 1, 7 * time.Microsecond}} {
		q := &engine{p: queuePolicy(shape.burst, shape.quota, shape.period, 0, shape.queue)}
		g := &engine{p: bucketPolicy(core.GCRA, shape.burst+shape.queue, shape.quota, shape.period)}
		interval := q.p.Interval().Microseconds()
		span := shape.burst * interval
		now := start
		for step := range 20_000 {
			now += randomAdvance(rng, interval)
			cost := 1 + rng.Int64N(shape.burst+shape.queue+1)
			var dq, dg core.Decision
			op := rng.IntN(40)
			switch op {
			case 0, 1:
				cost = 1 + rng.Int64N(storekit.MaxCost)
			case 2:
				now += int64(storekit.MaxDebt/time.Microsecond) * int64(rng.IntN(2))
			}
			switch op {
			case 0, 3, 5, 7:
				dq, dg = q.adjust(now, -cost), g.adjust(now, -cost)
			case 1, 2, 4, 6:
				dq, dg = q.adjust(now, cost), g.adjust(now, cost)
			default:
				dq, dg = q.take(now, cost), g.take(now, cost)
				if dq.Allowed {
					require.Equal(t, time.Duration(max(dq.ResetAfter.Microseconds()-span, 0))*time.Microsecond, dq.Delay, "step %d", step)
				}
			}
			if !dq.Allowed || op < 8 {
				require.Zero(t, dq.Delay, "step %d: only a grant waits", step)
			}
			require.Equal(t, max(dg.Remaining-shape.queue, 0), dq.Remaining, "step %d", step)
			dq.Policy, dq.Limit, dq.Remaining, dq.Delay = nil, 0, 0, 0
			dg.Policy, dg.Limit, dg.Remaining = nil, 0, 0
			require.Equal(t, dg, dq, "step %d", step)
		}
	}
}

// At the bounds core allows (the slowest rate, the longest bound, the
// largest burst for them), every time stays below 2^53 µs from the epoch,
// exact in the Redis store's Lua numbers, even deep in debt.
func TestLeakyQueueBounds(t *testing.T) {
	for _, p := range []*core.Policy{
		queuePolicy(1, 1, storekit.MaxPeriod, storekit.MaxPeriod, 0),
		queuePolicy((1<<52)/1_000_000, 1, time.Second, storekit.MaxPeriod, 0),
		queuePolicy(1, 1_000_000, time.Second, 0, int64(storekit.MaxPeriod/time.Microsecond)),
	} {
		var st storekit.State
		now := int64(4_102_444_800_000_000) // 2100-01-01
		d := storekit.Take(p, &st, now, 1)
		require.True(t, d.Allowed, "%v", p)
		for range 40 { // past the bound and the debt's, whatever the rate
			storekit.Adjust(p, &st, now, storekit.MaxCost)
		}
		d = storekit.Status(p, st, now)
		assert.False(t, d.Allowed, "%v: in debt", p)
		reach := p.Burst()*p.Interval().Microseconds() + p.MaxDelay().Microseconds() + int64(storekit.MaxDebt/time.Microsecond)
		assert.LessOrEqual(t, d.ResetAfter.Microseconds(), reach, "%v: the debt is bounded", p)
		assert.Less(t, now+d.ResetAfter.Microseconds(), int64(1)<<53, "%v", p)
		d = storekit.Take(p, &st, now, storekit.MaxCost)
		assert.False(t, d.Allowed, "%v", p)
	}
}

// A turn given back is a gap the next request fills, at the very instant it
// stood at; a cost takes as many gaps, released at the last; the last turn
// shortens the queue; a gap past its turn, or further than the queue
// remembers, is lost; Adjust shortens from the end and moves the gaps along.
func TestLeakyQueueReturnTurn(t *testing.T) {
	const ms = int64(1000)
	p := queuePolicy(1, 10, time.Second, time.Hour, 0) // one every 100 ms
	var st storekit.State
	for range 6 {
		storekit.Take(p, &st, start, 1) // turns at 0, 100, ..., 500 ms
	}
	now := start + ms
	storekit.ReturnTurn(p, &st, now, 1, 199*ms) // the turn at 200 ms
	storekit.ReturnTurn(p, &st, now, 1, 299*ms) // at 300 ms
	d := storekit.Take(p, &st, now, 2)
	require.True(t, d.Allowed)
	assert.Equal(t, 299*time.Millisecond, d.Delay, "both gaps, released at the later")
	assert.Equal(t, 599*time.Millisecond, d.ResetAfter, "the queue's end has not moved")
	assert.Equal(t, 599*time.Millisecond, storekit.Take(p, &st, now, 1).Delay, "no gap left: the end")

	// The last in the queue: the queue ends earlier, and a gap that then
	// ends it goes too.
	storekit.ReturnTurn(p, &st, now, 1, 499*ms) // the turn at 500 ms: a gap
	storekit.ReturnTurn(p, &st, now, 1, 599*ms) // the last
	assert.Equal(t, 499*time.Millisecond, storekit.Take(p, &st, now, 1).Delay, "the end is 500 ms again")

	// A gap whose turn has come is lost.
	storekit.ReturnTurn(p, &st, now, 1, 399*ms)
	assert.Equal(t, 199*time.Millisecond, storekit.Take(p, &st, start+401*ms, 1).Delay, "the end (600 ms), not the lapsed turn")

	// A charge moves the gaps along with the end; a refund shortens from
	// the end.
	var q storekit.State
	for range 4 {
		storekit.Take(p, &q, start, 1) // 0 .. 300 ms
	}
	storekit.ReturnTurn(p, &q, start, 1, 100*ms)
	storekit.Adjust(p, &q, start, 2) // the end at 600 ms
	assert.Equal(t, 100*time.Millisecond, storekit.Take(p, &q, start, 1).Delay, "the gap kept its turn")
	storekit.Adjust(p, &q, start, -2)
	assert.Equal(t, 400*time.Millisecond, storekit.Take(p, &q, start, 1).Delay)

	// A turn further from the end than the queue remembers is lost.
	var r storekit.State
	for range 60 {
		storekit.Take(p, &r, start, 1) // 0 .. 5.9 s
	}
	storekit.ReturnTurn(p, &r, start, 1, 100*ms)
	assert.Equal(t, 6*time.Second, storekit.Take(p, &r, start, 1).Delay, "58 turns from the end, past the 52 remembered: lost")
}
