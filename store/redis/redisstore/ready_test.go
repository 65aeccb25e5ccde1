package redisstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// An address that cannot be parsed is refused by New, which says which.
func TestNewRefusesABadAddress(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:6450x", "127.0.0.1:99999", "127.0.0.1", "127.0.0.1:-1"} {
		c := goredis.NewClient(&goredis.Options{Addr: addr})
		_, err := New(c)
		require.Error(t, err, addr)
		assert.Contains(t, err.Error(), addr)
		_ = c.Close()
	}
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{"127.0.0.1:7000", "127.0.0.1:70x1"}})
	_, err := New(cc)
	require.ErrorContains(t, err, "70x1")
	_ = cc.Close()
}

// lockedBuffer is a log destination several goroutines write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A Redis that cannot be reached at start is said once at WARN through
// slog.Default, with no observer and no logger given; Ready says so too.
func TestUnreachableAtStartWarnsOnce(t *testing.T) {
	var logged lockedBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })

	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t)) // nothing listens
	c := goredis.NewClient(clientOptions(addr))
	defer c.Close()
	s, err := New(c, WithConnTimeout(200*time.Millisecond))
	require.NoError(t, err, "not required to be reachable: New does not wait")
	<-s.started
	assert.Equal(t, 1, strings.Count(logged.String(), "level=WARN"), logged.String())
	assert.Contains(t, logged.String(), addr)
	assert.Contains(t, logged.String(), "cannot reach Redis")

	err = s.Ready(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), addr)
	require.NoError(t, s.Close())
	assert.Equal(t, 1, strings.Count(logged.String(), "level=WARN"), "said once")
}

func TestReadyOnAReachableRedis(t *testing.T) {
	s := newTestStore(t, sharedClient(t))
	require.NoError(t, s.Ready(context.Background()))
}

func TestRequireReachable(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c := goredis.NewClient(clientOptions(addr))
	defer c.Close()
	_, err := New(c, WithRequireReachable(100*time.Millisecond), WithConnTimeout(100*time.Millisecond))
	require.ErrorContains(t, err, "did not answer within 100ms")
	require.ErrorContains(t, err, addr)

	_, err = New(c, WithRequireReachable(0))
	require.Error(t, err)

	s := newTestStore(t, sharedClient(t), WithRequireReachable(5*time.Second))
	require.NoError(t, s.Ready(context.Background()))
}

// With Redis gone and no failure mode chosen, a Limiter on the store still
// enforces its limit, on the store's Local store: 10 of 30 pass, not 30.
func TestRedisGoneStillLimits(t *testing.T) {
	srv := startServer(t)
	c := goredis.NewClient(clientOptions(srv.addr()))
	defer c.Close()
	s, err := New(c, WithLogger(nil), WithConnTimeout(200*time.Millisecond), WithTimeout(100*time.Millisecond))
	require.NoError(t, err)
	defer s.Close()
	l, err := core.NewLimiter(s)
	require.NoError(t, err)
	srv.kill()

	p := core.MustPolicy(core.PolicyConfig{Name: "gone", Algorithm: core.GCRA, Quota: 10, Period: time.Hour, Burst: 10})
	passed := 0
	for range 30 {
		d, err := l.Take(context.Background(), core.Request{Key: "k", Policy: p, Cost: 1})
		require.NoError(t, err)
		require.True(t, d.Degraded)
		if d.Allowed {
			passed++
		}
	}
	assert.Equal(t, 10, passed)
	require.Error(t, s.Ready(context.Background()))
}

// A round trip the store cut short is reported as Redis not answering,
// never as a cancellation the caller did not make.
func TestOwnCause(t *testing.T) {
	cut := fmt.Errorf("eval: %w", context.Canceled)
	err := ownCause(context.Background(), cut)
	assert.NotContains(t, err.Error(), "context canceled")
	assert.ErrorIs(t, err, errDown)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Same(t, cut, ownCause(ctx, cut), "the caller's own cancellation stays")
	other := errors.New("READONLY")
	assert.Same(t, other, ownCause(context.Background(), other))
}
