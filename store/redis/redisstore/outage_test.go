package redisstore

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

// TestOutage runs load through four Limiters on one store (fail open, fail
// closed, fall back to memory, and the default: the store's Local store) while a private redis-server is killed and
// restarted, then stopped (SIGSTOP: a hung server) and resumed, five times
// each. Every decision must follow its limiter's policy, none may come from
// a server that is down, the observer must see every store error, no caller
// may wait past its deadline but for the machine's own lateness, and after
// each restart or resume decisions must come from Redis again within a
// second of it answering PING, and go on coming from it: once it is back,
// no call fails at once.
func TestOutage(t *testing.T) {
	srv := startServer(t)
	opts := clientOptions(srv.addr())
	c := goredis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	const deadline = 100 * time.Millisecond
	store, err := New(c, WithPrefix("outage:"), WithTimeout(deadline))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	fallback, err := memory.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = fallback.Close() })
	stalls := newStallMeter(t)
	// Generous enough that every healthy decision allows.
	p := core.MustPolicy(core.PolicyConfig{Name: "outage", Algorithm: core.GCRA, Quota: 1_000_000, Period: time.Second, Burst: 1_000_000})

	modes := []*outageMode{
		{name: "fail-open", opt: core.WithFailOpen(),
			degraded: func(d core.Decision) bool { return d.Allowed && d.Limit == 0 }},
		{name: "default", opt: func(*core.Limiter) error { return nil }, // the store's Local store, on the whole limit
			degraded: func(d core.Decision) bool { return d.Allowed && d.Limit == p.Burst() && d.Remaining > 0 }},
		{name: "fail-closed", opt: core.WithFailClosed(0),
			degraded: func(d core.Decision) bool { return !d.Allowed && d.RetryAfter == time.Second }},
		{name: "fallback", opt: core.WithFallback(fallback, 1),
			degraded: func(d core.Decision) bool { return d.Allowed && d.Limit == p.Burst() && d.Remaining > 0 }},
	}
	// upAt is when the store was last seen deciding from Redis again (ns),
	// 0 while the server is down: from then on, until the next kill or
	// stop, no call may fail at once (errDown), whatever round trip comes
	// back late.
	var upAt, fastWhileUp atomic.Int64
	for _, m := range modes {
		m.limiter, err = core.NewLimiter(store, m.opt, m.observer(t, &upAt, &fastWhileUp, stalls))
		require.NoError(t, err)
	}

	// outage is odd while the server is down: from just after it was killed
	// or stopped to just before it is started or resumed.
	var outage atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, m := range modes {
		for g := range 3 {
			wg.Go(func() { m.run(t, fmt.Sprintf("%s-%d", m.name, g), p, &outage, stop) })
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

	// recovered waits until every mode has made a healthy decision anew, and
	// returns when it saw the last of them.
	recovered := func(what string) time.Time {
		t.Helper()
		base := make([]int64, len(modes))
		for i, m := range modes {
			base[i] = m.healthy.Load()
		}
		for limit := time.Now().Add(30 * time.Second); ; {
			done := true
			for i, m := range modes {
				done = done && m.healthy.Load() > base[i]
			}
			if done {
				return time.Now()
			}
			if time.Now().After(limit) {
				t.Fatalf("the store did not recover after %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	// answering waits until the server answers PING, and returns when.
	answering := func() time.Time {
		for ping(srv.addr()) != nil {
			time.Sleep(time.Millisecond)
		}
		return time.Now()
	}
	degradedSoFar := func() []int64 {
		n := make([]int64, len(modes))
		for i, m := range modes {
			n[i] = m.degradedN.Load()
		}
		return n
	}
	down := func(what string, f func()) {
		t.Helper()
		before := degradedSoFar()
		upAt.Store(0)
		f()
		outage.Add(1)
		time.Sleep(3 * deadline) // callers meet the outage, and outlive their deadline in it
		// Long enough that every caller has met the outage.
		for limit := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			met := true
			for i, m := range modes {
				met = met && m.degradedN.Load() > before[i]+3
			}
			if met {
				break
			}
			if time.Now().After(limit) {
				t.Fatalf("no degraded decisions while %s", what)
			}
		}
	}

	// healthy holds the load on the recovered store a while: the round
	// trips the outage left on their way come back now, some late, and
	// must not put the store down again.
	healthy := func() {
		upAt.Store(time.Now().UnixNano())
		time.Sleep(5 * deadline)
	}

	recovered("start")
	var recoveries []time.Duration
	for cycle := range 5 {
		down("the server is dead", srv.kill)
		outage.Add(1)
		srv.start() // returns once the server answers PING
		pinged := time.Now()
		back := recovered("the restart").Sub(pinged)
		within(t, stalls, back, time.Second, fmt.Sprintf("cycle %d: recovery after a restart", cycle))
		recoveries = append(recoveries, back)
		healthy()

		down("the server hangs", func() { srv.signal(syscall.SIGSTOP) })
		outage.Add(1)
		srv.signal(syscall.SIGCONT)
		pinged = answering()
		back = recovered("SIGCONT").Sub(pinged)
		within(t, stalls, back, time.Second, fmt.Sprintf("cycle %d: recovery after SIGCONT", cycle))
		recoveries = append(recoveries, back)
		healthy()
	}
	close(stop)
	wg.Wait()

	t.Logf("from PING answered to decisions from Redis again (restart, resume, ×5): %v; worst scheduling delay seen: %v", recoveries, stalls.max())
	assert.Zero(t, fastWhileUp.Load(), "calls failed at once while Redis answered")
	for _, m := range modes {
		maxLat := time.Duration(m.maxLatency.Load())
		t.Logf("%s: %d healthy, %d degraded decisions; slowest call %v (deadline %v)",
			m.name, m.healthy.Load(), m.degradedN.Load(), maxLat, deadline+deadline/16)
		assert.Zero(t, m.wrong.Load(), m.name)
		assert.Zero(t, m.fromDown.Load(), "%s: no healthy decision from a dead or hung server", m.name)
		assert.Equal(t, m.degradedN.Load(), m.failures.Load(), "%s: the observer saw every store error", m.name)
		within(t, stalls, maxLat, deadline+deadline/16, m.name+": the slowest call")
	}
}

// outageMode is one of TestOutage's limiters, and what its load counted.
type outageMode struct {
	name     string
	opt      core.Option
	limiter  *core.Limiter
	degraded func(core.Decision) bool // whether d follows the policy
	failures atomic.Int64             // store errors the observer saw
	// counted by the load
	healthy, degradedN, wrong atomic.Int64
	fromDown                  atomic.Int64 // healthy decisions made while the server was down
	maxLatency                atomic.Int64
}

// observer checks and counts the store errors the limiter reports, and
// counts in fast those that failed at once though Redis had been answering
// a while (since upAt, ns; 0 while it is down).
func (m *outageMode) observer(t *testing.T, upAt, fast *atomic.Int64, stalls *stallMeter) core.Option {
	return core.WithObserver(func(_ context.Context, e core.Event) {
		if errors.Is(e.Err, errDown) {
			if at := upAt.Load(); at != 0 && time.Since(time.Unix(0, at)) > 50*time.Millisecond+2*stalls.max() {
				fast.Add(1)
			}
		}
		if e.Kind == core.StoreFailed {
			var se *core.StoreError
			if assert.ErrorAs(t, e.Err, &se) {
				assert.Equal(t, "take", se.Op)
			}
			m.failures.Add(1)
		}
	})
}

// run takes on key until stop is closed, counting each decision; outage is
// odd while the server is down.
func (m *outageMode) run(t *testing.T, key string, p *core.Policy, outage *atomic.Int64, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		before := outage.Load()
		start := time.Now()
		d, err := m.limiter.Take(context.Background(), core.Request{Key: key, Policy: p, Cost: 1})
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
			if before%2 == 1 && outage.Load() == before {
				m.fromDown.Add(1)
			}
		case d.Degraded && m.degraded(d):
			m.degradedN.Add(1)
		default:
			m.wrong.Add(1)
			t.Errorf("%s: unexpected decision %+v", m.name, d)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSlowRedis puts a delay line between the store and Redis adding 60% of
// the store's deadline to every reply. Once the store's connections are
// open, at least 95% of calls must meet their deadline, and the store must
// open no new connections: a call that misses its deadline leaves its
// connection to finish, rather than closing it and making the next call pay
// for a new one (dial, HELLO, CLIENT SETINFO) at this latency.
//
// The deadline is 500ms rather than the default 50ms so that a loaded test
// machine's scheduling delays stay small beside the margin; what is tested
// is the ratio.
func TestSlowRedis(t *testing.T) {
	c := sharedClient(t)
	px := startProxy(t, redisAddr())
	const deadline = 500 * time.Millisecond
	px.delay.Store(int64(deadline * 6 / 10))
	slow := goredis.NewClient(clientOptions(px.addr()))
	t.Cleanup(func() { _ = slow.Close() })
	s := newTestStore(t, slow, WithTimeout(deadline))
	// A unit an hour: what each key took is its TAT's distance from now.
	p := core.MustPolicy(core.PolicyConfig{Name: "slow", Algorithm: core.GCRA, Quota: 1, Period: time.Hour, Burst: 1_000_000})
	ctx := context.Background()

	run := func(prefix string, callers int, d time.Duration) (ok, failed int64) {
		var okN, failedN atomic.Int64
		var wg sync.WaitGroup
		end := time.Now().Add(d)
		for g := range callers {
			wg.Go(func() {
				for time.Now().Before(end) {
					_, err := s.Take(ctx, core.Request{Key: fmt.Sprint(prefix, g), Policy: p, Cost: 1})
					if err == nil {
						okN.Add(1)
					} else {
						failedN.Add(1)
					}
				}
			})
		}
		wg.Wait()
		return okN.Load(), failedN.Load()
	}
	run("warm", 16, 2*time.Second) // the connections this load needs open
	ok, failed := run("k", 16, 4*time.Second)
	calls := ok + failed
	t.Logf("%d calls at %v a reply against a %v deadline: %d met it (%.1f%%); %d connections opened in all (%.1f per 1,000 calls)",
		calls, deadline*6/10, deadline, ok, 100*float64(ok)/float64(calls), px.conns.Load(), 1000*float64(px.conns.Load())/float64(calls))
	assert.GreaterOrEqual(t, float64(ok), 0.95*float64(calls), "at least 95%% meet the deadline")
	assert.LessOrEqual(t, px.conns.Load(), int64(burstLanes*DefaultConns+1), "no connection is replaced: one per lane at most, and one to ping")

	// What Redis counted: every call reported allowed, and some of those
	// that missed their deadline but reached Redis anyway; nothing more.
	var taken int64
	now, err := c.Time(ctx).Result()
	require.NoError(t, err)
	for g := range 16 {
		tat, err := c.Get(ctx, s.Key(fmt.Sprint("k", g), p)).Int64()
		require.NoError(t, err)
		interval := p.Interval().Microseconds()
		taken += (tat - now.UnixMicro() + interval/2) / interval
	}
	t.Logf("Redis took %d units: the %d calls that met their deadline and %d of the %d that missed it", taken, ok, taken-ok, failed)
	assert.GreaterOrEqual(t, taken, ok, "Redis took every call reported allowed")
	assert.LessOrEqual(t, taken, ok+failed, "and no call twice")
}

// TestNoRetries: a lost reply is an error, never a second run of the
// script, whatever the caller's client would retry: the store's own
// connections never retry. The caller's client here retries up to 3 times
// and ignores context deadlines, go-redis's defaults.
func TestNoRetries(t *testing.T) {
	c := sharedClient(t)
	px := startProxy(t, redisAddr())
	lenient := goredis.NewClient(&goredis.Options{Addr: px.addr(), MaxRetries: 3})
	t.Cleanup(func() { _ = lenient.Close() })
	s := newTestStore(t, lenient, WithTimeout(time.Second), WithConns(1)) // one connection: the reply dropped is a script's
	ctx := context.Background()
	p := core.MustPolicy(core.PolicyConfig{Name: "retry", Algorithm: core.TokenBucket, Quota: 1, Period: time.Hour, Burst: 10})
	d, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
	require.NoError(t, err)
	require.Equal(t, int64(9), d.Remaining)

	px.drop.Store(1)
	_, err = s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
	var se *core.StoreError
	require.ErrorAs(t, err, &se, "the lost reply is the caller's failure")
	raw, err := c.Get(ctx, s.Key("k", p)).Result()
	require.NoError(t, err)
	assert.Regexp(t, `^8:`, raw, "the script ran once: two units taken in all, not three or more")

	require.Eventually(t, func() bool {
		d, err = s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, int64(7), d.Remaining)
}

// TestNoRetriesOnCluster: a ClusterClient sends a pipeline again after a
// lost reply (up to MaxRedirects times, whatever MaxRetries says); the
// store's script calls must not be. One server behind a proxy stands for
// a one-master Cluster (ClusterSlots), so that a reply can be lost.
func TestNoRetriesOnCluster(t *testing.T) {
	c := sharedClient(t)
	px := startProxy(t, redisAddr())
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]goredis.ClusterSlot, error) {
			return []goredis.ClusterSlot{{Start: 0, End: 16383, Nodes: []goredis.ClusterNode{{Addr: px.addr()}}}}, nil
		},
	})
	t.Cleanup(func() { _ = cc.Close() })
	s := newTestStore(t, cc, WithTimeout(time.Second), WithConns(1))
	require.Equal(t, bySlot, s.layout)
	ctx := context.Background()
	p := core.MustPolicy(core.PolicyConfig{Name: "retry", Algorithm: core.TokenBucket, Quota: 1, Period: time.Hour, Burst: 10})
	d, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
	require.NoError(t, err)
	require.Equal(t, int64(9), d.Remaining)

	px.drop.Store(1)
	_, err = s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
	require.Error(t, err, "the lost reply is the caller's failure")
	raw, err := c.Get(ctx, s.Key("k", p)).Result()
	require.NoError(t, err)
	assert.Regexp(t, `^8:`, raw, "the script ran once: two units taken in all, not three or more")
}

// TestHungServerWithLenientClient: with go-redis's default options (no
// context deadlines on the socket), a hung server still fails every
// operation at its deadline, with a *core.StoreError naming it, and the
// store recovers by itself when the server resumes.
func TestHungServerWithLenientClient(t *testing.T) {
	srv := startServer(t)
	c := goredis.NewClient(&goredis.Options{Addr: srv.addr()})
	t.Cleanup(func() { _ = c.Close() })
	const deadline = 100 * time.Millisecond
	s, err := New(c, WithPrefix("stopped:"), WithTimeout(deadline))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	stalls := newStallMeter(t)
	p := core.MustPolicy(core.PolicyConfig{Name: "stopped", Algorithm: core.TokenBucket, Quota: 1, Period: time.Second, Burst: 10})
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
		assert.GreaterOrEqual(t, took, deadline, "%s: not before its deadline", op)
		within(t, stalls, took, deadline+deadline/16, op)
	}
	srv.signal(syscall.SIGCONT)
	// The calls left waiting end when the server answers; the store recovers.
	require.Eventually(t, func() bool {
		_, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
		return err == nil
	}, 30*time.Second, 10*time.Millisecond)
}

// TestUnreachable: a store whose Redis is not there fails with a
// *core.StoreError, never a panic or a hang, and at once once it knows.
func TestUnreachable(t *testing.T) {
	c := goredis.NewClient(clientOptions(fmt.Sprintf("127.0.0.1:%d", freePort(t))))
	t.Cleanup(func() { _ = c.Close() })
	const deadline = 100 * time.Millisecond
	s, err := New(c, WithTimeout(deadline))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	stalls := newStallMeter(t)
	p := core.MustPolicy(core.PolicyConfig{Name: "gone", Algorithm: core.GCRA, Quota: 1, Period: time.Second, Burst: 10})
	for i := range 3 {
		start := time.Now()
		_, err = s.Take(context.Background(), core.Request{Key: "k", Policy: p, Cost: 1})
		var se *core.StoreError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "take", se.Op)
		within(t, stalls, time.Since(start), deadline+deadline/16, fmt.Sprint("call ", i))
	}
	assert.ErrorIs(t, err, errDown, "once a round trip failed, calls fail at once: %v", err)
	// Malformed requests are still the caller's error, not the store's.
	_, err = s.Take(context.Background(), core.Request{Key: "k", Policy: p})
	assert.ErrorAs(t, err, new(*core.RequestError))
	var se *core.StoreError
	assert.False(t, errors.As(err, &se))
}

// TestLateRepliesAreNotAnOutage: a few replies later than the connection
// timeout, from a Redis that still answers PING, are not an outage. Their
// round trips fail, and so do their callers at their deadline; the calls
// that follow must still be sent and decided, not failed at once as if
// Redis were gone. (A store that went down on such a round trip failed
// every call at once until its next ping was answered: here, with PING
// answered in a third of the connection timeout, thousands of calls.)
func TestLateRepliesAreNotAnOutage(t *testing.T) {
	sharedClient(t)
	px := startProxy(t, redisAddr())
	const (
		deadline = 50 * time.Millisecond
		connWait = 300 * time.Millisecond
	)
	px.pongDelay.Store(int64(connWait / 3)) // a loaded Redis, answering
	c := goredis.NewClient(clientOptions(px.addr()))
	t.Cleanup(func() { _ = c.Close() })
	s := newTestStore(t, c, WithTimeout(deadline), WithConnTimeout(connWait))
	p := core.MustPolicy(core.PolicyConfig{Name: "late", Algorithm: core.GCRA, Quota: 1_000_000, Period: time.Second, Burst: 1_000_000})
	ctx := context.Background()

	var ok, fast, missed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := s.Take(ctx, core.Request{Key: fmt.Sprint("k", g), Policy: p, Cost: 1})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, errDown):
					fast.Add(1)
				default:
					missed.Add(1)
				}
			}
		})
	}
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	})
	require.Eventually(t, func() bool { return ok.Load() > 200 }, 30*time.Second, time.Millisecond, "warm")

	before := ok.Load()
	px.lateBy.Store(int64(2 * connWait))
	px.late.Store(4)
	// Long enough for the late replies' round trips to time out, a ping to
	// be answered, and calls to go on.
	require.Eventually(t, func() bool { return px.late.Load() <= 0 }, 30*time.Second, time.Millisecond, "the late replies went through")
	time.Sleep(4 * connWait)
	after := ok.Load()
	close(stop)
	wg.Wait()
	t.Logf("after %d replies late by %v (connection timeout %v): %d calls decided, %d missed their deadline, %d failed at once",
		4, 2*connWait, connWait, after-before, missed.Load(), fast.Load())
	assert.Zero(t, fast.Load(), "no call failed at once: Redis answered all along")
	assert.Greater(t, after, before, "calls went on being decided")
}
