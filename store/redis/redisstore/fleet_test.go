package redisstore

import (
	"context"
	"github.com/sluice-go/sluice/sluicetest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/storetest"
)

// TestFleetOutageBound runs four instances on one Redis, each a Limiter
// with a memory fallback applying a quarter of the limit
// (core.WithFallback(4)), and hammers one key from all of them while
// the server is killed and restarted, then stopped and resumed. The clocks
// do not move, so every figure is exact: the fleet admits exactly the limit
// while Redis is up, at most four quarters of it while Redis is down (the
// bound WithFallback states), and exactly what Redis allows again once
// it is back.
func TestFleetOutageBound(t *testing.T) {
	const (
		instances = 4
		workers   = 4 // goroutines per instance
		burst     = 100
		deadline  = 100 * time.Millisecond
	)
	srv := startServer(t)
	p := core.MustPolicy(core.PolicyConfig{Name: "fleet", Algorithm: core.TokenBucket, Quota: 1, Period: time.Hour, Burst: burst})
	share, err := p.Share(instances)
	require.NoError(t, err)
	bound := int64(instances) * share.Burst() // no refill: the clocks stand still
	require.Equal(t, int64(burst), bound)

	redisClock := sluicetest.NewManualClock(storetest.Epoch)
	localClock := sluicetest.NewManualClock(storetest.Epoch)
	limiters := make([]*core.Limiter, instances)
	var failures, seen atomic.Int64 // store failures: in the phase, in all
	for i := range limiters {
		c := goredis.NewClient(clientOptions(srv.addr()))
		t.Cleanup(func() { _ = c.Close() })
		s, err := New(c, WithPrefix("fleet:"), WithClock(redisClock), WithTimeout(deadline))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		local, err := memory.New(memory.WithClock(localClock))
		require.NoError(t, err)
		t.Cleanup(func() { _ = local.Close() })
		limiters[i], err = core.NewLimiter(s, core.WithFallback(local, instances),
			core.WithObserver(func(_ context.Context, e core.Event) {
				if e.Kind == core.StoreFailed {
					failures.Add(1)
					seen.Add(1)
				}
			}))
		require.NoError(t, err)
	}

	// hammer sends requests from every instance until each worker has seen
	// a denial of the kind wanted, and counts the admitted ones by kind.
	type tally struct{ fromRedis, fromFallback, deniedRedis, deniedFallback atomic.Int64 }
	hammer := func(degraded bool) *tally {
		var n tally
		var wg sync.WaitGroup
		for _, l := range limiters {
			for range workers {
				wg.Go(func() {
					for range 10_000 {
						d, err := l.Take(context.Background(), core.Request{Key: "hot", Policy: p, Cost: 1})
						if !assert.NoError(t, err) {
							return
						}
						switch {
						case d.Allowed && d.Degraded:
							n.fromFallback.Add(1)
						case d.Allowed:
							n.fromRedis.Add(1)
						case d.Degraded:
							n.deniedFallback.Add(1)
						default:
							n.deniedRedis.Add(1)
						}
						if !d.Allowed && d.Degraded == degraded {
							return
						}
					}
					t.Errorf("no denial in 10,000 requests")
				})
			}
		}
		wg.Wait()
		return &n
	}

	// exact holds a phase with Redis up to exactly the limit. A machine
	// stalled past the deadline makes a call fail while Redis is up: the
	// fallback decides it, and the call may still have charged Redis (as
	// WithTimeout says), so each such failure may cost Redis one admission.
	exact := func(phase string, n *tally, failed int64) {
		t.Helper()
		if failed == 0 {
			assert.Equal(t, int64(burst), n.fromRedis.Load(), "%s: exactly the limit", phase)
			assert.Zero(t, n.fromFallback.Load(), "%s: nothing from the fallbacks", phase)
			return
		}
		t.Logf("%s: %d calls past the deadline on a stalled machine", phase, failed)
		assert.LessOrEqual(t, n.fromRedis.Load(), int64(burst), phase)
		assert.GreaterOrEqual(t, n.fromRedis.Load(), int64(burst)-failed, phase)
		assert.LessOrEqual(t, n.fromFallback.Load(), failed, phase)
	}

	up := hammer(false)
	exact("while Redis is up", up, failures.Swap(0))

	srv.kill()
	dead := hammer(true)
	t.Logf("Redis killed: %d admitted by the fallbacks (bound %d), %d denied by them", dead.fromFallback.Load(), bound, dead.deniedFallback.Load())
	assert.LessOrEqual(t, dead.fromFallback.Load(), bound, "while Redis is dead: at most the stated bound")
	assert.Zero(t, dead.fromRedis.Load())

	srv.start() // a fresh server: the state is gone
	require.Eventually(t, func() bool {
		d, err := limiters[0].Take(context.Background(), core.Request{Key: "probe", Policy: p, Cost: 1})
		return err == nil && !d.Degraded
	}, 30*time.Second, 5*time.Millisecond)
	failures.Store(0)
	back := hammer(false)
	t.Logf("back: redis %d fallback %d denied redis %d denied fallback %d", back.fromRedis.Load(), back.fromFallback.Load(), back.deniedRedis.Load(), back.deniedFallback.Load())
	exact("once Redis is back", back, failures.Swap(0))

	localClock.Advance(time.Hour * burst) // the fallbacks refill: a second outage, later
	srv.signal(syscall.SIGSTOP)
	t.Cleanup(func() { _ = syscall.Kill(-srv.cmd.Process.Pid, syscall.SIGCONT) })
	hung := hammer(true)
	t.Logf("Redis stopped: %d admitted by the fallbacks (bound %d), %d denied by them", hung.fromFallback.Load(), bound, hung.deniedFallback.Load())
	assert.LessOrEqual(t, hung.fromFallback.Load(), bound, "while Redis hangs: at most the stated bound")
	srv.signal(syscall.SIGCONT)

	require.Eventually(t, func() bool {
		d, err := limiters[0].Take(context.Background(), core.Request{Key: "probe", Policy: p, Cost: 1})
		return err == nil && !d.Degraded
	}, 30*time.Second, 5*time.Millisecond)
	resumed := hammer(false)
	assert.Zero(t, resumed.fromRedis.Load(), "once Redis resumes: exact again, and the limit was spent before the stop")
	assert.Positive(t, seen.Load(), "the observers saw the outages")
}
