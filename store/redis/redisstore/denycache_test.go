package redisstore

import (
	"context"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/storekit"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storetest"
)

func TestDenyCache(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	p := core.MustPolicy(core.PolicyConfig{Name: "deny", Algorithm: core.GCRA, Quota: 1, Period: 10 * time.Second, Burst: 2})
	take := func(s *Store, key string, cost int64) core.Decision {
		t.Helper()
		d, err := s.Take(ctx, core.Request{Key: key, Policy: p, Cost: cost})
		require.NoError(t, err)
		return d
	}
	trips := func(s *Store, f func()) int64 {
		n := hook(s)
		f()
		return n.roundTrips()
	}

	t.Run("off-by-default", func(t *testing.T) {
		s := newTestStore(t, c, WithClock(sluicetest.NewManualClock(storetest.Epoch)))
		take(s, "k", 2)
		assert.Equal(t, int64(5), trips(s, func() {
			for range 5 {
				assert.False(t, take(s, "k", 1).Allowed)
			}
		}))
	})

	t.Run("denies-locally-until-retry", func(t *testing.T) {
		clock := sluicetest.NewManualClock(storetest.Epoch)
		s := newTestStore(t, c, WithClock(clock), WithDenyCache(100))
		require.True(t, take(s, "k", 2).Allowed)
		first := take(s, "k", 1)
		require.False(t, first.Allowed)
		require.Equal(t, 10*time.Second, first.RetryAfter)

		clock.Advance(3 * time.Second)
		var cached core.Decision
		assert.Zero(t, trips(s, func() { cached = take(s, "k", 1) }), "no round trip")
		want := first
		want.RetryAfter -= 3 * time.Second
		want.ResetAfter -= 3 * time.Second
		assert.Equal(t, want, cached, "the remembered decision, shortened by the time elapsed")

		assert.Equal(t, int64(1), trips(s, func() { take(s, "k", 2) }), "another cost asks Redis")
		assert.Equal(t, int64(1), trips(s, func() { take(s, "other", 1) }), "another key asks Redis")

		clock.Advance(7 * time.Second)
		var after core.Decision
		assert.Equal(t, int64(1), trips(s, func() { after = take(s, "k", 1) }), "after RetryAfter, Redis again")
		assert.True(t, after.Allowed)
	})

	t.Run("local-refund-and-reset-forget", func(t *testing.T) {
		clock := sluicetest.NewManualClock(storetest.Epoch)
		s := newTestStore(t, c, WithClock(clock), WithDenyCache(100))
		take(s, "k", 2)
		require.False(t, take(s, "k", 1).Allowed)
		_, err := s.Adjust(ctx, core.Request{Key: "k", Policy: p, Cost: -1})
		require.NoError(t, err)
		assert.True(t, take(s, "k", 1).Allowed, "the refund is seen at once")
		require.False(t, take(s, "k", 1).Allowed)
		require.NoError(t, s.Reset(ctx, "k", p))
		assert.True(t, take(s, "k", 1).Allowed, "so is a reset")
	})

	t.Run("stale-after-remote-refund", func(t *testing.T) {
		// The documented limit: a refund on another instance is not seen.
		clock := sluicetest.NewManualClock(storetest.Epoch)
		prefix := testPrefix(t, c)
		s, err := New(c, WithPrefix(prefix), WithClock(clock), WithDenyCache(100))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		other, err := New(c, WithPrefix(prefix), WithClock(clock))
		require.NoError(t, err)
		t.Cleanup(func() { _ = other.Close() })
		take(s, "k", 2)
		require.False(t, take(s, "k", 1).Allowed)
		_, err = other.Adjust(ctx, core.Request{Key: "k", Policy: p, Cost: -2})
		require.NoError(t, err)
		assert.False(t, take(s, "k", 1).Allowed, "still denied from the cache")
		assert.True(t, take(other, "k", 1).Allowed)
	})

	t.Run("take-all", func(t *testing.T) {
		clock := sluicetest.NewManualClock(storetest.Epoch)
		s := newTestStore(t, c, WithClock(clock), WithDenyCache(100))
		route := tenPer10s(core.TokenBucket, "route")
		rs := []core.Request{{Key: "r", Policy: route, Cost: 1}, {Key: "ip", Policy: p, Cost: 1}}
		ds := make([]core.Decision, 2)
		take(s, "ip", 2)
		require.NoError(t, s.TakeAll(ctx, rs, ds))
		require.False(t, ds[1].Allowed)
		denial := ds[1]
		assert.Zero(t, trips(s, func() { require.NoError(t, s.TakeAll(ctx, rs, ds)) }))
		assert.Equal(t, denial, ds[1])
		assert.Equal(t, core.Decision{Policy: route, Allowed: true, Limit: 10}, ds[0], "the other layer is not asked")
		assert.Same(t, p, storekit.MostRestrictive(ds).Policy)
		d, err := s.Take(ctx, core.Request{Key: "r", Policy: route, Cost: 1})
		require.NoError(t, err)
		assert.Equal(t, int64(9), d.Remaining, "the denied requests took nothing")
	})

	t.Run("bounded", func(t *testing.T) {
		clock := sluicetest.NewManualClock(storetest.Epoch)
		s := newTestStore(t, c, WithClock(clock), WithDenyCache(32))
		for i := range 300 {
			d := take(s, "k"+strconv.Itoa(i), 3)
			require.True(t, d.Impossible, "an impossible request is not remembered")
			take(s, "k"+strconv.Itoa(i), 2)
			require.False(t, take(s, "k"+strconv.Itoa(i), 1).Allowed)
		}
		assert.LessOrEqual(t, s.denies.len(), 32)
		assert.Positive(t, s.denies.len())
	})
}
