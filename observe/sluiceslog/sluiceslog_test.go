package sluiceslog_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/sluice/sluicetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/core/backpressure"
	"github.com/sluice-go/sluice/observe/sluiceslog"
	"github.com/sluice-go/sluice/store/memory"
)

var perIP = core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.TokenBucket, Quota: 1, Period: time.Minute, Burst: 2})

// logBuffer is a text handler's output, without times, safe for
// concurrent writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the lines written so far.
func (b *logBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSuffix(b.buf.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func newLogger(level slog.Level) (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	h := slog.NewTextHandler(b, &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	return slog.New(h), b
}

func newClock() *sluicetest.ManualClock {
	return sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
}

func newObserver(t *testing.T, logger *slog.Logger, opts ...sluiceslog.Option) core.Observer {
	t.Helper()
	o, err := sluiceslog.New(logger, opts...)
	require.NoError(t, err)
	return o
}

// brokenStore fails every call.
type brokenStore struct{}

var errDown = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func (brokenStore) Take(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, errDown
}
func (brokenStore) TakeAll(context.Context, []core.Request, []core.Decision) error { return errDown }
func (brokenStore) Adjust(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, errDown
}

// ReturnTurn gives a turn back as Adjust gives units back.
func (s brokenStore) ReturnTurn(ctx context.Context, r core.Request, _ time.Duration) (core.Decision, error) {
	r.Cost = -r.Cost
	return s.Adjust(ctx, r)
}
func (brokenStore) Reset(context.Context, string, *core.Policy) error { return errDown }

func TestDefaults(t *testing.T) {
	clock := newClock()
	mem, err := memory.New(memory.WithClock(clock))
	require.NoError(t, err)
	defer mem.Close()
	ctx := context.Background()

	t.Run("at Info, denials are not logged", func(t *testing.T) {
		logger, out := newLogger(slog.LevelInfo)
		l, err := core.NewLimiter(mem, core.WithObserver(newObserver(t, logger, sluiceslog.WithClock(clock))))
		require.NoError(t, err)
		for range 4 {
			_, err := l.Take(ctx, core.Request{Key: "info", Policy: perIP, Cost: 1})
			require.NoError(t, err)
		}
		assert.Empty(t, out.lines())
	})
	t.Run("at Debug, denials are, without the key", func(t *testing.T) {
		logger, out := newLogger(slog.LevelDebug)
		l, err := core.NewLimiter(mem, core.WithObserver(newObserver(t, logger, sluiceslog.WithClock(clock))))
		require.NoError(t, err)
		for range 3 {
			_, err := l.Take(ctx, core.Request{Key: "198.51.100.1", Policy: perIP, Cost: 1})
			require.NoError(t, err)
		}
		_, err = l.Take(ctx, core.Request{Key: "198.51.100.1", Policy: perIP, Cost: 5})
		require.NoError(t, err)
		assert.Equal(t, []string{
			`level=DEBUG msg="sluice: request denied" policy=per-ip retry_after=1m0s`,
			`level=DEBUG msg="sluice: request denied" policy=per-ip impossible=true`,
		}, out.lines())
	})
	t.Run("store failures at Warn", func(t *testing.T) {
		logger, out := newLogger(slog.LevelInfo)
		l, err := core.NewLimiter(brokenStore{}, core.WithFailClosed(0),
			core.WithObserver(newObserver(t, logger, sluiceslog.WithClock(clock))))
		require.NoError(t, err)
		_, err = l.Take(ctx, core.Request{Key: "198.51.100.1", Policy: perIP, Cost: 1})
		require.NoError(t, err)
		lines := out.lines()
		require.Len(t, lines, 1)
		assert.Regexp(t, `^level=WARN msg="sluice: store failed" policy=per-ip error="sluice: store take: dial tcp 127.0.0.1:6379: connect: connection refused" allowed=false decided_by="failure mode" latency=\S+$`, lines[0])
		assert.NotContains(t, lines[0], "198.51.100.1")
	})
	t.Run("a fallback decides", func(t *testing.T) {
		logger, out := newLogger(slog.LevelInfo)
		l, err := core.NewLimiter(brokenStore{}, core.WithFallback(mem, 1),
			core.WithObserver(newObserver(t, logger, sluiceslog.WithClock(clock))))
		require.NoError(t, err)
		_, err = l.Take(ctx, core.Request{Key: "fallback", Policy: perIP, Cost: 1})
		require.NoError(t, err)
		lines := out.lines()
		require.Len(t, lines, 1)
		assert.Contains(t, lines[0], `allowed=true decided_by=fallback`)
	})
}

func TestWithKey(t *testing.T) {
	logger, out := newLogger(slog.LevelDebug)
	o := newObserver(t, logger, sluiceslog.WithKey(), sluiceslog.WithClock(newClock()))
	o(context.Background(), core.Event{Kind: core.Denied, Key: "198.51.100.1", Decision: core.Decision{Policy: perIP, RetryAfter: time.Second}})
	assert.Equal(t, []string{`level=DEBUG msg="sluice: request denied" policy=per-ip key=198.51.100.1 retry_after=1s`}, out.lines())
}

func TestWithLevel(t *testing.T) {
	logger, out := newLogger(slog.LevelDebug)
	var leases slog.LevelVar
	leases.Set(slog.LevelInfo)
	o := newObserver(t, logger, sluiceslog.WithClock(newClock()),
		sluiceslog.WithLevel(core.Denied, nil),
		sluiceslog.WithLevel(core.NearLimit, slog.LevelInfo),
		sluiceslog.WithLevel(core.LeaseTaken, &leases))
	ctx := context.Background()
	o(ctx, core.Event{Kind: core.Denied, Decision: core.Decision{Policy: perIP}})
	o(ctx, core.Event{Kind: core.Allowed, Decision: core.Decision{Policy: perIP, Allowed: true}})
	o(ctx, core.Event{Kind: core.NearLimit, Decision: core.Decision{Policy: perIP, Allowed: true, Limit: 10, Remaining: 1}})
	o(ctx, core.Event{Kind: core.LeaseTaken, Decision: core.Decision{Policy: perIP}, Units: 100})
	leases.Set(slog.LevelError)
	o(ctx, core.Event{Kind: core.LeaseTaken, Units: 50})
	o(ctx, core.Event{Kind: core.LeaseFailed, Err: errDown, Units: 100})
	assert.Equal(t, []string{
		`level=INFO msg="sluice: request near its limit" policy=per-ip remaining=1 limit=10`,
		`level=INFO msg="sluice: lease taken" policy=per-ip units=100`,
		`level=ERROR msg="sluice: lease taken" units=50`,
		`level=WARN msg="sluice: lease failed" error="dial tcp 127.0.0.1:6379: connect: connection refused" units=100`,
	}, out.lines())
}

func TestOptionErrors(t *testing.T) {
	for name, opt := range map[string]sluiceslog.Option{
		"no lines":      sluiceslog.WithLimit(0, time.Second),
		"no interval":   sluiceslog.WithLimit(1, 0),
		"outcome":       sluiceslog.WithLevel(core.Kind(200), slog.LevelInfo),
		"nil clock":     sluiceslog.WithClock(nil),
		"negative time": sluiceslog.WithLimit(1, -time.Second),
	} {
		_, err := sluiceslog.New(nil, opt)
		assert.Error(t, err, name)
	}
	o, err := sluiceslog.New(nil)
	require.NoError(t, err)
	assert.NotNil(t, o, "a nil logger is slog.Default()")
}

// The demo's complaint: under load with Redis down, one line per failed
// decision, 200 lines in two seconds. Now: five, then one line saying how
// many more there were.
func TestStoreFailuresAreBounded(t *testing.T) {
	clock := newClock()
	logger, out := newLogger(slog.LevelInfo)
	l, err := core.NewLimiter(brokenStore{}, core.WithObserver(newObserver(t, logger, sluiceslog.WithClock(clock))))
	require.NoError(t, err)
	ctx := context.Background()
	take := func(n int) {
		for range n {
			_, err := l.Take(ctx, core.Request{Key: "k", Policy: perIP, Cost: 1})
			require.NoError(t, err)
		}
	}
	failed := func(lines []string) int {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, `msg="sluice: store failed"`) {
				n++
			}
		}
		return n
	}

	for range 20 { // two seconds at 100 failures a second
		take(10)
		clock.Advance(100 * time.Millisecond)
	}
	lines := out.lines()
	assert.Len(t, lines, 5)
	assert.Equal(t, 5, failed(lines))

	clock.Advance(8 * time.Second) // the interval is over
	take(1)
	lines = out.lines()[5:]
	require.Len(t, lines, 2)
	assert.Equal(t, `level=WARN msg="sluice: log lines suppressed" outcome=store-failed suppressed=195 interval=10s`, lines[0])
	assert.Equal(t, 1, failed(lines[1:]))
}

// The count of lines suppressed comes out with the next event of any kind,
// even one that is not logged, once their interval is over.
func TestSuppressedCountComesWithAnyEvent(t *testing.T) {
	clock := newClock()
	logger, out := newLogger(slog.LevelInfo)
	o := newObserver(t, logger, sluiceslog.WithClock(clock), sluiceslog.WithLimit(2, time.Second))
	ctx := context.Background()
	failed := core.Event{Kind: core.StoreFailed, Decision: core.Decision{Policy: perIP, Allowed: true, Degraded: true}, Err: errDown}
	leaseFailed := core.Event{Kind: core.LeaseFailed, Err: errDown, Units: 1}
	allowed := core.Event{Kind: core.Allowed, Decision: core.Decision{Policy: perIP, Allowed: true}}
	for range 5 {
		o(ctx, failed)
	}
	clock.Advance(500 * time.Millisecond)
	for range 3 {
		o(ctx, leaseFailed)
	}
	require.Len(t, out.lines(), 4, "two of each")

	clock.Advance(499 * time.Millisecond)
	o(ctx, allowed)
	assert.Len(t, out.lines(), 4, "no interval is over")

	clock.Advance(time.Millisecond) // store failures' interval is over
	o(ctx, allowed)
	o(ctx, allowed)
	lines := out.lines()
	require.Len(t, lines, 5)
	assert.Equal(t, `level=WARN msg="sluice: log lines suppressed" outcome=store-failed suppressed=3 interval=1s`, lines[4])

	clock.Advance(500 * time.Millisecond) // lease failures' too
	o(ctx, allowed)
	lines = out.lines()
	require.Len(t, lines, 6)
	assert.Equal(t, `level=WARN msg="sluice: log lines suppressed" outcome=lease-failed suppressed=1 interval=1s`, lines[5])

	// A new interval starts with the next failure: two lines again.
	for range 3 {
		o(ctx, failed)
	}
	assert.Len(t, out.lines(), 8)
}

// Each outcome has its own budget: a flood of denials leaves room for store
// failures.
func TestBudgetsPerOutcome(t *testing.T) {
	logger, out := newLogger(slog.LevelDebug)
	o := newObserver(t, logger, sluiceslog.WithClock(newClock()), sluiceslog.WithLimit(1, time.Minute))
	ctx := context.Background()
	for range 100 {
		o(ctx, core.Event{Kind: core.Denied, Decision: core.Decision{Policy: perIP}})
	}
	o(ctx, core.Event{Kind: core.StoreFailed, Decision: core.Decision{Policy: perIP}, Err: errDown})
	lines := out.lines()
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], "request denied")
	assert.Contains(t, lines[1], "store failed")
}

// From many goroutines at once, exactly the budget is logged, and the count
// suppressed is exact.
func TestConcurrentEvents(t *testing.T) {
	clock := newClock()
	logger, out := newLogger(slog.LevelInfo)
	o := newObserver(t, logger, sluiceslog.WithClock(clock), sluiceslog.WithLimit(3, time.Second))
	ctx := context.Background()
	failed := core.Event{Kind: core.StoreFailed, Decision: core.Decision{Policy: perIP}, Err: errDown}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				o(ctx, failed)
				o(ctx, core.Event{Kind: core.Allowed})
			}
		})
	}
	wg.Wait()
	assert.Len(t, out.lines(), 3)
	clock.Advance(time.Second)
	o(ctx, core.Event{Kind: core.Allowed})
	lines := out.lines()
	require.Len(t, lines, 4)
	assert.Contains(t, lines[3], "suppressed=797")
}

// A clock set back starts a new interval rather than suppressing until it
// catches up.
func TestClockSetBack(t *testing.T) {
	clock := newClock()
	logger, out := newLogger(slog.LevelInfo)
	o := newObserver(t, logger, sluiceslog.WithClock(clock), sluiceslog.WithLimit(1, time.Minute))
	failed := core.Event{Kind: core.StoreFailed, Err: errDown}
	o(context.Background(), failed)
	o(context.Background(), failed)
	clock.Advance(-time.Hour)
	o(context.Background(), failed)
	lines := out.lines()
	require.Len(t, lines, 3)
	assert.Contains(t, lines[1], "suppressed=1")
	assert.Contains(t, lines[2], "store failed")
}

// Events not logged, the hot path, allocate nothing: allowed requests, and
// denials while the logger is above Debug.
func TestEventsNotLoggedAllocateNothing(t *testing.T) {
	logger, out := newLogger(slog.LevelInfo)
	o := newObserver(t, logger)
	ctx := context.Background()
	for _, e := range []core.Event{
		{Kind: core.Allowed, Key: "k", Decision: core.Decision{Policy: perIP, Allowed: true}},
		{Kind: core.Denied, Key: "k", Decision: core.Decision{Policy: perIP}},
	} {
		assert.Zero(t, testing.AllocsPerRun(100, func() { o(ctx, e) }), "%v", e.Kind)
	}
	assert.Empty(t, out.lines())
}

// A concurrency limit's sheds reach the log through backpressure.Config.Observer,
// at Warn, bounded like store failures; its limit changes at Debug; a
// shaping queue's waits not at all unless asked for.
func TestConcurrencyLimitAndQueue(t *testing.T) {
	logger, out := newLogger(slog.LevelDebug)
	o := newObserver(t, logger, sluiceslog.WithClock(newClock()), sluiceslog.WithLimit(2, time.Minute),
		sluiceslog.WithLevel(core.Waited, slog.LevelInfo))
	slots, err := backpressure.New(backpressure.Config{Controller: backpressure.Static(1), Name: "api", Observer: o})
	require.NoError(t, err)
	ctx := context.Background()
	held, err := slots.Acquire(ctx, "", core.Default)
	require.NoError(t, err)
	defer held.Release()
	for range 3 {
		_, err := slots.Acquire(ctx, "", core.Sheddable)
		require.Error(t, err)
	}
	o(ctx, core.Event{Kind: core.LimitChanged, LimitName: "api", Limit: 12, Cause: "queueing", Baseline: 20 * time.Millisecond})
	o(ctx, core.Event{Kind: core.Queued, Decision: core.Decision{Policy: perIP, Allowed: true, Delay: 500 * time.Millisecond}})
	o(ctx, core.Event{Kind: core.Waited, Decision: core.Decision{Policy: perIP, Allowed: true, Delay: 500 * time.Millisecond}, Waited: 500 * time.Millisecond})
	o(ctx, core.Event{Kind: core.Shed, Decision: core.Decision{Policy: perIP, Allowed: true}, Waited: 200 * time.Millisecond, Err: context.Canceled})
	assert.Equal(t, []string{
		`level=DEBUG msg="sluice: concurrency limit changed" policy=api limit=1 cause=start`,
		`level=WARN msg="sluice: request shed" policy=api class=sheddable error="backpressure: sheddable request shed: saturated"`,
		`level=WARN msg="sluice: request shed" policy=api class=sheddable error="backpressure: sheddable request shed: saturated"`,
		`level=DEBUG msg="sluice: concurrency limit changed" policy=api limit=12 cause=queueing baseline=20ms`,
		`level=INFO msg="sluice: request waited" policy=per-ip waited=500ms`,
	}, out.lines(), "the third shed, and the shaping queue's, suppressed")
}
