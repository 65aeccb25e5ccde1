package redisstore

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
)

// instances is two instances of an application sharing one Redis: two stores
// (each its own connections) under one prefix, two limiters, one clock.
type instances struct {
	stores   [2]*Store
	limiters [2]*core.Limiter
	clock    *sluicetest.ManualClock
}

func newInstances(t *testing.T, ttl time.Duration) *instances {
	c := sharedClient(t)
	prefix := testPrefix(t, c)
	f := &instances{clock: sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))}
	for i := range f.stores {
		s, err := New(c, WithPrefix(prefix), WithTimeout(10*time.Second), WithClock(f.clock))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		f.stores[i] = s
		f.limiters[i], err = core.NewLimiter(s, core.WithReservationTTL(ttl))
		require.NoError(t, err)
	}
	return f
}

// heavyTailed returns n true costs, Pareto with shape 1.1 from 16 tokens up,
// capped at 20,000: most completions are short, a few are very long.
func heavyTailed(n int, seed uint64) []int64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]int64, n)
	for i := range out {
		out[i] = min(int64(16/math.Pow(1-rng.Float64(), 1/1.1)), 20000)
	}
	return out
}

// TestFleetStreamingOvershoot: two instances share a budget of 20,000
// tokens; 500 streaming requests with heavy-tailed true costs start at
// once, half on each. Reserved and settled as they stream (64 tokens
// estimated, settled every 16, stopped when a settle is denied), the
// tokens produced exceed the budget by at most one reservation's estimate;
// charged after the fact (admitted while any budget is left, the true cost
// charged at the end), they exceed it by far. Both figures are logged.
func TestFleetStreamingOvershoot(t *testing.T) {
	const (
		budget   = 20_000
		streams  = 500
		estimate = 64
		chunk    = 16
	)
	costs := heavyTailed(streams, 42)
	var total int64
	for _, c := range costs {
		total += c
	}
	policy := core.MustPolicy(core.PolicyConfig{Name: "tokens", Algorithm: core.TokenBucket, Quota: 1, Period: time.Hour, Burst: budget})
	ctx := context.Background()

	// Reserved, settled as the tokens stream.
	f := newInstances(t, time.Minute)
	var produced, admitted, stopped atomic.Int64
	var start, wg sync.WaitGroup
	start.Add(1)
	for i, cost := range costs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			l := f.limiters[i%2]
			res, err := l.Reserve(ctx, []core.Request{{Key: "user-1", Policy: policy, Cost: estimate}}, nil)
			if err != nil || !res.Decision.Allowed || res.Decision.Degraded {
				assert.NoError(t, err)
				assert.False(t, res.Decision.Degraded, "Redis failed")
				return
			}
			admitted.Add(1)
			var used int64
			for used < cost {
				used = min(used+chunk, cost) // a chunk produced, then settled
				d, err := res.Settle(ctx, used)
				assert.NoError(t, err)
				if !d.Allowed {
					stopped.Add(1)
					break // the budget ran out: end the stream
				}
			}
			produced.Add(used)
			assert.NoError(t, res.Reconcile(ctx, used))
		}()
	}
	start.Done()
	wg.Wait()
	overshoot := max(produced.Load()-budget, 0)

	// Charged after the fact.
	g := newInstances(t, time.Minute)
	var after atomic.Int64
	start.Add(1)
	var began sync.WaitGroup
	for i, cost := range costs {
		wg.Add(1)
		began.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			l := g.limiters[i%2]
			d, err := l.Take(ctx, core.Request{Key: "user-1", Policy: policy, Cost: 1})
			began.Done()
			if err != nil || !d.Allowed {
				return
			}
			began.Wait() // every stream is under way before the first ends
			after.Add(cost)
			_, err = g.stores[i%2].Adjust(ctx, core.Request{Key: "user-1", Policy: policy, Cost: cost - 1})
			assert.NoError(t, err)
		}()
	}
	start.Done()
	wg.Wait()
	afterOvershoot := max(after.Load()-budget, 0)

	t.Logf("budget %d tokens, %d streams asking %d in all (largest %d): reserved and settled as they stream: %d admitted, %d stopped, %d produced, overshoot %d (bound: one estimate, %d); charged after the fact: %d produced, overshoot %d",
		budget, streams, total, maxOf(costs), admitted.Load(), stopped.Load(), produced.Load(), overshoot, estimate, after.Load(), afterOvershoot)
	assert.LessOrEqual(t, overshoot, int64(estimate))
	assert.Greater(t, stopped.Load(), int64(0), "the budget ran out mid-stream")
	assert.Greater(t, afterOvershoot, 10*overshoot+int64(budget)/10, "charging after the fact overshoots by far")

	// Every reservation settled: the key holds exactly what was produced.
	d, err := f.limiters[0].Take(ctx, core.Request{Key: "user-1", Policy: policy, Cost: 1})
	require.NoError(t, err)
	assert.Equal(t, max(budget-produced.Load(), 0), d.Remaining+b2i(d.Allowed))
}

func maxOf(xs []int64) int64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestFleetSettleIdempotent: a settle repeated, on either instance, and a
// settle after the final one change nothing.
func TestFleetSettleIdempotent(t *testing.T) {
	f := newInstances(t, time.Minute)
	ctx := context.Background()
	policy := core.MustPolicy(core.PolicyConfig{Name: "tokens", Algorithm: core.TokenBucket, Quota: 1, Period: time.Hour, Burst: 1000})
	res, err := f.limiters[0].Reserve(ctx, []core.Request{{Key: "k", Policy: policy, Cost: 100}}, nil)
	require.NoError(t, err)
	require.NotEmpty(t, res.ID())
	d, err := res.Settle(ctx, 40)
	require.NoError(t, err)
	assert.Equal(t, int64(860), d.Remaining, "used 40, one estimate ahead: 140 held")

	rs := []core.Request{{Key: "k", Policy: policy, Cost: 40}}
	ds := make([]core.Decision, 1)
	for _, s := range f.stores { // the same total again, from either instance
		held, err := s.Settle(ctx, res.ID(), rs, ds, false, time.Minute)
		require.NoError(t, err)
		assert.True(t, held)
		assert.Equal(t, int64(860), ds[0].Remaining, "a duplicate settle changes nothing")
	}
	require.NoError(t, res.Reconcile(ctx, 70))
	assert.ErrorIs(t, res.Reconcile(ctx, 70), core.ErrSettled)
	for _, s := range f.stores {
		for _, final := range []bool{false, true} {
			rs[0].Cost = 500
			held, err := s.Settle(ctx, res.ID(), rs, ds, final, time.Minute)
			require.NoError(t, err)
			assert.False(t, held)
			assert.Equal(t, int64(930), ds[0].Remaining, "a late settle changes nothing")
		}
	}
}

// TestFleetReclaimsACrashedInstance: instance 0 reserves for 100 streams
// and settles some of their tokens, then stops (as if killed mid-stream:
// no settle, no renewal, its store closed). Within the TTL its
// reservations still count; once it has passed, instance 1 sees the
// budget less what was settled, exactly; the dead instance's late settles
// change nothing.
func TestFleetReclaimsACrashedInstance(t *testing.T) {
	const ttl = 30 * time.Second
	f := newInstances(t, ttl)
	ctx := context.Background()
	policy := core.MustPolicy(core.PolicyConfig{Name: "tokens", Algorithm: core.TokenBucket, Quota: 1, Period: time.Hour, Burst: 100_000})
	var settled int64
	ress := make([]*core.Reservation, 100)
	for i := range ress {
		res, err := f.limiters[0].Reserve(ctx, []core.Request{{Key: "k", Policy: policy, Cost: 200}}, nil)
		require.NoError(t, err)
		require.True(t, res.Decision.Allowed)
		used := int64(i * 3)
		_, err = res.Settle(ctx, used)
		require.NoError(t, err)
		settled += used
		ress[i] = res
	}
	require.NoError(t, f.stores[0].Close()) // killed

	probe := func() int64 {
		d, err := f.limiters[1].Take(ctx, core.Request{Key: "k", Policy: policy, Cost: 1})
		require.NoError(t, err)
		require.True(t, d.Allowed)
		adj, err := f.stores[1].Adjust(ctx, core.Request{Key: "k", Policy: policy, Cost: -1})
		require.NoError(t, err)
		return adj.Remaining
	}
	reserveProbe := func() int64 {
		// A Reserve (or Settle) on the key reclaims; its own hold goes back.
		res, err := f.limiters[1].Reserve(ctx, []core.Request{{Key: "k", Policy: policy, Cost: 1}}, nil)
		require.NoError(t, err)
		require.NoError(t, res.Reconcile(ctx, 0))
		return probe()
	}
	held := int64(0)
	for i := range ress {
		held += int64(i*3) + 200
	}
	f.clock.Advance(ttl - time.Millisecond)
	assert.Equal(t, 100_000-held, reserveProbe(), "within the TTL the reservations still count")
	f.clock.Advance(time.Millisecond)
	for range 100/16 + 1 { // each call reclaims at most 16
		reserveProbe()
	}
	assert.Equal(t, 100_000-settled, probe(), "after the TTL, only what was settled stays charged")

	// The dead instance's settles, arriving late through a live store.
	rs := []core.Request{{Key: "k", Policy: policy, Cost: 10_000}}
	ds := make([]core.Decision, 1)
	for _, res := range ress[:10] {
		h, err := f.stores[1].Settle(ctx, res.ID(), rs, ds, true, ttl)
		require.NoError(t, err)
		assert.False(t, h)
	}
	assert.Equal(t, 100_000-settled, probe(), "late settles change nothing")
}
