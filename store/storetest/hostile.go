package storetest

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

			for _, c := range []int64{storekit.MaxCost + 1, math.MaxInt64, math.MinInt64} {
				_, err := h.store.Take(ctx, core.Request{Key: key, Policy: p, Cost: c})
				bad(fmt.Sprintf("take %d", c), "cost", err, c)
				err = h.store.TakeAll(ctx, []core.Request{{Key: key, Policy: p, Cost: 1}, {Key: key, Policy: p, Cost: c}}, make([]core.Decision, 2))
				bad(fmt.Sprintf("take-all %d", c), "cost", err, c)
			}
			for _, c := range []int64{storekit.MaxCost + 1, -storekit.MaxCost - 1, math.MaxInt64, math.MinInt64} {
				_, err := h.store.Adjust(ctx, core.Request{Key: key, Policy: p, Cost: c})
				bad(fmt.Sprintf("adjust %d", c), "delta", err, c)
			}

			check("take 1", h.take("k", p, 1), m.take(now(), 1))
			check("charge MaxCost", h.adjust("k", p, storekit.MaxCost), m.adjust(now(), storekit.MaxCost))
			check("charge MaxCost again", h.adjust("k", p, storekit.MaxCost), m.adjust(now(), storekit.MaxCost))
			deny := h.take("k", p, 1)
			check("in debt", deny, m.take(now(), 1))
			assert.False(t, deny.Allowed, "a saturated charge still leaves the key in debt")
			check("a MaxCost take is impossible", h.take("k", p, storekit.MaxCost), m.take(now(), storekit.MaxCost))
			h.clock.Advance(time.Hour)
			check("an hour later", h.take("k", p, 1), m.take(now(), 1))
			check("refund MaxCost", h.adjust("k", p, -storekit.MaxCost), m.adjust(now(), -storekit.MaxCost))
			check("refund MaxCost again", h.adjust("k", p, -storekit.MaxCost), m.adjust(now(), -storekit.MaxCost))
			full := h.take("k", p, p.Burst())
			check("full again", full, m.take(now(), p.Burst()))
			assert.True(t, full.Allowed, "a refund brings a key back to full, never past it")
			check("refund past full", h.adjust("k", p, -storekit.MaxCost), m.adjust(now(), -storekit.MaxCost))
			check("then the burst once", h.take("k", p, p.Burst()), m.take(now(), p.Burst()))
			check("and no more", h.take("k", p, 1), m.take(now(), 1))

			// The same values through a Limiter's reservations.
			l, err := core.NewLimiter(h.store)
			require.NoError(t, err)
			_, err = l.Reserve(ctx, []core.Request{{Key: key, Policy: p, Cost: storekit.MaxCost + 1}}, nil)
			bad("reserve", "estimate", err, storekit.MaxCost+1)
			// Long enough for most keys to be full again, which a store may
			// forget; the model keeps its state, which decides alike either
			// way (a slow queue's last turns may still be ahead).
			h.clock.Advance(400 * 24 * time.Hour)
			res, err := l.Reserve(ctx, []core.Request{{Key: key, Policy: p, Cost: 1}}, nil)
			require.NoError(t, err)
			check("reserve 1", res.Decision, m.take(now(), 1))
			for _, actual := range []int64{-1, storekit.MaxCost + 1, math.MaxInt64} {
				err := res.Reconcile(ctx, actual)
				bad(fmt.Sprintf("reconcile %d", actual), "actual", err, actual)
			}
			require.NoError(t, res.Reconcile(ctx, storekit.MaxCost))
			m.adjust(now(), storekit.MaxCost-1)
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
