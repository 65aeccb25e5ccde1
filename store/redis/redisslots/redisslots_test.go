package redisslots

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// client connects to the shared Redis at REDIS_ADDR (default
// 127.0.0.1:6379), or skips; under CI it fails instead.
func client(t *testing.T) redis.UniversalClient {
	t.Helper()
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		if os.Getenv("CI") != "" {
			t.Fatalf("no Redis at %s: %v", addr, err)
		}
		t.Skipf("no Redis at %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// prefix is a key prefix no other test uses.
func prefix(t *testing.T) Option {
	var b [6]byte
	rand.Read(b[:])
	return WithPrefix("sluice:test:slots:" + hex.EncodeToString(b[:]) + ":")
}

func newSlots(t *testing.T, c redis.UniversalClient, limit int, opts ...Option) *Slots {
	t.Helper()
	s, err := New(c, limit, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestAcquireUpToTheLimit(t *testing.T) {
	ctx := context.Background()
	s := newSlots(t, client(t), 3, prefix(t), WithRetryAfter(2*time.Second))
	var leases []*Lease
	for range 3 {
		l, err := s.Take(ctx, "k")
		require.NoError(t, err)
		leases = append(leases, l)
	}
	_, err := s.Take(ctx, "k")
	var rej *backpressure.ShedError
	require.ErrorAs(t, err, &rej)
	assert.Equal(t, backpressure.ShedError{Reason: backpressure.Saturated, Class: core.Default, RetryAfter: 2 * time.Second}, *rej)
	n, err := s.InFlight(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, 3, n)

	other, err := s.Take(ctx, "other")
	require.NoError(t, err, "keys are limited apart")
	require.NoError(t, other.Release(ctx))

	require.NoError(t, leases[0].Release(ctx))
	require.NoError(t, leases[0].Release(ctx), "a second release does nothing")
	n, err = s.InFlight(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	l, err := s.Take(ctx, "k")
	require.NoError(t, err)
	for _, l := range append(leases[1:], l) {
		require.NoError(t, l.Release(ctx))
	}
	n, err = s.InFlight(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	exists, err := s.client.Exists(ctx, s.redisKey("k")).Result()
	require.NoError(t, err)
	assert.Zero(t, exists, "an empty key is gone")
}

func TestTheFleetSharesTheLimit(t *testing.T) {
	ctx := context.Background()
	c, p := client(t), prefix(t)
	a, b := newSlots(t, c, 4, p), newSlots(t, c, 4, p)
	var mu sync.Mutex
	var granted []*Lease
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			s := a
			if i%2 == 1 {
				s = b
			}
			l, err := s.Take(ctx, "shared")
			if err != nil {
				require.ErrorIs(t, err, backpressure.ErrShed)
				return
			}
			mu.Lock()
			granted = append(granted, l)
			mu.Unlock()
		})
	}
	wg.Wait()
	assert.Len(t, granted, 4)
	for _, l := range granted {
		require.NoError(t, l.Release(ctx))
	}
}

// TestCrashedHolderSlotsComeBack: an instance that stops without releasing
// its leases (it crashed) holds its slots until the TTL, then they are back.
func TestCrashedHolderSlotsComeBack(t *testing.T) {
	ctx := context.Background()
	c, p := client(t), prefix(t)
	crashed, err := New(c, 2, p, WithTTL(3*time.Second)) // long enough that no stall of a busy machine passes it before the next check
	require.NoError(t, err)
	for range 2 {
		_, err := crashed.Take(ctx, "k")
		require.NoError(t, err)
	}
	require.NoError(t, crashed.Close()) // no more renewals, no release

	survivor := newSlots(t, c, 2, p)
	_, err = survivor.Take(ctx, "k")
	assert.ErrorIs(t, err, backpressure.ErrShed, "the crashed instance's leases still count")

	require.Eventually(t, func() bool {
		n, err := survivor.InFlight(ctx, "k")
		return err == nil && n == 0
	}, 30*time.Second, 20*time.Millisecond, "the leases expire")
	for range 2 {
		l, err := survivor.Take(ctx, "k")
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
	}
	_, err = crashed.Take(ctx, "k")
	assert.ErrorIs(t, err, ErrClosed)
}

// TestRenewalKeepsALongRequest: a lease held for two and a half TTLs is
// still there, since its holder renews it.
func TestRenewalKeepsALongRequest(t *testing.T) {
	ctx := context.Background()
	c, p := client(t), prefix(t)
	s := newSlots(t, c, 1, p, WithTTL(time.Second), WithRenewEvery(100*time.Millisecond))
	l, err := s.Take(ctx, "long")
	require.NoError(t, err)
	start, err := c.Time(ctx).Result()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		now, err := c.Time(ctx).Result()
		return err == nil && now.Sub(start) > 2500*time.Millisecond
	}, 30*time.Second, 50*time.Millisecond, "Redis's clock passes two and a half TTLs")
	other := newSlots(t, c, 1, p)
	_, err = other.Take(ctx, "long")
	assert.ErrorIs(t, err, backpressure.ErrShed, "the renewed lease still holds the slot")
	require.NoError(t, l.Release(ctx))
	n, err := s.InFlight(ctx, "long")
	require.NoError(t, err)
	assert.Equal(t, 0, n)
}

func TestLostLease(t *testing.T) {
	ctx := context.Background()
	c := client(t)
	s := newSlots(t, c, 1, prefix(t))
	l, err := s.Take(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, c.Del(ctx, s.redisKey("k")).Err()) // as if it had expired
	assert.ErrorIs(t, l.Release(ctx), ErrLost)
	assert.NoError(t, l.Release(ctx))
}

func TestRetriedAcquireTakesOneLease(t *testing.T) {
	ctx := context.Background()
	c := client(t)
	s := newSlots(t, c, 2, prefix(t))
	key := s.redisKey("k")
	for range 3 { // the same call, sent again after a lost reply
		got, err := acquireScript.Run(ctx, c, []string{key}, 2, time.Minute.Microseconds(), "inst:1").Int()
		require.NoError(t, err)
		assert.Equal(t, 1, got)
	}
	n, err := s.InFlight(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, c.Del(ctx, key).Err())
}

func TestRedisDown(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer c.Close()
	s := newSlots(t, c, 1)
	_, err := s.Take(context.Background(), "k")
	require.Error(t, err)
	assert.False(t, errors.Is(err, backpressure.ErrShed), "a failure is no rejection: the caller chooses")
}

func TestOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, tc := range []struct {
		limit int
		opts  []Option
	}{
		{0, nil},
		{1, []Option{WithPrefix("a{b")}},
		{1, []Option{WithTTL(time.Millisecond)}},
		{1, []Option{WithRenewEvery(0)}},
		{1, []Option{WithTTL(time.Second), WithRenewEvery(time.Second)}},
		{1, []Option{WithRetryAfter(-1)}},
	} {
		_, err := New(c, tc.limit, tc.opts...)
		assert.Error(t, err, "%+v", tc)
	}
	_, err := New(nil, 1)
	assert.Error(t, err)
	s, err := New(c, 1, WithPrefix("p:"))
	require.NoError(t, err)
	assert.Equal(t, "p:{tenant}", s.redisKey("tenant"))
	assert.Equal(t, 10*time.Second, s.renewEvery, "a third of the default TTL")
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
}
