// Package demotest checks what every framework example answers, so that an
// example's test is only the wiring of its framework: fifteen quick requests
// to GET / pass ten, and POST /login is tighter, on the memory store with a
// manual clock; the fifteen requests again on the example's own Redis
// limiter when a Redis answers at REDIS_ADDR (default 127.0.0.1:6379); and,
// with Redis unreachable, its store failures logged a few lines at a time.
package demotest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/examples/internal/demo"
	"github.com/sluice-go/sluice/observe/sluiceslog"
	"github.com/sluice-go/sluice/sluicetest"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/redis/redisstore"
)

// Client sends one request to an example, always from the same client, and
// returns the answer's status and header.
type Client func(method, path string) (status int, h http.Header)

// Run checks the example that newClient serves with a limiter, and the
// example's newLimiter.
func Run(t *testing.T, newLimiter demo.NewLimiter, newClient func(t *testing.T, l *core.Limiter) Client) {
	t.Run("fifteen quick requests", func(t *testing.T) {
		burst(t, newClient(t, memoryLimiter(t)), http.MethodGet, "/", 15, 10)
	})
	t.Run("login is tighter", func(t *testing.T) {
		c := newClient(t, memoryLimiter(t))
		burst(t, c, http.MethodPost, "/login", 5, 3)
		// Two denied logins took nothing from the site-wide bucket: 3 were taken.
		_, h := c(http.MethodGet, "/")
		assert.Equal(t, `"per-ip";r=6;t=2`, h.Get("RateLimit"))
	})
	t.Run("redis", func(t *testing.T) {
		burst(t, newClient(t, redisLimiter(t, newLimiter)), http.MethodGet, "/", 15, 10)
	})
	t.Run("store failures logged at a bounded rate", func(t *testing.T) {
		failuresLogged(t, newLimiter, newClient)
	})
}

// RunHandler is Run for an example whose newHandler routes the site with a
// framework built on net/http.
func RunHandler(t *testing.T, newLimiter demo.NewLimiter, newHandler func(*core.Limiter) (http.Handler, error)) {
	Run(t, newLimiter, func(t *testing.T, l *core.Limiter) Client {
		h, err := newHandler(l)
		require.NoError(t, err)
		return Handler(h)
	})
}

// Handler returns a Client that has h serve each request.
func Handler(h http.Handler) Client {
	return func(method, path string) (int, http.Header) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, nil)
		req.RemoteAddr = "198.51.100.20:5555"
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Header()
	}
}

// burst sends n quick requests and checks that allowed pass and the rest are
// refused with Retry-After and a problem body, all with the rate-limit
// fields.
func burst(t *testing.T, c Client, method, path string, n, allowed int) {
	t.Helper()
	var ok, limited int
	for i := range n {
		status, h := c(method, path)
		assert.NotEmpty(t, h.Get("RateLimit"), "request %d", i+1)
		assert.NotEmpty(t, h.Get("RateLimit-Policy"), "request %d", i+1)
		switch status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
			ra, err := strconv.Atoi(h.Get("Retry-After"))
			require.NoError(t, err)
			assert.GreaterOrEqual(t, ra, 1)
			assert.Equal(t, "application/problem+json", h.Get("Content-Type"))
		default:
			t.Fatalf("request %d: status %d", i+1, status)
		}
	}
	assert.Equal(t, allowed, ok)
	assert.Equal(t, n-allowed, limited)
}

// memoryLimiter decides on the memory store with a clock that does not
// move, so that no token comes back mid-test.
func memoryLimiter(t *testing.T) *core.Limiter {
	s, err := memory.New(memory.WithClock(sluicetest.NewManualClock(time.Unix(1e9, 0))), memory.WithSweepInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	l, err := core.NewLimiter(s)
	require.NoError(t, err)
	return l
}

// redisLimiter is the limiter of the example's -redis flag, skipping the
// test when no Redis answers. Keys get a random prefix, as the server is
// shared, the clock does not move, and the deadline is long.
func redisLimiter(t *testing.T, newLimiter demo.NewLimiter) *core.Limiter {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	probe := goredis.NewClient(&goredis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := probe.Ping(ctx).Err()
	_ = probe.Close()
	if err != nil {
		t.Skipf("no Redis at %s: %v", addr, err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	l, closeStores, err := newLimiter(addr, 1, func(context.Context, core.Event) {},
		redisstore.WithPrefix("sluice-example-test:"+hex.EncodeToString(b[:])+":"),
		redisstore.WithClock(sluicetest.NewManualClock(time.Now())),
		// What is tested is the example's answers, not Redis's speed: a
		// deadline a loaded machine cannot miss, so no answer comes from
		// the fallback.
		redisstore.WithTimeout(time.Minute))
	require.NoError(t, err)
	t.Cleanup(closeStores)
	return l
}

// failuresLogged sends 200 requests with Redis unreachable (a port nothing
// listens on): the example logs a few of its failed decisions, not one line
// each (it once wrote 200 lines in two seconds under load), and leaves the
// client's address out.
func failuresLogged(t *testing.T, newLimiter demo.NewLimiter, newClient func(t *testing.T, l *core.Limiter) Client) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	var out bytes.Buffer
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	failures, err := sluiceslog.New(slog.New(slog.NewTextHandler(&out, nil)), sluiceslog.WithClock(clock))
	require.NoError(t, err)
	l, closeStores, err := newLimiter(addr, 1, failures, redisstore.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	defer closeStores()

	c := newClient(t, l)
	for range 200 {
		status, _ := c(http.MethodGet, "/")
		require.Contains(t, []int{http.StatusOK, http.StatusTooManyRequests}, status, "the fallback decides")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 5)
	for _, line := range lines {
		assert.Contains(t, line, `level=WARN msg="sluice: store failed" policy=per-ip`)
		assert.Contains(t, line, "decided_by=fallback")
		assert.NotContains(t, line, "198.51.100.20")
	}
}
