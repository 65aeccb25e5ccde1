package storetest

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
)

type scenario struct {
	name string
	run  func(t *testing.T, h *harness)
}

var scenarios = []scenario{
	{"WorkedExample", workedExample},
	{"Drill1", drill1},
	{"BoundaryBurst", boundaryBurst},
	{"ExactFigures", exactFigures},
	{"Costs", costs},
	{"InvalidRequests", invalidRequests},
	{"Refunds", refunds},
	{"Charges", charges},
	{"Layered", layered},
	{"LayeredSameKeyTwice", layeredSameKeyTwice},
	{"KeyIsolation", keyIsolation},
	{"Reset", reset},
	{"Concurrent", concurrent},
	{"RetryAfterIsExact", retryAfterIsExact},
	{"HostileValues", hostileValues},
	{"ShapingQueue", shapingQueue},
	{"QueueDelayN", queueDelayN},
	{"QueueLength", queueLength},
	{"QueueGivesTurnsBack", queueGivesTurnsBack},
	{"QueueTurnsGivenBack", queueTurnsGivenBack},
	{"QueueLayered", queueLayered},
}

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

// costs: weighted requests take their cost; a cost above the burst is denied
// at once and takes nothing.
func costs(t *testing.T, h *harness) {
	for _, alg := range immediateAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			d := h.take("k", p, 4)
			require.True(t, d.Allowed)
			assert.Equal(t, int64(6), d.Remaining)
			d = h.take("k", p, 11)
			assert.False(t, d.Allowed)
			assert.True(t, d.Impossible)
			assert.Zero(t, d.RetryAfter)
			assert.Equal(t, int64(6), d.Remaining, "an impossible cost takes nothing")
			d = h.take("k", p, 7)
			assert.False(t, d.Allowed)
			assert.False(t, d.Impossible)
			assert.Positive(t, d.RetryAfter)
			d = h.take("k", p, 6)
			assert.True(t, d.Allowed)
			assert.Zero(t, d.Remaining)
		})
	}
}

func invalidRequests(t *testing.T, h *harness) {
	p := somePolicy(core.GCRA)
	for _, cost := range []int64{0, -1} {
		_, err := h.store.Take(context.Background(), core.Request{Key: h.key("k"), Policy: p, Cost: cost})
		assert.ErrorAs(t, err, new(*core.RequestError), "cost %d", cost)
	}
	_, err := h.store.Take(context.Background(), core.Request{Key: h.key("k"), Cost: 1})
	assert.ErrorAs(t, err, new(*core.RequestError))
	err = h.store.TakeAll(context.Background(), []core.Request{{Key: h.key("k"), Policy: p, Cost: 1}}, nil)
	assert.ErrorAs(t, err, new(*core.RequestError))
	err = h.store.TakeAll(context.Background(), []core.Request{{Key: h.key("k"), Policy: p, Cost: 1}, {Key: h.key("k"), Policy: p}}, make([]core.Decision, 2))
	assert.ErrorAs(t, err, new(*core.RequestError))
	assert.Equal(t, int64(10), h.take("k", p, 1).Remaining+1, "rejected requests took nothing")
}

// refunds: units given back are available again, never beyond full.
func refunds(t *testing.T, h *harness) {
	for _, alg := range immediateAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			require.True(t, h.take("k", p, 8).Allowed)
			d := h.adjust("k", p, -5)
			assert.Equal(t, int64(7), d.Remaining)
			assert.True(t, h.take("k", p, 7).Allowed)
			assert.False(t, h.take("k", p, 1).Allowed)
			d = h.adjust("k", p, -100)
			assert.Equal(t, int64(10), d.Remaining, "never beyond full")
			assert.Equal(t, 10, h.count("k", p, 11))
		})
	}
}

// charges: a positive adjustment takes units even past the limit, and the key
// stays denied until the debt is repaid.
func charges(t *testing.T, h *harness) {
	for _, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			require.True(t, h.take("k", p, 6).Allowed)
			d := h.adjust("k", p, 7)
			assert.Zero(t, d.Remaining)
			assert.False(t, d.Allowed, "in debt")
			deny := h.take("k", p, 1)
			assert.False(t, deny.Allowed)
			assert.Greater(t, deny.RetryAfter, time.Duration(0))
		})
	}
}

// layered: per-IP 10 and per-user 3 as one decision. A denial by the user
// layer takes nothing from the IP layer; the reported decision is the denial.
func layered(t *testing.T, h *harness) {
	for _, alg := range immediateAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			ip := somePolicy(alg)
			var user *core.Policy
			if alg == core.TokenBucket || alg == core.GCRA || alg == core.LeakyBucket {
				user = core.MustPolicy(core.PolicyConfig{Name: "user", Algorithm: alg, Quota: 1, Period: time.Second, Burst: 3})
			} else {
				user = core.MustPolicy(core.PolicyConfig{Name: "user", Algorithm: alg, Quota: 3, Period: 10 * time.Second})
			}
			rs := []core.Request{{Key: h.key("ip"), Policy: ip, Cost: 1}, {Key: h.key("user"), Policy: user, Cost: 1}}
			ds := make([]core.Decision, 2)
			for i := range 3 {
				require.NoError(t, h.store.TakeAll(context.Background(), rs, ds))
				require.True(t, ds[0].Allowed && ds[1].Allowed, "request %d", i)
				assert.Equal(t, int64(9-i), ds[0].Remaining)
				assert.Equal(t, int64(2-i), ds[1].Remaining)
			}
			for range 5 {
				require.NoError(t, h.store.TakeAll(context.Background(), rs, ds))
				assert.True(t, ds[0].Allowed, "the IP layer alone would pass")
				assert.Equal(t, int64(7), ds[0].Remaining, "and reports its standing without the request")
				assert.False(t, ds[1].Allowed)
				assert.Positive(t, ds[1].RetryAfter)
				assert.Same(t, user, storekit.MostRestrictive(ds).Policy)
			}
			assert.Equal(t, int64(6), h.take("ip", ip, 1).Remaining, "denials took nothing from the IP layer")
		})
	}
}

// layeredSameKeyTwice: two layers on one key and policy take twice.
func layeredSameKeyTwice(t *testing.T, h *harness) {
	for _, alg := range immediateAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			rs := []core.Request{{Key: h.key("k"), Policy: p, Cost: 4}, {Key: h.key("k"), Policy: p, Cost: 4}}
			ds := make([]core.Decision, 2)
			require.NoError(t, h.store.TakeAll(context.Background(), rs, ds))
			require.True(t, ds[0].Allowed && ds[1].Allowed)
			assert.Equal(t, int64(2), ds[1].Remaining)
			require.NoError(t, h.store.TakeAll(context.Background(), rs, ds))
			assert.False(t, ds[1].Allowed && ds[0].Allowed)
			assert.Equal(t, int64(0), h.take("k", p, 2).Remaining, "the denied pair took nothing")
		})
	}
}

func keyIsolation(t *testing.T, h *harness) {
	for _, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			other := renamed(p, "other")
			assert.Equal(t, 10, h.count("a", p, 12))
			assert.Equal(t, 10, h.count("b", p, 12), "another key is untouched")
			assert.Equal(t, 10, h.count("a", other, 12), "the same key under another policy is untouched")
		})
	}
}

func reset(t *testing.T, h *harness) {
	for _, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			assert.Equal(t, 10, h.count("k", p, 12))
			require.NoError(t, h.store.Reset(context.Background(), h.key("k"), p))
			assert.Equal(t, 10, h.count("k", p, 12))
		})
	}
}

// concurrent: many goroutines on one key admit exactly the quota.
func concurrent(t *testing.T, h *harness) {
	for _, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			var p *core.Policy
			switch alg {
			case core.TokenBucket, core.GCRA, core.LeakyBucket:
				p = bucket(alg, 100, 1, time.Hour)
			case core.LeakyQueue:
				p = queue(50, 1, time.Hour, 50*time.Hour) // 50 at once, 50 waiting
			default:
				p = window(alg, 100, time.Hour)
			}
			var admitted atomic.Int64
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 20 {
						d, err := h.store.Take(context.Background(), core.Request{Key: h.key("hot"), Policy: p, Cost: 1})
						if err != nil {
							panic(fmt.Sprintf("Take: %v", err))
						}
						if d.Allowed {
							admitted.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			assert.Equal(t, int64(100), admitted.Load())
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

// hostileValues: costs and adjustments at and past MaxCost. Those past it
// are rejected with a *core.RequestError naming the value, before they touch
// any state; those within it saturate a key's debt at the bounds core states
// (MaxDebt, MaxWindowCount) instead of overflowing, and every decision is
// field for field the one core's own functions make.
func hostileValues(t *testing.T, h *harness) {
	policies := []*core.Policy{
		bucket(core.TokenBucket, 100, 100, time.Second),
		bucket(core.GCRA, 100, 100, time.Second),
		bucket(core.LeakyBucket, 100, 100, time.Second),
		bucket(core.GCRA, 1, 1, 366*24*time.Hour), // the slowest refill core allows, burst 1
		window(core.FixedWindow, 100, time.Second),
		window(core.SlidingLog, 100, time.Second),
		window(core.SlidingCounter, 100, time.Second),
		queue(100, 100, time.Second, time.Second),
		queue(1, 1, 366*24*time.Hour, 366*24*time.Hour), // the slowest drain and the longest wait core allows
	}
	for i, p := range policies {
		t.Run(fmt.Sprintf("%d-%v", i, p.Algorithm()), func(t *testing.T) {
			m := &model{p: p}
			now := func() int64 { return h.clock.Now().UnixMicro() }
			check := func(step string, got core.Decision, want core.Decision) {
				t.Helper()
				got.Policy, want.Policy = nil, nil
				require.Equal(t, want, got, step)
			}
			bad := func(step, field string, err error, value int64) {
				t.Helper()
				var ce *core.RequestError
				require.ErrorAs(t, err, &ce, step)
				assert.ErrorAs(t, err, new(*core.RequestError), step)
				assert.Equal(t, field, ce.Field, step)
				assert.Equal(t, value, ce.Value, step)
				check(step+": took nothing", h.adjust("k", p, 0), m.status(now()))
			}
			ctx := context.Background()
			key := h.key("k")

			for _, c := range []int64{core.MaxCost + 1, math.MaxInt64, math.MinInt64} {
				_, err := h.store.Take(ctx, core.Request{Key: key, Policy: p, Cost: c})
				bad(fmt.Sprintf("take %d", c), "cost", err, c)
				err = h.store.TakeAll(ctx, []core.Request{{Key: key, Policy: p, Cost: 1}, {Key: key, Policy: p, Cost: c}}, make([]core.Decision, 2))
				bad(fmt.Sprintf("take-all %d", c), "cost", err, c)
			}
			for _, c := range []int64{core.MaxCost + 1, -core.MaxCost - 1, math.MaxInt64, math.MinInt64} {
				_, err := h.store.Adjust(ctx, core.Request{Key: key, Policy: p, Cost: c})
				bad(fmt.Sprintf("adjust %d", c), "delta", err, c)
			}

			check("take 1", h.take("k", p, 1), m.take(now(), 1))
			check("charge MaxCost", h.adjust("k", p, core.MaxCost), m.adjust(now(), core.MaxCost))
			check("charge MaxCost again", h.adjust("k", p, core.MaxCost), m.adjust(now(), core.MaxCost))
			deny := h.take("k", p, 1)
			check("in debt", deny, m.take(now(), 1))
			assert.False(t, deny.Allowed, "a saturated charge still leaves the key in debt")
			check("a MaxCost take is impossible", h.take("k", p, core.MaxCost), m.take(now(), core.MaxCost))
			h.clock.Advance(time.Hour)
			check("an hour later", h.take("k", p, 1), m.take(now(), 1))
			check("refund MaxCost", h.adjust("k", p, -core.MaxCost), m.adjust(now(), -core.MaxCost))
			check("refund MaxCost again", h.adjust("k", p, -core.MaxCost), m.adjust(now(), -core.MaxCost))
			full := h.take("k", p, p.Burst())
			check("full again", full, m.take(now(), p.Burst()))
			assert.True(t, full.Allowed, "a refund brings a key back to full, never past it")
			check("refund past full", h.adjust("k", p, -core.MaxCost), m.adjust(now(), -core.MaxCost))
			check("then the burst once", h.take("k", p, p.Burst()), m.take(now(), p.Burst()))
			check("and no more", h.take("k", p, 1), m.take(now(), 1))

			// The same values through a Limiter's reservations.
			l, err := core.NewLimiter(h.store)
			require.NoError(t, err)
			_, err = l.Reserve(ctx, []core.Request{{Key: key, Policy: p, Cost: core.MaxCost + 1}}, nil)
			bad("reserve", "estimate", err, core.MaxCost+1)
			// Long enough for most keys to be full again, which a store may
			// forget; the model keeps its state, which decides alike either
			// way (a slow queue's last turns may still be ahead).
			h.clock.Advance(400 * 24 * time.Hour)
			res, err := l.Reserve(ctx, []core.Request{{Key: key, Policy: p, Cost: 1}}, nil)
			require.NoError(t, err)
			check("reserve 1", res.Decision, m.take(now(), 1))
			for _, actual := range []int64{-1, core.MaxCost + 1, math.MaxInt64} {
				err := res.Reconcile(ctx, actual)
				bad(fmt.Sprintf("reconcile %d", actual), "actual", err, actual)
			}
			require.NoError(t, res.Reconcile(ctx, core.MaxCost))
			m.adjust(now(), core.MaxCost-1)
			check("reconciled into debt", h.take("k", p, 1), m.take(now(), 1))
		})
	}
}

// model is one key under one policy as core's own functions keep it: what
// every store must decide alike.
type model struct {
	p   *core.Policy
	st  storekit.State
	log storekit.Log
}

func (m *model) take(now, cost int64) core.Decision {
	if m.p.Algorithm() == core.SlidingLog {
		return storekit.TakeLog(m.p, &m.log, now, cost)
	}
	return storekit.Take(m.p, &m.st, now, cost)
}

func (m *model) adjust(now, delta int64) core.Decision {
	if m.p.Algorithm() == core.SlidingLog {
		return storekit.AdjustLog(m.p, &m.log, now, delta)
	}
	return storekit.Adjust(m.p, &m.st, now, delta)
}

func (m *model) status(now int64) core.Decision { return m.adjust(now, 0) }

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
