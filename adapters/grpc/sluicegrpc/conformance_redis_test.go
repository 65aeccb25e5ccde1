package sluicegrpc_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/redis/redisstore"
)

// redisStore returns a store on the shared Redis (REDIS_ADDR, or
// 127.0.0.1:6379) under a key prefix of its own, deleted when the test
// ends, on clock's time; it skips the test if Redis is not there (fails in
// CI).
func redisStore(t *testing.T, clock core.Clock) core.Store {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		if os.Getenv("CI") != "" {
			t.Fatalf("Redis at %s: %v", addr, err)
		}
		t.Skipf("Redis at %s: %v; skipping (set REDIS_ADDR)", addr, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "sluicegrpc-test:" + hex.EncodeToString(b[:]) + ":"
	s, err := redisstore.New(c, redisstore.WithPrefix(prefix), redisstore.WithClock(clock), redisstore.WithTimeout(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			_ = c.Del(ctx, iter.Val()).Err()
		}
		_ = c.Close()
	})
	return s
}

// The conformance run on Redis: sluicehttp and sluicegrpc, each on a Redis
// store of its own, decide alike.
func TestConformanceRedis(t *testing.T) {
	steps := 2000
	if testing.Short() {
		steps = 200
	}
	runDiff(t, steps, 11, "ietf", redisStore)
}
