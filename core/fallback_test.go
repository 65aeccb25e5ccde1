package core_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/sluicetest"
)

// downShared is a SharedStore whose shared part is down: its Local store
// decides.
type downShared struct {
	brokenStore
	local core.Store
}

func (s downShared) Local() core.Store { return s.local }

// admitted returns how many of n requests for one key l admits.
func admitted(t *testing.T, l *core.Limiter, n int) int {
	t.Helper()
	passed := 0
	for range n {
		d, err := l.Take(context.Background(), core.Request{Key: "10.0.0.1", Policy: perIP, Cost: 1})
		require.NoError(t, err)
		assert.True(t, d.Degraded)
		if d.Allowed {
			passed++
		}
	}
	return passed
}

// quietLog sends slog.Default's lines to a buffer for the test.
func quietLog(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

// With no failure mode chosen, a shared store that is down never means
// unlimited: its Local store enforces each whole limit.
func TestLimiterDegradesToLocalByDefault(t *testing.T) {
	quietLog(t)
	l, err := core.NewLimiter(downShared{local: newMemory(t)})
	require.NoError(t, err)
	assert.Equal(t, 10, admitted(t, l, 30), "the burst of 10, not 30")

	ds := make([]core.Decision, 1)
	d, err := l.TakeAll(context.Background(), []core.Request{{Key: "10.0.0.2", Policy: perIP, Cost: 1}}, ds)
	require.NoError(t, err)
	assert.True(t, d.Allowed && d.Degraded)
	assert.Equal(t, int64(9), d.Remaining, "TakeAll decides on the local store too")
}

func TestLimiterFallbackShareOnOwnLocal(t *testing.T) {
	quietLog(t)
	l, err := core.NewLimiter(downShared{local: newMemory(t)}, core.WithFallback(nil, 2))
	require.NoError(t, err)
	assert.Equal(t, 5, admitted(t, l, 30), "a fleet of 2: half the burst")

	_, err = core.NewLimiter(brokenStore{}, core.WithFallback(nil, 2))
	require.ErrorContains(t, err, "SharedStore")
}

// A store without a Local store of its own, with no failure mode chosen,
// fails closed: never unlimited unless asked.
func TestLimiterFailsClosedByDefault(t *testing.T) {
	quietLog(t)
	l, err := core.NewLimiter(brokenStore{})
	require.NoError(t, err)
	assert.Zero(t, admitted(t, l, 3))
	d, _ := l.Take(context.Background(), core.Request{Key: "k", Policy: perIP, Cost: 1})
	assert.Equal(t, time.Second, d.RetryAfter)
	assert.Zero(t, d.Limit, "adapters answer 503")
}

func TestLimiterFailOpenIsExplicit(t *testing.T) {
	quietLog(t)
	l, err := core.NewLimiter(downShared{local: newMemory(t)}, core.WithFailOpen())
	require.NoError(t, err)
	assert.Equal(t, 30, admitted(t, l, 30), "asked for: no fallback, every request admitted")

	_, err = core.NewLimiter(brokenStore{}, core.WithFailOpen(), core.WithFailClosed(0))
	require.Error(t, err)
	_, err = core.NewLimiter(brokenStore{}, core.WithFailClosed(0), core.WithFailOpen())
	require.Error(t, err)
}

// A failing store is logged at WARN with no observer, once per interval.
func TestLimiterWarnsOncePerInterval(t *testing.T) {
	buf := quietLog(t)
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	l, err := core.NewLimiter(downShared{local: newMemory(t)}, core.WithClock(clock))
	require.NoError(t, err)
	admitted(t, l, 30)
	assert.Equal(t, 1, strings.Count(buf.String(), "level=WARN"), buf.String())
	assert.Contains(t, buf.String(), "enforces every whole limit in process")
	assert.Contains(t, buf.String(), "connection refused")
	clock.Advance(59 * time.Second)
	admitted(t, l, 1)
	assert.Equal(t, 1, strings.Count(buf.String(), "level=WARN"))
	clock.Advance(time.Second)
	admitted(t, l, 1)
	assert.Equal(t, 2, strings.Count(buf.String(), "level=WARN"))
}
