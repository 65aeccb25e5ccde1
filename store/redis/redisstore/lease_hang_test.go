package redisstore

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// TestLeaseHungRedis: while Redis hangs (SIGSTOP, not a kill), every caller
// of a leased policy gets the lease's answer, the many that wait for
// another's lease fetch as much as the one making it: four instances of
// sixteen goroutines each, holding nothing, with limiters given no failure mode,
// admit nothing while Redis is stopped and no more than the limit over the
// whole run (the bound WithLease states: the limit over the span plus what
// the instances held at its start, here nothing).
func TestLeaseHungRedis(t *testing.T) {
	srv := startServer(t)
	c := goredis.NewClient(clientOptions(srv.addr()))
	t.Cleanup(func() { _ = c.Close() })
	p := core.MustPolicy(core.PolicyConfig{Name: "hung", Algorithm: core.TokenBucket, Quota: 20, Period: time.Hour, Burst: 20})
	const instances, workers, size = 4, 16, 5
	limiters := make([]*core.Limiter, instances)
	for i := range limiters {
		s, err := New(c, WithPrefix("hung:"), WithLease(p, size, time.Second), WithTimeout(100*time.Millisecond))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		limiters[i], err = core.NewLimiter(s)
		require.NoError(t, err)
	}

	srv.signal(syscall.SIGSTOP)
	t.Cleanup(func() { _ = syscall.Kill(-srv.cmd.Process.Pid, syscall.SIGCONT) })
	var (
		stalled, admitted atomic.Int64 // admitted while stopped; in all
		decided           atomic.Int64 // decisions while stopped
		resumed           atomic.Bool
		fromRedis         [instances]atomic.Bool // a decision with figures since SIGCONT
		stop              = make(chan struct{})
		wg                sync.WaitGroup
	)
	ctx := context.Background()
	for i, l := range limiters {
		for range workers {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					after := resumed.Load()
					d, err := l.Take(ctx, core.Request{Key: "hot", Policy: p, Cost: 1})
					if !assert.NoError(t, err) {
						return
					}
					// Decided while Redis was stopped: before SIGCONT was sent.
					during := !after && !resumed.Load()
					if during {
						decided.Add(1)
					}
					if d.Allowed {
						admitted.Add(1)
						if during {
							stalled.Add(1)
						}
					}
					if after && d.Limit > 0 {
						fromRedis[i].Store(true)
					}
				}
			})
		}
	}
	// A layered request and one the lease cannot decide get the lease's
	// answer too.
	stopped := time.Now()
	other := core.MustPolicy(core.PolicyConfig{Name: "hung-other", Algorithm: core.TokenBucket, Quota: 10, Period: time.Second, Burst: 10})
	d, err := limiters[0].TakeAll(ctx, []core.Request{{Key: "hot", Policy: p, Cost: 1}, {Key: "hot", Policy: other, Cost: 1}}, make([]core.Decision, 2))
	require.NoError(t, err)
	assert.False(t, d.Allowed, "a layered request with a leased layer, while Redis is stopped")
	d, err = limiters[0].Take(ctx, core.Request{Key: "hot", Policy: p, Cost: p.Burst() + 1})
	require.NoError(t, err)
	assert.False(t, d.Allowed, "a cost above the burst, while Redis is stopped")
	time.Sleep(time.Second - time.Since(stopped)) // the stall itself, not a wait for anything
	resumed.Store(true)
	srv.signal(syscall.SIGCONT)
	back := func() bool {
		for i := range fromRedis {
			if !fromRedis[i].Load() {
				return false
			}
		}
		return true
	}
	assert.Eventually(t, back, 30*time.Second, 10*time.Millisecond, "every instance decides from Redis again")
	close(stop)
	wg.Wait()

	t.Logf("%d decisions while Redis was stopped, %d allowed; %d admitted in all on a limit of %d", decided.Load(), stalled.Load(), admitted.Load(), p.Burst())
	assert.Positive(t, decided.Load(), "callers were answered while Redis was stopped")
	assert.Zero(t, stalled.Load(), "nothing held, nothing spent while Redis is stopped: the lease's answer, not fail-open")
	assert.LessOrEqual(t, admitted.Load(), p.Burst(), "the fleet admits at most the limit plus what it held at the start (nothing)")
	assert.Positive(t, admitted.Load(), "leases resume after SIGCONT")
}
