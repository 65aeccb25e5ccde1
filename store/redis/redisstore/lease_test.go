package redisstore

import (
	"context"
	"github.com/sluice-go/sluice/sluicetest"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storetest"
)

// events collects what an observer sees, by outcome. It counts only events
// that name their policy, as every event must (metrics are kept by policy):
// one without would show as a count short.
type events struct {
	mu    sync.Mutex
	units map[core.Kind]int64
	n     map[core.Kind]int
}

func (e *events) observe(_ context.Context, ev core.Event) {
	if ev.Decision.Policy == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.units == nil {
		e.units, e.n = map[core.Kind]int64{}, map[core.Kind]int{}
	}
	e.units[ev.Kind] += ev.Units
	e.n[ev.Kind]++
}

func (e *events) count(o core.Kind) (int, int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[o], e.units[o]
}

func TestLeaseOptions(t *testing.T) {
	c := goredis.NewClient(clientOptions(redisAddr()))
	defer c.Close()
	for _, bad := range []Option{WithLease(nil, 1, time.Second), WithLease(global, 0, time.Second),
		WithLease(global, 101, time.Second), WithLease(global, 10, 0)} {
		_, err := New(c, bad)
		assert.Error(t, err)
	}
}

// TestLease: one instance spends a key's budget from leases of ten, with
// one round trip per lease, admits exactly the limit, then denies locally
// without a round trip; unspent units go back after the interval; the
// observer sees it all.
func TestLease(t *testing.T) {
	c := sharedClient(t)
	clock := sluicetest.NewManualClock(storetest.Epoch)
	s := newTestStore(t, c, WithClock(clock), WithLease(global, 10, time.Second))
	n := hook(s)
	var seen events
	l, err := core.NewLimiter(s, core.WithObserver(seen.observe))
	require.NoError(t, err)
	ctx := context.Background()

	admitted := 0
	for i := range 130 {
		d, err := l.Take(ctx, core.Request{Key: "hot", Policy: global, Cost: 1})
		require.NoError(t, err)
		if d.Allowed {
			admitted++
			assert.Equal(t, int64(100-admitted), d.Remaining, "request %d: Redis's figure and what the lease holds", i)
		} else {
			assert.Positive(t, d.RetryAfter)
		}
	}
	assert.Equal(t, 100, admitted)
	assert.Equal(t, int64(11), n.roundTrips(), "ten leases and the one denied; the rest decided locally")
	taken, units := seen.count(core.LeaseTaken)
	assert.Equal(t, 10, taken)
	assert.Equal(t, int64(100), units)

	// A fresh key: a lease of ten, three spent; after the interval the
	// seven go back to Redis.
	for range 3 {
		d, err := l.Take(ctx, core.Request{Key: "cool", Policy: global, Cost: 1})
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	raw, err := c.Get(ctx, s.Key("cool", global)).Result()
	require.NoError(t, err)
	assert.Regexp(t, `^90:`, raw, "leased ten")
	clock.Advance(time.Second)
	s.leases.expire()
	raw, err = c.Get(ctx, s.Key("cool", global)).Result()
	require.NoError(t, err)
	assert.Regexp(t, `^97:`, raw, "seven given back")
	returned, units := seen.count(core.LeaseReturned)
	assert.Equal(t, 1, returned)
	assert.Equal(t, int64(7), units)

	// Reset forgets the lease too.
	require.NoError(t, s.Reset(ctx, "hot", global))
	d, err := l.Take(ctx, core.Request{Key: "hot", Policy: global, Cost: 1})
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(99), d.Remaining)
}

// TestLeasesAcrossInstances: four instances leasing one key admit exactly
// the limit between them, never more; units one holds go back at the
// interval and the others spend them.
func TestLeasesAcrossInstances(t *testing.T) {
	c := sharedClient(t)
	clock := sluicetest.NewManualClock(storetest.Epoch)
	prefix := testPrefix(t, c)
	const instances, workers = 4, 4
	stores := make([]*Store, instances)
	for i := range stores {
		s, err := New(c, WithPrefix(prefix), WithClock(clock), WithLease(global, 9, time.Second), WithTimeout(testTimeout))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	ctx := context.Background()
	hammer := func() int64 {
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for _, s := range stores {
			for range workers {
				wg.Go(func() {
					for range 60 {
						d, err := s.Take(ctx, core.Request{Key: "hot", Policy: global, Cost: 1})
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
	first := hammer()
	assert.LessOrEqual(t, first, int64(100), "never more than the limit")
	assert.GreaterOrEqual(t, first, int64(100-(instances-1)*9), "what others hold is at most (instances−1)×size")
	clock.Advance(2 * time.Second) // past the interval; a unit an hour refills nothing
	for _, s := range stores {
		s.leases.expire()
	}
	assert.Equal(t, int64(100), first+hammer(), "what was held went back and was spent: exactly the limit")
}

// TestLeaseOutage: while Redis is down an instance spends only what its
// lease holds, then denies without figures; the observer sees the failure.
func TestLeaseOutage(t *testing.T) {
	srv := startServer(t)
	c := goredis.NewClient(clientOptions(srv.addr()))
	t.Cleanup(func() { _ = c.Close() })
	s, err := New(c, WithLease(global, 10, time.Hour), WithTimeout(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	var seen events
	l, err := core.NewLimiter(s, core.WithObserver(seen.observe))
	require.NoError(t, err)
	ctx := context.Background()
	d, err := l.Take(ctx, core.Request{Key: "hot", Policy: global, Cost: 1})
	require.NoError(t, err)
	require.True(t, d.Allowed, "leased ten, spent one")

	srv.kill()
	admitted := 0
	for range 30 {
		d, err := l.Take(ctx, core.Request{Key: "hot", Policy: global, Cost: 1})
		require.NoError(t, err)
		if d.Allowed {
			admitted++
		} else {
			assert.True(t, d.Degraded)
			assert.Zero(t, d.Limit, "no figures: the middleware answers 503")
		}
	}
	assert.Equal(t, 9, admitted, "the nine held, and not one more, whatever the limiter would do without the lease")
	failed, _ := seen.count(core.LeaseFailed)
	assert.Positive(t, failed)
}

// TestLeaseOvershoot measures what leasing costs against the limit on the
// server's clock: four instances hammer a key limited to 1000 a second with
// a burst of 100, leasing 20 at a time for 50ms. Over any window, the units
// admitted may exceed what the limit allows over that window by at most
// instances × size (the units held when the window opens), give or take
// the units a millisecond of clock skew moves.
func TestLeaseOvershoot(t *testing.T) {
	c := sharedClient(t)
	p := core.MustPolicy(core.PolicyConfig{Name: "overshoot", Algorithm: core.TokenBucket, Quota: 1000, Period: time.Second, Burst: 100})
	const instances, workers, size = 4, 4, 20
	prefix := testPrefix(t, c)
	stores := make([]*Store, instances)
	for i := range stores {
		s, err := New(c, WithPrefix(prefix), WithLease(p, size, 50*time.Millisecond), WithTimeout(testTimeout))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	ctx := context.Background()
	var mu sync.Mutex
	var at []time.Duration
	start := time.Now()
	var wg sync.WaitGroup
	for _, s := range stores {
		for range workers {
			wg.Go(func() {
				for time.Since(start) < 1500*time.Millisecond {
					d, err := s.Take(ctx, core.Request{Key: "hot", Policy: p, Cost: 1})
					if !assert.NoError(t, err) {
						return
					}
					if d.Allowed {
						mu.Lock()
						at = append(at, time.Since(start))
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
	worst := func(w time.Duration) (excess float64) {
		j := 0
		for i := range at {
			for at[i]-at[j] > w {
				j++
			}
			allowed := float64(p.Burst()) + 1000*w.Seconds()
			excess = max(excess, float64(i-j+1)-allowed)
		}
		return excess
	}
	bound := float64(instances*size) + 1000*0.002 // two ms of skew between Redis's clock and ours
	for _, w := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		e := worst(w)
		t.Logf("window %v: at most %.0f units over what the limit allows (bound %d = instances × size)", w, max(e, 0), instances*size)
		assert.LessOrEqual(t, e, bound, "window %v", w)
	}
	t.Logf("%d admitted in 1.5s against 1,600 the limit allows", len(at))
}
