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

// start is a time in µs since the epoch, on a whole day.
const start = int64(1_893_456_000_000_000)

func bucketPolicy(alg core.Algorithm, burst, quota int64, period time.Duration) *core.Policy {
	return core.MustPolicy(core.PolicyConfig{Name: "p", Algorithm: alg, Quota: quota, Period: period, Burst: burst})
}

func windowPolicy(alg core.Algorithm, quota int64, period time.Duration) *core.Policy {
	return core.MustPolicy(core.PolicyConfig{Name: "p", Algorithm: alg, Quota: quota, Period: period})
}

// engine applies a policy to one key's state, whatever its algorithm.
type engine struct {
	p   *core.Policy
	st  storekit.State
	log storekit.Log
}

func (e *engine) take(now, cost int64) core.Decision {
	if e.p.Algorithm() == core.SlidingLog {
		return storekit.TakeLog(e.p, &e.log, now, cost)
	}
	return storekit.Take(e.p, &e.st, now, cost)
}

func (e *engine) adjust(now, delta int64) core.Decision {
	if e.p.Algorithm() == core.SlidingLog {
		return storekit.AdjustLog(e.p, &e.log, now, delta)
	}
	return storekit.Adjust(e.p, &e.st, now, delta)
}

func (e *engine) full(now int64) bool {
	if e.p.Algorithm() == core.SlidingLog {
		return storekit.FullLog(e.p, &e.log, now)
	}
	return storekit.Full(e.p, e.st, now)
}

func (e *engine) forget() { e.st, e.log = storekit.State{}, storekit.Log{} }

// The token bucket, GCRA and the leaky bucket meter are one algorithm in three
// representations: they must agree on every decision.
func TestBucketFamilyAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []struct {
		burst, quota int64
		period       time.Duration
	}{{10, 2, time.Second}, {7, 3, time.Second}, {100, 7, 10 * time.Second}, {1, 1, time.Millisecond}} {
		engines := []*engine{
			{p: bucketPolicy(core.TokenBucket, shape.burst, shape.quota, shape.period)},
			{p: bucketPolicy(core.GCRA, shape.burst, shape.quota, shape.period)},
			{p: bucketPolicy(core.LeakyBucket, shape.burst, shape.quota, shape.period)},
		}
		interval := engines[0].p.Interval().Microseconds()
		now := start
		for step := range 20_000 {
			now += randomAdvance(rng, interval)
			cost := 1 + rng.Int64N(shape.burst+1)
			var ds []core.Decision
			op := rng.IntN(40)
			switch op {
			case 0, 1: // charges and refunds up to MaxCost: the debt saturates alike
				cost = 1 + rng.Int64N(storekit.MaxCost)
			case 2: // time enough to pay a saturated debt back
				now += int64(storekit.MaxDebt/time.Microsecond) * int64(rng.IntN(2))
			}
			for _, e := range engines {
				var d core.Decision
				switch op {
				case 0, 3, 5, 7:
					d = e.adjust(now, -cost)
				case 1, 2, 4, 6:
					d = e.adjust(now, cost)
				default:
					d = e.take(now, cost)
				}
				d.Policy = nil
				ds = append(ds, d)
			}
			require.Equal(t, ds[0], ds[1], "gcra differs from token bucket at step %d", step)
			require.Equal(t, ds[0], ds[2], "leaky bucket differs from token bucket at step %d", step)
		}
	}
}

// For every algorithm, RetryAfter is exact: one microsecond earlier the same
// request is still denied, at RetryAfter it passes. Full is honest: forgetting
// a full state changes no later decision.
func TestRetryAfterExactAndFullHonest(t *testing.T) {
	policies := []*core.Policy{
		bucketPolicy(core.TokenBucket, 10, 3, time.Second),
		bucketPolicy(core.GCRA, 10, 3, time.Second),
		bucketPolicy(core.LeakyBucket, 10, 3, time.Second),
		windowPolicy(core.FixedWindow, 10, 7*time.Second),
		windowPolicy(core.SlidingLog, 10, 7*time.Second),
		windowPolicy(core.SlidingCounter, 10, 7*time.Second),
		queuePolicy(3, 3, time.Second, 3*time.Second, 0), // at most 3 + 9 units: no cost here is impossible
	}
	for _, p := range policies {
		t.Run(p.Algorithm().String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			e, probe := &engine{p: p}, &engine{p: p}
			now := start
			for step := range 5_000 {
				now += randomAdvance(rng, 700_000)
				cost := 1 + rng.Int64N(10)
				if rng.IntN(8) == 0 {
					e.adjust(now, -cost)
					continue
				}
				if e.full(now) {
					kept := *e
					e.forget()
					d1, d2 := kept.take(now, cost), e.take(now, cost)
					require.Equal(t, d1, d2, "forgetting a full state changed a decision at step %d", step)
					continue
				}
				snapshot := *e
				snapshot.log = cloneLog(p, &e.log, now)
				d := e.take(now, cost)
				if d.Allowed {
					continue
				}
				require.Positive(t, d.RetryAfter, "step %d", step)
				retry := d.RetryAfter.Microseconds()
				*probe = snapshot
				probe.log = cloneLog(p, &snapshot.log, now)
				early := probe.take(now+retry-1, cost)
				require.False(t, early.Allowed, "admitted 1µs before RetryAfter at step %d", step)
				*probe = snapshot
				probe.log = cloneLog(p, &snapshot.log, now)
				require.True(t, probe.take(now+retry, cost).Allowed, "denied at RetryAfter at step %d", step)
			}
		})
	}
}

// cloneLog returns an independent copy of l.
func cloneLog(p *core.Policy, l *storekit.Log, _ int64) storekit.Log {
	if p.Algorithm() != core.SlidingLog {
		return storekit.Log{}
	}
	return *l.Clone()
}

// The sliding counter's documented bound: after a burst of Quota just before
// a boundary, a trailing period never holds more than Quota×(1+elapsed/Period).
func TestSlidingCounterBound(t *testing.T) {
	const quota = 100
	period := int64(60_000_000)
	p := windowPolicy(core.SlidingCounter, quota, time.Duration(period)*time.Microsecond)
	var st storekit.State
	boundary := start + period
	var admitted []int64
	for range quota {
		require.True(t, storekit.Take(p, &st, boundary-1, 1).Allowed)
		admitted = append(admitted, boundary-1)
	}
	for now := boundary; now < boundary+2*period; now += 50_000 {
		if storekit.Take(p, &st, now, 1).Allowed {
			admitted = append(admitted, now)
		}
		in := 0
		for _, at := range admitted {
			if at > now-period {
				in++
			}
		}
		elapsed := min(now-boundary, period)
		assert.LessOrEqual(t, in, quota+int(quota*elapsed/period)+1, "at %dµs", now-boundary)
	}
}

func TestDecisionOrdering(t *testing.T) {
	allowedMany := core.Decision{Allowed: true, Remaining: 9}
	allowedFew := core.Decision{Allowed: true, Remaining: 1}
	deniedShort := core.Decision{RetryAfter: time.Second}
	deniedLong := core.Decision{RetryAfter: time.Minute}
	impossible := core.Decision{Impossible: true}
	assert.Equal(t, allowedFew, storekit.MostRestrictive([]core.Decision{allowedMany, allowedFew}))
	assert.Equal(t, deniedShort, storekit.MostRestrictive([]core.Decision{allowedFew, deniedShort}))
	assert.Equal(t, deniedLong, storekit.MostRestrictive([]core.Decision{deniedShort, deniedLong, allowedFew}))
	assert.Equal(t, impossible, storekit.MostRestrictive([]core.Decision{deniedLong, impossible}))
	queued := core.Decision{Allowed: true, Delay: time.Second}
	queuedLonger := core.Decision{Allowed: true, Delay: 2 * time.Second}
	assert.Equal(t, queuedLonger, storekit.MostRestrictive([]core.Decision{allowedFew, queued, queuedLonger, allowedMany}), "the longest turn")
	assert.Equal(t, deniedShort, storekit.MostRestrictive([]core.Decision{queuedLonger, deniedShort}))
}

// randomAdvance mixes no time, sub-interval steps, whole intervals and long
// idle gaps.
func randomAdvance(rng *rand.Rand, interval int64) int64 {
	switch rng.IntN(5) {
	case 0:
		return 0
	case 1:
		return rng.Int64N(interval)
	case 2:
		return interval * rng.Int64N(3)
	case 3:
		return rng.Int64N(interval * 4)
	}
	return rng.Int64N(interval * 20)
}

// A sliding counter denser than one unit per microsecond of its period: the
// previous window's count never weighs zero within the window, so the key is
// full only when the window after next begins.
func TestSlidingCounterDenseReset(t *testing.T) {
	p := windowPolicy(core.SlidingCounter, 5, 3*time.Microsecond)
	var st storekit.State
	d := storekit.Take(p, &st, start, 5)
	require.True(t, d.Allowed)
	assert.Equal(t, 6*time.Microsecond, d.ResetAfter)
	assert.False(t, storekit.Full(p, st, start+5))
	assert.Equal(t, 1*time.Microsecond, storekit.Status(p, st, start+5).ResetAfter)
	assert.True(t, storekit.Full(p, st, start+6))
}
