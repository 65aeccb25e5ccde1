package redisstore

import (
	"context"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/storekit"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// TestCrossInstance: four separate clients, as four app instances would
// have, sixteen goroutines each, hammer one key on the server's clock. The
// exact algorithms admit exactly the quota; the sliding counter stays within
// its documented bound (no window boundary falls in the test, so that bound
// is the quota too).
func TestCrossInstance(t *testing.T) {
	sharedClient(t) // skip (or fail in CI) early
	const instances, goroutines, tries, quota = 4, 16, 8, 300
	clients := make([]*goredis.Client, instances)
	for i := range clients {
		clients[i] = goredis.NewClient(clientOptions(redisAddr()))
		t.Cleanup(func() { _ = clients[i].Close() })
	}
	prefix := testPrefix(t, clients[0])
	stores := make([]*Store, instances)
	for i, c := range clients {
		s, err := New(c, WithPrefix(prefix), WithTimeout(testTimeout))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	// Periods long enough that nothing refills and no window ends while the
	// test runs (window boundaries are multiples of the period since 1970).
	policies := []*core.Policy{
		core.MustPolicy(core.PolicyConfig{Name: "x-tb", Algorithm: core.TokenBucket, Quota: 1, Period: 24 * time.Hour, Burst: quota}),
		core.MustPolicy(core.PolicyConfig{Name: "x-gcra", Algorithm: core.GCRA, Quota: 1, Period: 24 * time.Hour, Burst: quota}),
		core.MustPolicy(core.PolicyConfig{Name: "x-leaky", Algorithm: core.LeakyBucket, Quota: 1, Period: 24 * time.Hour, Burst: quota}),
		core.MustPolicy(core.PolicyConfig{Name: "x-fixed", Algorithm: core.FixedWindow, Quota: quota, Period: storekit.MaxPeriod}),
		core.MustPolicy(core.PolicyConfig{Name: "x-log", Algorithm: core.SlidingLog, Quota: quota, Period: time.Hour}),
		core.MustPolicy(core.PolicyConfig{Name: "x-counter", Algorithm: core.SlidingCounter, Quota: quota, Period: storekit.MaxPeriod}),
	}
	for _, p := range policies {
		t.Run(p.Algorithm().String(), func(t *testing.T) {
			var admitted, denied atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for _, s := range stores {
				for range goroutines {
					wg.Go(func() {
						<-start
						for range tries {
							d, err := s.Take(context.Background(), core.Request{Key: "hot", Policy: p, Cost: 1})
							if !assert.NoError(t, err) {
								return
							}
							if d.Allowed {
								admitted.Add(1)
							} else {
								denied.Add(1)
							}
						}
					})
				}
			}
			close(start)
			wg.Wait()
			require.Equal(t, int64(instances*goroutines*tries), admitted.Load()+denied.Load())
			if p.Algorithm() == core.SlidingCounter {
				assert.LessOrEqual(t, admitted.Load(), int64(quota), "within the bound")
				assert.GreaterOrEqual(t, admitted.Load(), int64(quota))
			} else {
				assert.Equal(t, int64(quota), admitted.Load(), "exactly the quota")
			}
		})
	}

	// Across a window boundary the sliding counter lets more through as the
	// previous window ages: a burst of Quota just before the boundary, then
	// another hammering at elapsed e into the next window, stays within
	// Quota×(1 + e/Period) in the trailing Period.
	t.Run("sliding-counter-boundary", func(t *testing.T) {
		const period = 10 * time.Second
		p := core.MustPolicy(core.PolicyConfig{Name: "x-counter-b", Algorithm: core.SlidingCounter, Quota: quota, Period: period})
		clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Add(period - time.Millisecond))
		boundaryStores := make([]*Store, instances)
		for i, c := range clients {
			s, err := New(c, WithPrefix(prefix), WithTimeout(testTimeout), WithClock(clock))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			boundaryStores[i] = s
		}
		hammer := func() int64 {
			var admitted atomic.Int64
			var wg sync.WaitGroup
			for _, s := range boundaryStores {
				for range goroutines {
					wg.Go(func() {
						for range tries {
							d, err := s.Take(context.Background(), core.Request{Key: "hot", Policy: p, Cost: 1})
							if assert.NoError(t, err) && d.Allowed {
								admitted.Add(1)
							}
						}
					})
				}
			}
			wg.Wait()
			return admitted.Load()
		}
		require.Equal(t, int64(quota), hammer(), "the first burst")
		elapsed := 3 * time.Second
		clock.Advance(time.Millisecond + elapsed)
		second := hammer()
		bound := float64(quota) * (1 + float64(elapsed)/float64(period))
		assert.LessOrEqual(t, float64(quota+second), bound+1, "within Quota×(1 + e/Period)")
		// Exactly what the estimate leaves: Quota − floor(Quota×(P−e)/P).
		assert.Equal(t, int64(quota)-int64(float64(quota)*float64(period-elapsed)/float64(period)), second)
	})
}
