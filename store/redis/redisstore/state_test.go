package redisstore

import (
	"context"
	"fmt"
	"github.com/sluice-go/sluice/sluicetest"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storetest"
)

var allAlgorithms = []core.Algorithm{core.TokenBucket, core.GCRA, core.LeakyBucket, core.FixedWindow, core.SlidingLog, core.SlidingCounter, core.LeakyQueue}

func bucketAlgorithm(a core.Algorithm) bool {
	return a == core.TokenBucket || a == core.GCRA || a == core.LeakyBucket
}

// tenPer10s allows 10 at once, refilling 10 per 10s; a leaky queue's next
// request waits up to half a second (so that 11 at once is impossible).
func tenPer10s(alg core.Algorithm, name string) *core.Policy {
	if alg == core.LeakyQueue {
		return core.MustPolicy(core.PolicyConfig{Name: name, Algorithm: alg, Quota: 1, Period: time.Second, Burst: 10, MaxDelay: 500 * time.Millisecond})
	}
	if bucketAlgorithm(alg) {
		return core.MustPolicy(core.PolicyConfig{Name: name, Algorithm: alg, Quota: 1, Period: time.Second, Burst: 10})
	}
	return core.MustPolicy(core.PolicyConfig{Name: name, Algorithm: alg, Quota: 10, Period: 10 * time.Second})
}

// TestCounterWeighing checks the sliding counter's float weighting where the
// order of the operations decides the rounding: floor(prev×(P−e)/P) and
// floor(prev×((P−e)/P)) differ at these points, and Redis must round as
// core does.
func TestCounterWeighing(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	for _, shape := range []struct {
		quota  int64
		period time.Duration
	}{{100, 100 * time.Microsecond}, {1000, time.Millisecond}, {60, 600 * time.Microsecond}} {
		p := core.MustPolicy(core.PolicyConfig{Name: "weigh", Algorithm: core.SlidingCounter, Quota: shape.quota, Period: shape.period})
		per := shape.period.Microseconds()
		type point struct{ prev, elapsed int64 }
		var points []point
		for prev := int64(1); prev <= shape.quota && len(points) < 40; prev++ {
			for e := int64(1); e < per && len(points) < 40; e += max(per/997, 1) {
				exact := math.Floor(float64(prev) * float64(per-e) / float64(per))
				other := math.Floor(float64(prev) * (float64(per-e) / float64(per)))
				if exact != other {
					points = append(points, point{prev, e})
				}
			}
		}
		require.NotEmpty(t, points, "%v: no point where the rounding differs", p)
		clock := sluicetest.NewManualClock(storetest.Epoch)
		mem, red := memoryFactory(t, clock), redisFactory(c)(t, clock)
		for i, pt := range points {
			key := fmt.Sprintf("k%d", i)
			clock.Set(storetest.Epoch)
			for _, s := range []core.Store{mem, red} {
				_, err := s.Take(ctx, core.Request{Key: key, Policy: p, Cost: pt.prev})
				require.NoError(t, err)
			}
			clock.Set(storetest.Epoch.Add(shape.period + time.Duration(pt.elapsed)*time.Microsecond))
			want, err := mem.Adjust(ctx, core.Request{Key: key, Policy: p, Cost: 0})
			require.NoError(t, err)
			got, err := red.Adjust(ctx, core.Request{Key: key, Policy: p, Cost: 0})
			require.NoError(t, err)
			require.Equal(t, want, got, "%v: prev %d at %dµs", p, pt.prev, pt.elapsed)
			want, err = mem.Take(ctx, core.Request{Key: key, Policy: p, Cost: 1})
			require.NoError(t, err)
			got, err = red.Take(ctx, core.Request{Key: key, Policy: p, Cost: 1})
			require.NoError(t, err)
			require.Equal(t, want, got, "%v: prev %d at %dµs", p, pt.prev, pt.elapsed)
		}
	}
}

// TestTTL checks that every key expires when its state is back to full, is
// deleted when it already is, and that the sliding log stays bounded.
func TestTTL(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	for _, alg := range allAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			clock := sluicetest.NewManualClock(storetest.Epoch.Add(1234 * time.Millisecond))
			s := newTestStore(t, c, WithClock(clock), WithTTLGrace(0))
			p := tenPer10s(alg, "ttl")
			key := s.Key("k", p)

			d, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 3})
			require.NoError(t, err)
			require.True(t, d.Allowed)
			require.Positive(t, d.ResetAfter)
			want := (d.ResetAfter + time.Millisecond - 1).Truncate(time.Millisecond)
			ttl, err := c.PTTL(ctx, key).Result()
			require.NoError(t, err)
			assert.LessOrEqual(t, ttl, want, "TTL at most the time until full")
			assert.Greater(t, ttl, want-time.Second, "TTL about the time until full, got %v for %v", ttl, d.ResetAfter)

			// Full again: the key goes at once.
			d, err = s.Adjust(ctx, core.Request{Key: "k", Policy: p, Cost: -100})
			require.NoError(t, err)
			assert.Equal(t, p.Burst(), d.Remaining)
			assert.Zero(t, d.ResetAfter)
			n, err := c.Exists(ctx, key).Result()
			require.NoError(t, err)
			assert.Zero(t, n, "a full state is deleted")

			// A denial writes nothing.
			_, err = s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 11})
			require.NoError(t, err)
			n, err = c.Exists(ctx, key).Result()
			require.NoError(t, err)
			assert.Zero(t, n, "an impossible request writes nothing")
		})
	}

	t.Run("sliding-log-bounded", func(t *testing.T) {
		clock := sluicetest.NewManualClock(storetest.Epoch)
		s := newTestStore(t, c, WithClock(clock), WithTTLGrace(0))
		p := core.MustPolicy(core.PolicyConfig{Name: "log", Algorithm: core.SlidingLog, Quota: 5, Period: time.Minute})
		key := s.Key("k", p)
		for range 40 {
			clock.Advance(time.Millisecond)
			_, err := s.Adjust(ctx, core.Request{Key: "k", Policy: p, Cost: 2})
			require.NoError(t, err)
			_, err = s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
			require.NoError(t, err)
		}
		n, err := c.LLen(ctx, key).Result()
		require.NoError(t, err)
		assert.Equal(t, int64(5+1), n, "at most Quota entries, plus the total")
		ttl, err := c.PTTL(ctx, key).Result()
		require.NoError(t, err)
		assert.InDelta(t, float64(time.Minute), float64(ttl), float64(time.Second), "newest entry + period")

		clock.Advance(time.Minute)
		d, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
		require.NoError(t, err)
		assert.True(t, d.Allowed)
		n, err = c.LLen(ctx, key).Result()
		require.NoError(t, err)
		assert.Equal(t, int64(1+1), n, "trimmed on every call")
	})

	t.Run("caller-clock-grace", func(t *testing.T) {
		clock := sluicetest.NewManualClock(storetest.Epoch)
		s := newTestStore(t, c, WithClock(clock))
		p := tenPer10s(core.GCRA, "grace")
		_, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
		require.NoError(t, err)
		ttl, err := c.PTTL(ctx, s.Key("k", p)).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, DefaultClockGrace, "one interval plus the grace")
		assert.LessOrEqual(t, ttl, DefaultClockGrace+time.Second)
	})
}

// TestServerTime checks the default: time from the server's TIME, so that
// stores on several instances agree whatever their own clocks say.
func TestServerTime(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	prefix := testPrefix(t, c)
	a, err := New(c, WithPrefix(prefix), WithTimeout(testTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	b, err := New(sharedClient(t), WithPrefix(prefix), WithTimeout(testTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	p := core.MustPolicy(core.PolicyConfig{Name: "server-time", Algorithm: core.GCRA, Quota: 1, Period: time.Hour, Burst: 10})

	d, err := a.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 4})
	require.NoError(t, err)
	require.True(t, d.Allowed)
	assert.Equal(t, int64(6), d.Remaining)
	assert.Equal(t, 4*time.Hour, d.ResetAfter, "the TAT is 4 intervals past the server's now")

	d, err = b.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 7})
	require.NoError(t, err)
	require.False(t, d.Allowed, "the other instance sees the same state")
	assert.Equal(t, int64(6), d.Remaining)
	assert.InDelta(t, float64(time.Hour), float64(d.RetryAfter), float64(5*time.Second))
	assert.InDelta(t, float64(4*time.Hour), float64(d.ResetAfter), float64(5*time.Second))

	ttl, err := c.PTTL(ctx, a.Key("k", p)).Result()
	require.NoError(t, err)
	assert.InDelta(t, float64(4*time.Hour), float64(ttl), float64(5*time.Second), "no grace on the server's clock")

	// The window algorithms align to the server's epoch time.
	w := core.MustPolicy(core.PolicyConfig{Name: "server-window", Algorithm: core.FixedWindow, Quota: 5, Period: time.Hour})
	d, err = a.Take(ctx, core.Request{Key: "k", Policy: w, Cost: 1})
	require.NoError(t, err)
	serverNow, err := c.Time(ctx).Result()
	require.NoError(t, err)
	end := serverNow.Truncate(time.Hour).Add(time.Hour)
	assert.InDelta(t, float64(end.Sub(serverNow)), float64(d.ResetAfter), float64(5*time.Second))
}
