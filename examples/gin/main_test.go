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

// burst sends n quick requests from one client and checks the demo's answer:
// the first 10 pass, the rest are refused with Retry-After and RateLimit.
func burst(t *testing.T, h http.Handler, method, path string, n, allowed int) {
	t.Helper()
	var ok, limited int
	for i := range n {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, nil)
		req.RemoteAddr = "198.51.100.20:5555"
		h.ServeHTTP(rec, req)
		assert.NotEmpty(t, rec.Header().Get("RateLimit"), "request %d", i+1)
		assert.NotEmpty(t, rec.Header().Get("RateLimit-Policy"), "request %d", i+1)
		switch rec.Code {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
			ra, err := strconv.Atoi(rec.Header().Get("Retry-After"))
			require.NoError(t, err)
			assert.GreaterOrEqual(t, ra, 1)
			assert.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
		default:
			t.Fatalf("request %d: status %d", i+1, rec.Code)
		}
	}
	assert.Equal(t, allowed, ok)
	assert.Equal(t, n-allowed, limited)
}

func TestFifteenQuickRequests(t *testing.T) {
	h, err := newHandler(memoryLimiter(t))
	require.NoError(t, err)
	burst(t, h, http.MethodGet, "/", 15, 10)
}

func TestLoginIsTighter(t *testing.T) {
	h, err := newHandler(memoryLimiter(t))
	require.NoError(t, err)
	burst(t, h, http.MethodPost, "/login", 5, 3)
	// Two denied logins took nothing from the site-wide bucket: 3 were taken.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "198.51.100.20:5555"
	h.ServeHTTP(rec, req)
	assert.Equal(t, `"per-ip";r=6;t=2`, rec.Header().Get("RateLimit"))
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
	h, err := newHandler(l)
	require.NoError(t, err)
	burst(t, h, http.MethodGet, "/", 15, 10)
}
