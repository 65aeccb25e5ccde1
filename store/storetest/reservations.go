package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storekit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reservationScenarios hold a core.Reserver to its contract; Run runs them
// on a store that is one, and skips them otherwise.
var reservationScenarios = []struct {
	name string
	run  func(t *testing.T, h rv)
}{
	{"HoldsCount", reserveHoldsCount},
	{"FinalSettles", reserveFinalSettles},
	{"Steps", reserveSteps},
	{"StepDeniedChargesDebt", reserveStepDenied},
	{"ReclaimAfterTTL", reserveReclaim},
	{"ReclaimBound", reserveReclaimBound},
	{"Denied", reserveDenied},
	{"Layered", reserveLayered},
	{"Invalid", reserveInvalid},
	{"Concurrent", reserveConcurrent},
}

// rv is a harness on a core.Reserver.
type rv struct {
	*harness
	s core.Reserver
}

func (h rv) reserve(id string, ttl time.Duration, rs ...core.Request) []core.Decision {
	h.t.Helper()
	ds := make([]core.Decision, len(rs))
	require.NoError(h.t, h.s.Reserve(context.Background(), id, h.keyed(rs), ds, ttl))
	return ds
}

func (h rv) settle(id string, final bool, ttl time.Duration, rs ...core.Request) ([]core.Decision, bool) {
	h.t.Helper()
	ds := make([]core.Decision, len(rs))
	held, err := h.s.Settle(context.Background(), id, h.keyed(rs), ds, final, ttl)
	require.NoError(h.t, err)
	return ds, held
}

func (h rv) keyed(rs []core.Request) []core.Request {
	out := make([]core.Request, len(rs))
	for i, r := range rs {
		r.Key = h.key(r.Key)
		out[i] = r
	}
	return out
}

// slow is a token bucket of 10 refilling one unit an hour: no unit comes
// back by itself within a scenario.
var slow = bucket(core.TokenBucket, 10, 1, time.Hour)

func req(key string, p *core.Policy, cost int64) core.Request {
	return core.Request{Key: key, Policy: p, Cost: cost}
}

// reserveHoldsCount: a reservation's units are taken at once, under every
// algorithm a Reserver serves, and a Take on the key sees them held.
func reserveHoldsCount(t *testing.T, h rv) {
	for _, alg := range []core.Algorithm{core.TokenBucket, core.GCRA, core.LeakyBucket, core.FixedWindow, core.SlidingCounter} {
		t.Run(alg.String(), func(t *testing.T) {
			p := somePolicy(alg)
			ds := h.reserve("r-"+alg.String(), time.Minute, req("k", p, 4))
			require.True(t, ds[0].Allowed)
			assert.Equal(t, int64(6), ds[0].Remaining)
			assert.Equal(t, int64(5), h.take("k", p, 1).Remaining, "a Take counts the outstanding reservation")
			ds, held := h.settle("r-"+alg.String(), true, time.Minute, req("k", p, 1))
			assert.True(t, held)
			assert.Equal(t, int64(8), ds[0].Remaining, "the unused estimate came back")
		})
	}
}

// reserveFinalSettles: the final settle refunds or charges, once; a
// repeated or late settle changes nothing.
func reserveFinalSettles(t *testing.T, h rv) {
	ds := h.reserve("a", time.Minute, req("k", slow, 4))
	assert.Equal(t, int64(6), ds[0].Remaining)
	ds, held := h.settle("a", true, time.Minute, req("k", slow, 1))
	assert.True(t, held)
	assert.Equal(t, int64(9), ds[0].Remaining)
	for _, final := range []bool{true, false} {
		ds, held = h.settle("a", final, time.Minute, req("k", slow, 0))
		assert.False(t, held, "settled already")
		assert.True(t, ds[0].Allowed)
		assert.Equal(t, int64(9), ds[0].Remaining, "a repeated settle changes nothing")
	}
	// The usage beyond the estimate is charged.
	h.reserve("b", time.Minute, req("k", slow, 4))
	ds, _ = h.settle("b", true, time.Minute, req("k", slow, 7))
	assert.Equal(t, int64(2), ds[0].Remaining)
	// An id never made is not held either, and a reused id is refused.
	_, held = h.settle("never", true, time.Minute, req("k", slow, 3))
	assert.False(t, held)
	h.reserve("c", time.Minute, req("k", slow, 1))
	err := h.s.Reserve(context.Background(), "c", h.keyed([]core.Request{req("k", slow, 1)}), make([]core.Decision, 1), time.Minute)
	assert.Error(t, err, "an id held already")
	assert.Equal(t, int64(0), h.take("k", slow, 1).Remaining, "the refused Reserve took nothing")
}

// reserveSteps: a streaming settle keeps the reservation one estimate
// ahead of its usage; a total repeated, or lower than an earlier one,
// changes nothing.
func reserveSteps(t *testing.T, h rv) {
	h.reserve("s", time.Minute, req("k", slow, 3))
	ds, held := h.settle("s", false, time.Minute, req("k", slow, 2))
	require.True(t, held)
	assert.True(t, ds[0].Allowed)
	assert.Equal(t, int64(5), ds[0].Remaining, "held 3, used 2: took 2 more")
	for _, used := range []int64{2, 1, 0} {
		ds, _ = h.settle("s", false, time.Minute, req("k", slow, used))
		assert.True(t, ds[0].Allowed)
		assert.Equal(t, int64(5), ds[0].Remaining, "a duplicate or stale total takes nothing")
	}
	ds, _ = h.settle("s", true, time.Minute, req("k", slow, 2))
	assert.Equal(t, int64(8), ds[0].Remaining, "used 2 of 5 held")
	ds, _ = h.settle("s", true, time.Minute, req("k", slow, 9))
	assert.Equal(t, int64(8), ds[0].Remaining, "a late final settle changes nothing")
}

// reserveStepDenied: a step that cannot stay ahead is denied; the usage
// beyond the hold is charged into debt all the same.
func reserveStepDenied(t *testing.T, h rv) {
	h.reserve("d", time.Minute, req("k", slow, 6))
	ds, _ := h.settle("d", false, time.Minute, req("k", slow, 5))
	assert.False(t, ds[0].Allowed, "5 more do not fit in 4")
	assert.Equal(t, int64(4), ds[0].Remaining, "used 5 of 6 held: no debt")
	ds, _ = h.settle("d", false, time.Minute, req("k", slow, 9))
	assert.False(t, ds[0].Allowed)
	assert.Equal(t, int64(4), ds[0].Remaining, "the denial's standing, before the debt")
	assert.Equal(t, int64(0), h.take("k", slow, 1).Remaining, "10 - 9 used: 1 left")
	ds, _ = h.settle("d", true, time.Minute, req("k", slow, 9))
	assert.Equal(t, int64(0), ds[0].Remaining, "used 9, all charged, nothing to give back")
	assert.False(t, h.take("k", slow, 1).Allowed)
}

// reserveReclaim: a reservation no one settles within its TTL gives back
// what it holds beyond its usage, seen by the next call on its key; a
// settle after that is a no-op.
func reserveReclaim(t *testing.T, h rv) {
	h.reserve("dead", 10*time.Second, req("k", slow, 5))
	ds, _ := h.settle("dead", false, 10*time.Second, req("k", slow, 2))
	assert.Equal(t, int64(3), ds[0].Remaining, "held 7, used 2")
	h.clock.Advance(10*time.Second - time.Microsecond)
	ds = h.reserve("probe1", time.Minute, req("k", slow, 1))
	assert.Equal(t, int64(2), ds[0].Remaining, "still held")
	h.clock.Advance(time.Microsecond)
	ds = h.reserve("probe2", time.Minute, req("k", slow, 1))
	assert.Equal(t, int64(6), ds[0].Remaining, "reclaimed: 10 - 2 used - 2 probes")
	ds, held := h.settle("dead", true, time.Minute, req("k", slow, 2))
	assert.False(t, held, "reclaimed")
	assert.Equal(t, int64(6), ds[0].Remaining, "a late settle changes nothing")
	// A renewal pushes the expiry on.
	h.reserve("alive", 10*time.Second, req("j", slow, 4))
	h.clock.Advance(9 * time.Second)
	h.settle("alive", false, 10*time.Second, req("j", slow, 0))
	h.clock.Advance(9 * time.Second)
	_, held = h.settle("alive", true, time.Second, req("j", slow, 1))
	assert.True(t, held, "renewed 9s ago for 10s")
	assert.Equal(t, int64(8), h.take("j", slow, 1).Remaining, "used 1 of 4")
}

// reserveReclaimBound: one call reclaims at most storekit.MaxReclaims
// reservations of a key.
func reserveReclaimBound(t *testing.T, h rv) {
	p := bucket(core.TokenBucket, 100, 1, time.Hour)
	for i := range 20 {
		h.reserve(fmt.Sprint("r", i), time.Second, req("k", p, 1))
	}
	h.clock.Advance(time.Second)
	ds, _ := h.settle("none", false, time.Minute, req("k", p, 0))
	assert.Equal(t, int64(80+storekit.MaxReclaims), ds[0].Remaining)
	ds, _ = h.settle("none", false, time.Minute, req("k", p, 0))
	assert.Equal(t, int64(100), ds[0].Remaining)
}

// reserveDenied: a denied reservation holds nothing.
func reserveDenied(t *testing.T, h rv) {
	ds := h.reserve("big", time.Minute, req("k", slow, 11))
	assert.False(t, ds[0].Allowed)
	assert.True(t, ds[0].Impossible)
	h.reserve("most", time.Minute, req("k", slow, 8))
	ds = h.reserve("more", time.Minute, req("k", slow, 3))
	assert.False(t, ds[0].Allowed)
	assert.Equal(t, int64(2), ds[0].Remaining)
	for _, id := range []string{"big", "more"} {
		_, held := h.settle(id, true, time.Minute, req("k", slow, 0))
		assert.False(t, held, id)
	}
}

// reserveLayered: layers reserve as one; each settles on its own key.
func reserveLayered(t *testing.T, h rv) {
	small := core.MustPolicy(core.PolicyConfig{Name: "small", Algorithm: core.TokenBucket, Quota: 1, Period: time.Hour, Burst: 5})
	ds := h.reserve("l", time.Minute, req("a", slow, 3), req("b", small, 3))
	require.True(t, ds[0].Allowed && ds[1].Allowed)
	ds = h.reserve("l2", time.Minute, req("a", slow, 3), req("b", small, 3))
	assert.True(t, ds[0].Allowed)
	assert.False(t, ds[1].Allowed)
	assert.Equal(t, int64(6), h.take("a", slow, 1).Remaining, "a denied layered reservation took nothing")
	ds, held := h.settle("l", false, time.Minute, req("a", slow, 2), req("b", small, 2))
	assert.True(t, held)
	assert.True(t, ds[0].Allowed && ds[1].Allowed)
	assert.Equal(t, []int64{4, 0}, []int64{ds[0].Remaining, ds[1].Remaining}, "each took 2 more")
	ds, _ = h.settle("l", false, time.Minute, req("a", slow, 3), req("b", small, 3))
	assert.True(t, ds[0].Allowed, "a layer settles on its own")
	assert.False(t, ds[1].Allowed)
	assert.Equal(t, []int64{3, 0}, []int64{ds[0].Remaining, ds[1].Remaining})
	ds, _ = h.settle("l", true, time.Minute, req("a", slow, 3), req("b", small, 3))
	assert.Equal(t, int64(6), ds[0].Remaining, "a: 10 - 3 used - 1 taken")
	assert.Equal(t, int64(2), ds[1].Remaining, "b: 5 - 3 used")
}

// reserveInvalid: malformed arguments are *core.RequestErrors, before any
// state is touched.
func reserveInvalid(t *testing.T, h rv) {
	ctx := context.Background()
	ds := make([]core.Decision, 1)
	field := func(err error) string {
		var re *core.RequestError
		if errors.As(err, &re) {
			return re.Field
		}
		return fmt.Sprint(err)
	}
	k := h.key("k")
	assert.Equal(t, "algorithm", field(h.s.Reserve(ctx, "x", []core.Request{req(k, queue(4, 1, time.Second, time.Second), 1)}, ds, time.Minute)))
	assert.Equal(t, "algorithm", field(h.s.Reserve(ctx, "x", []core.Request{req(k, somePolicy(core.SlidingLog), 1)}, ds, time.Minute)))
	assert.Equal(t, "id", field(h.s.Reserve(ctx, "", []core.Request{req(k, slow, 1)}, ds, time.Minute)))
	assert.Equal(t, "id", field(h.s.Reserve(ctx, string(make([]byte, 129)), []core.Request{req(k, slow, 1)}, ds, time.Minute)))
	assert.Equal(t, "ttl", field(h.s.Reserve(ctx, "x", []core.Request{req(k, slow, 1)}, ds, 0)))
	assert.Equal(t, "ttl", field(h.s.Reserve(ctx, "x", []core.Request{req(k, slow, 1)}, ds, 25*time.Hour)))
	assert.Equal(t, "cost", field(h.s.Reserve(ctx, "x", []core.Request{req(k, slow, 0)}, ds, time.Minute)))
	assert.Equal(t, "decisions", field(h.s.Reserve(ctx, "x", []core.Request{req(k, slow, 1)}, nil, time.Minute)))
	_, err := h.s.Settle(ctx, "x", []core.Request{req(k, slow, -1)}, ds, false, time.Minute)
	assert.Equal(t, "actual", field(err))
	_, err = h.s.Settle(ctx, "x", []core.Request{req(k, slow, storekit.MaxCost+1)}, ds, true, 0)
	assert.Equal(t, "actual", field(err))
	_, err = h.s.Settle(ctx, "x", []core.Request{req(k, nil, 1)}, ds, true, 0)
	assert.Equal(t, "policy", field(err))
	assert.Equal(t, int64(9), h.take("k", slow, 1).Remaining, "nothing was touched")
	// A huge running total is taken as far as it fits, and charged.
	h.reserve("huge", time.Minute, req("h", slow, 1))
	ds2, _ := h.settle("huge", false, time.Minute, req("h", slow, storekit.MaxCost))
	assert.False(t, ds2[0].Allowed)
	ds2, _ = h.settle("huge", true, time.Minute, req("h", slow, storekit.MaxCost))
	assert.Zero(t, ds2[0].Remaining)
}

// reserveConcurrent: reservations settled from many goroutines at once
// leave the key as the sum of their usage says.
func reserveConcurrent(t *testing.T, h rv) {
	p := bucket(core.TokenBucket, 10000, 1, time.Hour)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				id := fmt.Sprint(g, "-", i)
				ds := make([]core.Decision, 1)
				rs := h.keyed([]core.Request{req("k", p, 10)})
				if err := h.s.Reserve(context.Background(), id, rs, ds, time.Minute); err != nil || !ds[0].Allowed {
					t.Errorf("reserve %s: %v %+v", id, err, ds[0])
					return
				}
				for used := int64(1); used <= 3; used++ {
					rs[0].Cost = used
					_, _ = h.s.Settle(context.Background(), id, rs, ds, false, time.Minute)
				}
				_, _ = h.s.Settle(context.Background(), id, rs, ds, true, time.Minute)
				_, _ = h.s.Settle(context.Background(), id, rs, ds, true, time.Minute)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(10000-8*25*3-1), h.take("k", p, 1).Remaining)
}
