package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// workedExample: token bucket, capacity 10, refill 2/s. 15 instant requests:
// 10 pass, 5 are denied; after 3 idle seconds the bucket holds 6.
func workedExample(t *testing.T, h *harness) {
	for _, alg := range bucketAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := bucket(alg, 10, 2, time.Second)
			passed, denied := 0, 0
			for range 15 {
				if h.take(alg.String(), p, 1).Allowed {
					passed++
				} else {
					denied++
				}
			}
			assert.Equal(t, 10, passed)
			assert.Equal(t, 5, denied)
			h.clock.Advance(3 * time.Second)
			d := h.take(alg.String(), p, 1)
			require.True(t, d.Allowed)
			assert.Equal(t, int64(5), d.Remaining, "6 available after 3s, one just taken")
			assert.Equal(t, 5, h.count(alg.String(), p, 6), "then 5 more, not 6")
		})
	}
}

// drill1: a burst of C passes, the C+1th fails, exactly r more pass after 1s.
func drill1(t *testing.T, h *harness) {
	const c, r = 7, 3
	for _, alg := range bucketAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := bucket(alg, c, r, time.Second)
			assert.Equal(t, c, h.count(alg.String(), p, c), "burst of C")
			assert.False(t, h.take(alg.String(), p, 1).Allowed, "C+1th")
			h.clock.Advance(time.Second)
			assert.Equal(t, r, h.count(alg.String(), p, r+5), "exactly r after 1s")
		})
	}
}

// boundaryBurst: Quota at the end of one window and Quota at the start of the
// next. The fixed window admits 2×Quota within a second; the sliding log never
// admits more than Quota in any trailing period; the sliding counter stays
// within its documented bound, Quota×(1 + elapsed/Period).
func boundaryBurst(t *testing.T, h *harness) {
	const quota = 10
	const period = time.Minute
	h.clock.Advance(period - 500*time.Millisecond)
	run := func(alg core.Algorithm) (first, second int) {
		p := window(alg, quota, period)
		first = h.count(alg.String(), p, quota)
		h.clock.Advance(time.Second) // now 500ms into the next window
		second = h.count(alg.String(), p, quota)
		h.clock.Advance(-time.Second)
		return first, second
	}
	f, s := run(core.FixedWindow)
	assert.Equal(t, 2*quota, f+s, "fixed window admits the 2x boundary burst")
	f, s = run(core.SlidingLog)
	assert.Equal(t, quota, f)
	assert.Equal(t, 0, s, "sliding log never admits more than quota in a trailing period")

	// The sliding counter, followed one request every 100ms for a period: the
	// trailing period never holds more than the bound.
	p := window(core.SlidingCounter, quota, period)
	var admitted []time.Time
	for range quota {
		require.True(t, h.take("counter", p, 1).Allowed)
		admitted = append(admitted, h.clock.Now())
	}
	boundary := Epoch.Add(period)
	h.clock.Set(boundary)
	for h.clock.Now().Before(boundary.Add(period)) {
		now := h.clock.Now()
		if h.take("counter", p, 1).Allowed {
			admitted = append(admitted, now)
		}
		inWindow := 0
		for _, at := range admitted {
			if at.After(now.Add(-period)) {
				inWindow++
			}
		}
		elapsed := now.Sub(boundary)
		bound := quota + int(float64(quota)*float64(elapsed)/float64(period)) + 1
		require.LessOrEqual(t, inWindow, bound, "at %v into the window", elapsed)
		require.LessOrEqual(t, inWindow, 2*quota)
		h.clock.Advance(100 * time.Millisecond)
	}
}

// step is one request of an exact-figures script.
type step struct {
	advance time.Duration
	cost    int64
	want    core.Decision // Policy and Limit are filled in
}

func allow(remaining int64, reset time.Duration) core.Decision {
	return core.Decision{Allowed: true, Remaining: remaining, ResetAfter: reset}
}

func deny(remaining int64, reset, retry time.Duration) core.Decision {
	return core.Decision{Remaining: remaining, ResetAfter: reset, RetryAfter: retry}
}

func impossible(remaining int64, reset time.Duration) core.Decision {
	return core.Decision{Impossible: true, Remaining: remaining, ResetAfter: reset}
}

// as fills in what a wanted decision leaves out: p and its Limit.
func as(p *core.Policy, want core.Decision) core.Decision {
	want.Policy, want.Limit = p, p.Burst()
	return want
}

// queued is a leaky queue's grant that waits delay for its turn.
func queued(remaining int64, reset, delay time.Duration) core.Decision {
	return core.Decision{Allowed: true, Remaining: remaining, ResetAfter: reset, Delay: delay}
}

const ms, sec = time.Millisecond, time.Second

// bucketScript holds for all three bucket algorithms: capacity 10, 2/s.
var bucketScript = []step{
	{0, 1, allow(9, 500*ms)},
	{0, 9, allow(0, 5*sec)},
	{0, 1, deny(0, 5*sec, 500*ms)},
	{200 * ms, 1, deny(0, 4800*ms, 300*ms)},
	{300 * ms, 1, allow(0, 5*sec)},
	{0, 3, deny(0, 5*sec, 1500*ms)},
	{0, 11, impossible(0, 5*sec)},
	{1200 * ms, 2, allow(0, 5*sec-200*ms)},
	{10 * sec, 1, allow(9, 500*ms)},
}

var exactScripts = map[string]struct {
	policy *core.Policy
	steps  []step
}{
	"token-bucket": {bucket(core.TokenBucket, 10, 2, time.Second), bucketScript},
	"gcra":         {bucket(core.GCRA, 10, 2, time.Second), bucketScript},
	"leaky-bucket": {bucket(core.LeakyBucket, 10, 2, time.Second), bucketScript},
	"fixed-window": {window(core.FixedWindow, 5, 10*time.Second), []step{
		{4 * sec, 2, allow(3, 6*sec)},
		{0, 3, allow(0, 6*sec)},
		{0, 1, deny(0, 6*sec, 6*sec)},
		{6 * sec, 1, allow(4, 10*sec)},
		{0, 6, impossible(4, 10*sec)},
		{9999 * ms, 4, allow(0, 1*ms)},
	}},
	"sliding-log": {window(core.SlidingLog, 3, 10*time.Second), []step{
		{0, 1, allow(2, 10*sec)},
		{2 * sec, 1, allow(1, 10*sec)},
		{2 * sec, 1, allow(0, 10*sec)},
		{0, 1, deny(0, 10*sec, 6*sec)},
		{6 * sec, 1, allow(0, 10*sec)},
		{0, 2, deny(0, 10*sec, 4*sec)},
		{0, 4, impossible(0, 10*sec)},
		{20 * sec, 3, allow(0, 10*sec)},
	}},
	"sliding-counter": {window(core.SlidingCounter, 10, 10*time.Second), []step{
		{0, 10, allow(0, 19*sec+time.Microsecond)},
		{0, 1, deny(0, 19*sec+time.Microsecond, 10*sec+time.Microsecond)},
		{15 * sec, 1, allow(4, 5*sec+time.Microsecond)},
		{0, 4, allow(0, 13*sec+time.Microsecond)},
		{0, 1, deny(0, 13*sec+time.Microsecond, time.Microsecond)},
		{time.Microsecond, 1, allow(0, 13333333*time.Microsecond)},
		{0, 11, impossible(0, 13333333*time.Microsecond)},
	}},
	// Two at once, then one every 500ms, waiting at most 1s: at most 2 + 2
	// units in one request.
	"leaky-queue": {queue(2, 2, time.Second, time.Second), []step{
		{0, 1, allow(1, 500*ms)},
		{0, 1, allow(0, 1*sec)},
		{0, 1, queued(0, 1500*ms, 500*ms)},
		{0, 2, deny(0, 1500*ms, 500*ms)},
		{0, 1, queued(0, 2*sec, 1*sec)},
		{0, 5, impossible(0, 2*sec)},
		{200 * ms, 1, deny(0, 1800*ms, 300*ms)},
		{300 * ms, 1, queued(0, 2*sec, 1*sec)},
		{10 * sec, 4, queued(0, 2*sec, 1*sec)},
		{2 * sec, 3, queued(0, 1500*ms, 500*ms)},
	}},
}

// exactFigures checks every field of every decision of a script per algorithm.
func exactFigures(t *testing.T, h *harness) {
	for name, sc := range exactScripts {
		t.Run(name, func(t *testing.T) {
			h.clock.Set(Epoch)
			for i, s := range sc.steps {
				h.clock.Advance(s.advance)
				want := s.want
				want.Policy, want.Limit = sc.policy, sc.policy.Burst()
				got := h.take(name, sc.policy, s.cost)
				require.Equal(t, want, got, "step %d: advance %v, cost %d", i, s.advance, s.cost)
			}
		})
	}
}

// retryAfterIsExact: for every algorithm, waiting RetryAfter admits the
// denied request, and waiting one microsecond less does not.
func retryAfterIsExact(t *testing.T, h *harness) {
	for _, alg := range allAlgorithms {
		for _, cost := range []int64{1, 3} {
			t.Run(fmt.Sprintf("%v/cost%d", alg, cost), func(t *testing.T) {
				p := somePolicy(alg)
				h.clock.Set(Epoch.Add(1234567 * time.Microsecond))
				key := fmt.Sprintf("k%d", cost)
				require.True(t, h.take(key, p, 4).Allowed)
				h.clock.Advance(3 * time.Second)
				for i := 0; h.take(key, p, 1).Allowed; i++ {
					require.Less(t, i, 20, "never denied")
				}
				d := h.take(key, p, cost)
				require.False(t, d.Allowed)
				h.clock.Advance(d.RetryAfter - time.Microsecond)
				early := h.take(key, p, cost)
				assert.False(t, early.Allowed, "one microsecond early")
				assert.Equal(t, time.Microsecond, early.RetryAfter)
				h.clock.Advance(time.Microsecond)
				assert.True(t, h.take(key, p, cost).Allowed, "on time")
			})
		}
	}
}
