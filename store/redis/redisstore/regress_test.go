package redisstore

// Regression tests for defects a review found, each named for what it
// holds.

import (
	"context"
	"github.com/sluice-go/sluice/sluicetest"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/storetest"
)

// slowLeaseStore is a store leasing global through a delaying proxy to the
// shared Redis, on a manual clock, with a timeout that the proxy's
// leaseDelay outlasts; its connection is made before the proxy starts
// delaying.
func slowLeaseStore(t *testing.T) (*Store, *proxy, *goredis.Client, *sluicetest.ManualClock) {
	shared := sharedClient(t)
	px := startProxy(t, redisAddr())
	c := goredis.NewClient(clientOptions(px.addr()))
	t.Cleanup(func() { _ = c.Close() })
	clock := sluicetest.NewManualClock(storetest.Epoch)
	s, err := New(c, WithPrefix(testPrefix(t, shared)), WithClock(clock),
		WithLease(global, 10, time.Second), WithTimeout(leaseTimeout), WithConns(1))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	// Warm the one connection up: the dial and the script's first load may
	// outlast the timeout on a busy machine; the warm key is not the tests'.
	warm := core.MustPolicy(core.PolicyConfig{Name: "warm", Algorithm: core.GCRA, Quota: 1000, Period: time.Second, Burst: 1000})
	for range 100 {
		if _, err = s.Take(context.Background(), core.Request{Key: "warm", Policy: warm, Cost: 1}); err == nil {
			break
		}
	}
	require.NoError(t, err)
	return s, px, shared, clock
}

// leaseTimeout is slowLeaseStore's timeout, and leaseDelay the delay that
// makes Redis too slow for it.
const leaseTimeout, leaseDelay = 20 * time.Millisecond, 150 * time.Millisecond

// spend takes one unit at a time from key until denied, and counts.
func spend(t *testing.T, s *Store, key string) int {
	n := 0
	for range 300 {
		d, err := s.Take(context.Background(), core.Request{Key: key, Policy: global, Cost: 1})
		require.NoError(t, err)
		if d.Degraded {
			// Redis answered later than the store's short deadline with no
			// delay in the way: the machine stalled (a busy CI box), and a
			// lease granted late would make the count mean nothing.
			t.Skipf("the machine stalled past the store's %v deadline after %d units", leaseTimeout, n)
		}
		if !d.Allowed {
			return n
		}
		n++
	}
	return n
}

// TestLeaseGrantedLateIsHeld: a lease whose caller gave up at its deadline
// (Redis slow) is granted by Redis all the same; its units are then held
// locally like any lease's, spent or given back, never lost.
func TestLeaseGrantedLateIsHeld(t *testing.T) {
	s, px, shared, clock := slowLeaseStore(t)
	px.delay.Store(int64(leaseDelay))
	d, err := s.Take(context.Background(), core.Request{Key: "hot", Policy: global, Cost: 1})
	require.NoError(t, err)
	require.True(t, d.Degraded, "the lease's caller gave up at its deadline")
	l := s.leases.get(s.info(global), "hot")
	require.Eventually(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.units > 0 },
		30*time.Second, time.Millisecond, "the reply comes, for no one; its units are held")
	px.delay.Store(0)
	raw, err := shared.Get(context.Background(), s.Key("hot", global)).Result()
	require.NoError(t, err)
	t.Logf("Redis state after the abandoned lease: %q", raw)

	clock.Advance(2 * time.Second) // past the interval: anything held goes back
	s.leases.expire()
	admitted := spend(t, s, "hot")
	assert.Equal(t, 100, admitted, "one instance, nothing held: it should admit the whole limit (a unit an hour refills nothing)")
}

// TestLeaseGivenBackOnce: giving units back waits for Redis's answer, slow
// as it is, rather than a deadline after which it could not tell whether
// they went back: they are never both given back and spent again.
func TestLeaseGivenBackOnce(t *testing.T) {
	s, px, _, clock := slowLeaseStore(t)
	admitted := 0
	for range 3 {
		d, err := s.Take(context.Background(), core.Request{Key: "hot", Policy: global, Cost: 1})
		require.NoError(t, err)
		if d.Degraded {
			t.Skipf("the machine stalled past the store's %v deadline", leaseTimeout)
		}
		require.True(t, d.Allowed)
		admitted++
	}
	px.delay.Store(int64(leaseDelay))
	clock.Advance(2 * time.Second)
	s.leases.expire() // gives seven back, slowly
	px.delay.Store(0)
	admitted += spend(t, s, "hot")
	assert.LessOrEqual(t, admitted, 100, "one instance admitted more than the limit (a unit an hour refills nothing)")
}

// TestPipeWakesIdleLanes: when more operations wait than the lane that
// takes them can carry, an idle lane takes the rest at once, rather than
// leaving them for a whole round trip. (With the bug this test waits for
// the test binary's own timeout; it never fails for being slow.)
func TestPipeWakesIdleLanes(t *testing.T) {
	for range 20 {
		gate := make(chan struct{})
		entered := make(chan int64, 10)
		p := newPipe(pipeConfig{lanes: 2, maxLanes: 2, maxBatch: 1, patience: time.Hour,
			send: func(_ context.Context, batch []*op) error {
				entered <- batch[0].now
				if batch[0].now != 1 {
					<-gate // a slow round trip
				}
				batch[0].out = []int64{batch[0].now}
				return nil
			}})
		require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.idle == 2 }, 10*time.Second, time.Millisecond)
		var wg sync.WaitGroup
		start := func(now int64) {
			wg.Go(func() {
				o := p.get(opTake, now)
				if err := p.do(o, time.Now(), never(), time.Time{}, context.Background()); err == nil {
					p.put(o)
				}
			})
		}
		// The caller of op 1 sends two more as soon as it is answered, as
		// callers under load do: one lane takes one, the other lane the
		// other, while neither round trip has ended.
		wg.Go(func() {
			o := p.get(opTake, 1)
			if assert.NoError(t, p.do(o, time.Now(), never(), time.Time{}, context.Background())) {
				p.put(o)
			}
			start(2)
			start(3)
		})
		<-entered
		<-entered
		<-entered
		close(gate)
		wg.Wait()
		p.close(func() {})
	}
}

// TestLeaseCostAboveBurstIsImpossible: a request costing more than the
// burst is Impossible (core.Store's contract), on a leased key too, whatever
// its lease holds.
func TestLeaseCostAboveBurstIsImpossible(t *testing.T) {
	c := sharedClient(t)
	clock := sluicetest.NewManualClock(storetest.Epoch)
	p := core.MustPolicy(core.PolicyConfig{Name: "fast", Algorithm: core.TokenBucket, Quota: 100, Period: time.Second, Burst: 100})
	s := newTestStore(t, c, WithClock(clock), WithLease(p, 10, time.Minute))
	ctx := context.Background()
	d, err := s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 1})
	require.NoError(t, err)
	require.True(t, d.Allowed) // leased ten, nine held

	d, err = s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 101})
	require.NoError(t, err)
	assert.True(t, d.Impossible, "cost 101 over a burst of 100, nine units held, Redis has 90: %+v", d)

	clock.Advance(time.Second) // Redis refills to 100; the nine are still held
	d, err = s.Take(ctx, core.Request{Key: "k2", Policy: p, Cost: 1})
	require.NoError(t, err)
	d, err = s.Take(ctx, core.Request{Key: "k", Policy: p, Cost: 101})
	require.NoError(t, err)
	assert.False(t, d.Allowed, "a cost above the burst admitted: %+v", d)
	assert.True(t, d.Impossible)
}

// TestCloseEndsHungRoundTrips: Close ends the round trips on their way to a
// hung server (SIGSTOP) by closing their connections, rather than waiting
// out the connection timeout.
func TestCloseEndsHungRoundTrips(t *testing.T) {
	srv := startServer(t)
	stalls := newStallMeter(t)
	c := goredis.NewClient(clientOptions(srv.addr()))
	t.Cleanup(func() { _ = c.Close() })
	s, err := New(c, WithConnTimeout(3*time.Second))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = s.Take(ctx, core.Request{Key: "k", Policy: global, Cost: 1})
	require.NoError(t, err)
	srv.signal(syscall.SIGSTOP)
	t.Cleanup(func() { srv.signal(syscall.SIGCONT) })
	_, err = s.Take(ctx, core.Request{Key: "k", Policy: global, Cost: 1})
	require.Error(t, err, "missed its deadline")
	start := time.Now()
	require.NoError(t, s.Close())
	within(t, stalls, time.Since(start), 100*time.Millisecond, "Close, with a 3s connection timeout")
}

// TestUpAgainWhenPingIsRefused: after a lost connection the store is up
// again as soon as Redis answers, even with an error: a Redis whose ACL
// refuses PING (a user limited to what the store needs) serves scripts.
func TestUpAgainWhenPingIsRefused(t *testing.T) {
	srv := startServer(t)
	admin := goredis.NewClient(clientOptions(srv.addr()))
	t.Cleanup(func() { _ = admin.Close() })
	ctx := context.Background()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "default", "-ping").Err())
	px := startProxy(t, srv.addr())
	c := goredis.NewClient(clientOptions(px.addr()))
	t.Cleanup(func() { _ = c.Close() })
	s, err := New(c)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	take := func() error {
		_, err := s.Take(ctx, core.Request{Key: "k", Policy: global, Cost: 1})
		return err
	}
	require.NoError(t, take(), "scripts are allowed")
	// Ready returns once the start check's PING is answered (refused, here):
	// the reply dropped next is a take's, not that PING's.
	_ = s.Ready(ctx)
	// One reply lost: the connection goes, the store goes down. (Should
	// another reply, still on its way, be the one lost, lose one more.)
	require.Eventually(t, func() bool { px.drop.Store(1); return take() != nil }, 10*time.Second, time.Millisecond,
		"a lost reply puts the store down")
	require.Eventually(t, func() bool { return take() == nil }, 30*time.Second, 10*time.Millisecond, "Redis answers scripts: the store is up again")
}
