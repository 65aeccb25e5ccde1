package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/redis"
)

func memoryLimiter(t *testing.T) *core.Limiter {
	s, err := memory.New(memory.WithClock(core.NewManualClock(time.Unix(1e9, 0))), memory.WithSweepInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	l, err := core.NewLimiter(s)
	require.NoError(t, err)
	return l
}

// burst sends n quick requests through app.Test (one client: its peer is
// always 0.0.0.0) and checks that allowed pass and the rest are refused with
// Retry-After and RateLimit.
func burst(t *testing.T, app *fiber.App, method, path string, n, allowed int) {
	t.Helper()
	var ok, limited int
	for i := range n {
		resp, err := app.Test(httptest.NewRequest(method, path, nil))
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.NotEmpty(t, resp.Header.Get("RateLimit"), "request %d", i+1)
		assert.NotEmpty(t, resp.Header.Get("RateLimit-Policy"), "request %d", i+1)
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
			ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			require.NoError(t, err)
			assert.GreaterOrEqual(t, ra, 1)
			assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		default:
			t.Fatalf("request %d: status %d", i+1, resp.StatusCode)
		}
	}
	assert.Equal(t, allowed, ok)
	assert.Equal(t, n-allowed, limited)
}

func TestFifteenQuickRequests(t *testing.T) {
	app, err := newApp(memoryLimiter(t))
	require.NoError(t, err)
	burst(t, app, http.MethodGet, "/", 15, 10)
}

func TestLoginIsTighter(t *testing.T) {
	app, err := newApp(memoryLimiter(t))
	require.NoError(t, err)
	burst(t, app, http.MethodPost, "/login", 5, 3)
	resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/", nil))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, `"per-ip";r=6;t=2`, resp.Header.Get("RateLimit"))
}

// With -redis: the same answers from the Redis store (skipped when no Redis
// answers at REDIS_ADDR or 127.0.0.1:6379). Keys get a random prefix, as the
// server is shared.
func TestRedis(t *testing.T) {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	probe := goredis.NewClient(&goredis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := probe.Ping(ctx).Err(); err != nil {
		_ = probe.Close()
		t.Skipf("no Redis at %s: %v", addr, err)
	}
	_ = probe.Close()
	var b [8]byte
	_, _ = rand.Read(b[:])
	l, closeStores, err := newLimiter(addr,
		redis.WithPrefix("sluice-example-test:"+hex.EncodeToString(b[:])+":"),
		redis.WithClock(core.NewManualClock(time.Now()))) // no refill mid-test
	require.NoError(t, err)
	defer closeStores()
	app, err := newApp(l)
	require.NoError(t, err)
	burst(t, app, http.MethodGet, "/", 15, 10)
}
