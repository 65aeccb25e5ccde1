package redis

import (
	"context"
	"errors"
	"fmt"
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
)

// overshootMargin is how far past its deadline a call may end: scheduling
// on a busy machine under -race, not waiting on Redis.
const overshootMargin = 50 * time.Millisecond

// latest is the latest a call with the store deadline d may end: a call's
// deadline is between d and 17/16 of it (see deadlines), plus the margin.
func latest(d time.Duration) time.Duration { return d + d/16 + overshootMargin }

// TestOutage runs load through three Limiters on one Redis store (fail
// open, fail closed, fall back to memory) while a private redis-server is
// killed and restarted, then stopped (SIGSTOP: a hung server) and resumed.
// No call may outlive the deadline by more than the margin, every decision
// must follow its limiter's policy, the observer must see every store
// error, and the store must recover by itself.
func TestOutage(t *testing.T) {
	srv := startServer(t)
	opts := clientOptions(srv.addr())
	opts.PoolSize = 16
	c := goredis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	const deadline = 100 * time.Millisecond
	store, err := New(c, WithPrefix("outage:"), WithTimeout(deadline))
	require.NoError(t, err)
	fallback, err := memory.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = fallback.Close() })
	// Generous enough that every healthy decision allows.
	p := core.MustPolicy(core.Config{Name: "outage", Algorithm: core.GCRA, Quota: 1_000_000, Period: time.Second, Burst: 1_000_000})

	type mode struct {
		name     string
		limiter  *core.Limiter
		degraded func(core.Decision) bool // whether d follows the policy
		failures atomic.Int64             // store errors the observer saw
		// counted by the load
		healthy, degradedN, wrong atomic.Int64
		healthyInOutage           atomic.Int64
		maxLatency                atomic.Int64
	}
	modes := []*mode{
		{name: "fail-open", degraded: func(d core.Decision) bool { return d.Allowed && d.Limit == 0 }},
		{name: "fail-closed", degraded: func(d core.Decision) bool { return !d.Allowed && d.RetryAfter == time.Second }},
		{name: "fallback", degraded: func(d core.Decision) bool { return d.Allowed && d.Limit == p.Burst() && d.Remaining > 0 }},
	}
	for _, m := range modes {
		observe := core.WithObserver(func(_ context.Context, e core.Event) {
			if e.Outcome == core.StoreFailed {
				var se *core.StoreError
				if assert.ErrorAs(t, e.Err, &se) {
					assert.Equal(t, "take", se.Op)
				}
				m.failures.Add(1)
			}
		})
		var opt core.Option
		switch m.name {
		case "fail-open":
			opt = core.WithFailureMode(core.FailOpen)
		case "fail-closed":
			opt = core.WithFailureMode(core.FailClosed)
		default:
			opt = core.WithFallback(fallback)
		}
		m.limiter, err = core.NewLimiter(store, opt, observe)
		require.NoError(t, err)
	}

	var outage atomic.Bool // set a little after a kill or stop, cleared at recovery
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, m := range modes {
		for g := range 3 {
			wg.Go(func() {
				key := fmt.Sprintf("%s-%d", m.name, g)
				for {
					select {
					case <-stop:
						return
					default:
					}
					inOutage := outage.Load()
					start := time.Now()
					d, err := m.limiter.Take(context.Background(), key, p, 1)
					lat := time.Since(start)
					if !assert.NoError(t, err) {
						return
					}
					for {
						old := m.maxLatency.Load()
						if int64(lat) <= old || m.maxLatency.CompareAndSwap(old, int64(lat)) {
							break
						}
					}
					switch {
					case !d.Degraded && d.Allowed && d.Limit == p.Burst():
						m.healthy.Add(1)
						if inOutage {
							m.healthyInOutage.Add(1)
						}
					case d.Degraded && m.degraded(d):
						m.degradedN.Add(1)
					default:
						m.wrong.Add(1)
						t.Errorf("%s: unexpected decision %+v", m.name, d)
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
	}
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	})

	// waitHealthy waits until every mode has made a healthy decision anew.
	waitHealthy := func(what string) time.Duration {
		t.Helper()
		start := time.Now()
		base := make([]int64, len(modes))
		for i, m := range modes {
			base[i] = m.healthy.Load()
		}
		for {
			done := true
			for i, m := range modes {
				if m.healthy.Load() == base[i] {
					done = false
				}
			}
			if done {
				return time.Since(start)
			}
			if time.Since(start) > 15*time.Second {
				t.Fatalf("the store did not recover after %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	degradedSoFar := func() []int64 {
		n := make([]int64, len(modes))
		for i, m := range modes {
			n[i] = m.degradedN.Load()
		}
		return n
	}

	waitHealthy("start")
	time.Sleep(100 * time.Millisecond)

	// A dead server.
	before := degradedSoFar()
	srv.kill()
	time.Sleep(20 * time.Millisecond)
	outage.Store(true)
	time.Sleep(500 * time.Millisecond)
	outage.Store(false)
	for i, m := range modes {
		assert.Greater(t, m.degradedN.Load(), before[i], "%s: degraded while the server is dead", m.name)
	}
	srv.start()
	t.Logf("recovered %v after the restart", waitHealthy("the restart"))

	// A hung server.
	before = degradedSoFar()
	srv.signal(syscall.SIGSTOP)
	time.Sleep(20 * time.Millisecond)
	outage.Store(true)
	time.Sleep(500 * time.Millisecond)
	outage.Store(false)
	for i, m := range modes {
		assert.Greater(t, m.degradedN.Load(), before[i], "%s: degraded while the server hangs", m.name)
	}
	srv.signal(syscall.SIGCONT)
	t.Logf("recovered %v after SIGCONT", waitHealthy("SIGCONT"))
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()

	for _, m := range modes {
		maxLat := time.Duration(m.maxLatency.Load())
		t.Logf("%s: %d healthy, %d degraded decisions; slowest call %v (timeout %v; its deadline at most %v; past that: %v)",
			m.name, m.healthy.Load(), m.degradedN.Load(), maxLat, deadline, deadline+deadline/16, max(maxLat-deadline-deadline/16, 0))
		assert.Zero(t, m.wrong.Load(), m.name)
		assert.Zero(t, m.healthyInOutage.Load(), "%s: no healthy decision from a dead or hung server", m.name)
		assert.Equal(t, m.degradedN.Load(), m.failures.Load(), "%s: the observer saw every store error", m.name)
		assert.LessOrEqual(t, maxLat, latest(deadline), "%s: no call outlives the deadline", m.name)
	}
}

// TestDeadlineWithoutContextTimeouts: a client left with go-redis's default
// ContextTimeoutEnabled false ignores context deadlines on its sockets; the
// store then holds each call to its deadline itself. Every operation fails
// with a *core.StoreError naming it, in time, while the server hangs.
func TestDeadlineWithoutContextTimeouts(t *testing.T) {
	srv := startServer(t)
	c := goredis.NewClient(&goredis.Options{Addr: srv.addr(), ReadTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	const deadline = 100 * time.Millisecond
	s, err := New(c, WithPrefix("stopped:"), WithTimeout(deadline))
	require.NoError(t, err)
	_, bounded := s.sc.(boundedScripter)
	require.True(t, bounded, "the store watches the deadline itself")
	p := core.MustPolicy(core.Config{Name: "stopped", Algorithm: core.TokenBucket, Quota: 1, Period: time.Second, Burst: 10})
	ctx := context.Background()
	_, err = s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
	require.NoError(t, err)

	srv.signal(syscall.SIGSTOP)
	t.Cleanup(func() { _ = syscall.Kill(-srv.cmd.Process.Pid, syscall.SIGCONT) })
	ops := map[string]func() error{
		"take": func() error {
			_, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
			return err
		},
		"take-all": func() error {
			return s.TakeAll(ctx, []core.Request{{Key: "k", Policy: p, Cost: 1}, {Key: "j", Policy: p, Cost: 1}}, make([]core.Decision, 2))
		},
		"adjust": func() error {
			_, err := s.Adjust(ctx, core.Request{Key: "k", Policy: p, Cost: -1})
			return err
		},
		"reset": func() error { return s.Reset(ctx, "k", p) },
	}
	for op, f := range ops {
		start := time.Now()
		err := f()
		took := time.Since(start)
		var se *core.StoreError
		require.ErrorAs(t, err, &se, op)
		assert.Equal(t, op, se.Op)
		assert.ErrorIs(t, err, context.DeadlineExceeded, op)
		assert.GreaterOrEqual(t, took, deadline-time.Millisecond, op)
		assert.LessOrEqual(t, took, latest(deadline), "%s took %v", op, took)
	}
	srv.signal(syscall.SIGCONT)
	// The abandoned calls end when the server answers; the store recovers.
	require.Eventually(t, func() bool {
		_, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
}

// TestUnreachable: a store whose Redis is not there fails fast with a
// *core.StoreError, never a panic or a hang.
func TestUnreachable(t *testing.T) {
	c := goredis.NewClient(clientOptions(fmt.Sprintf("127.0.0.1:%d", freePort(t))))
	t.Cleanup(func() { _ = c.Close() })
	s, err := New(c, WithTimeout(100*time.Millisecond))
	require.NoError(t, err)
	p := core.MustPolicy(core.Config{Name: "gone", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 10})
	start := time.Now()
	_, err = s.Take(context.Background(), core.Request{Key: "k", Policy: p, Cost: 1})
	var se *core.StoreError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "take", se.Op)
	assert.Less(t, time.Since(start), latest(100*time.Millisecond))
	// Malformed requests are still the caller's error, not the store's.
	_, err = s.Take(context.Background(), core.Request{Key: "k", Policy: p})
	assert.ErrorIs(t, err, core.ErrInvalidCost)
	assert.False(t, errors.As(err, &se))
}
