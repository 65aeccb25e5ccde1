package sluiceslog_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/sluice-go/sluice/sluicetest"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/observe/sluiceslog"
)

// A limiter whose store is down logs five failures, then one line counting
// those it suppressed in the rest of the interval.
func Example() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "latency" {
				return slog.Attr{} // for a stable output
			}
			return a
		},
	}))
	clock := sluicetest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	observe, err := sluiceslog.New(logger, sluiceslog.WithClock(clock))
	if err != nil {
		panic(err)
	}
	limiter, err := core.NewLimiter(downStore{}, core.WithObserver(observe))
	if err != nil {
		panic(err)
	}
	policy := core.MustPolicy(core.PolicyConfig{Name: "per-ip", Algorithm: core.GCRA, Quota: 10, Period: time.Second, Burst: 10})
	for range 100 {
		limiter.Take(context.Background(), core.Request{Key: "203.0.113.7", Policy: policy, Cost: 1})
	}
	clock.Advance(10 * time.Second)
	limiter.Take(context.Background(), core.Request{Key: "203.0.113.7", Policy: policy, Cost: 1})
	// Output:
	// level=WARN msg="sluice: store failed" policy=per-ip error="sluice: store take: redis: connection refused" allowed=true decided_by="failure mode"
	// level=WARN msg="sluice: store failed" policy=per-ip error="sluice: store take: redis: connection refused" allowed=true decided_by="failure mode"
	// level=WARN msg="sluice: store failed" policy=per-ip error="sluice: store take: redis: connection refused" allowed=true decided_by="failure mode"
	// level=WARN msg="sluice: store failed" policy=per-ip error="sluice: store take: redis: connection refused" allowed=true decided_by="failure mode"
	// level=WARN msg="sluice: store failed" policy=per-ip error="sluice: store take: redis: connection refused" allowed=true decided_by="failure mode"
	// level=WARN msg="sluice: log lines suppressed" outcome=store-failed suppressed=95 interval=10s
	// level=WARN msg="sluice: store failed" policy=per-ip error="sluice: store take: redis: connection refused" allowed=true decided_by="failure mode"
}

// downStore is a store whose server is down.
type downStore struct{}

var errRefused = errors.New("redis: connection refused")

func (downStore) Take(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, errRefused
}
func (downStore) TakeAll(context.Context, []core.Request, []core.Decision) error { return errRefused }
func (downStore) Adjust(context.Context, core.Request) (core.Decision, error) {
	return core.Decision{}, errRefused
}

// ReturnTurn gives a turn back as Adjust gives units back.
func (s downStore) ReturnTurn(ctx context.Context, r core.Request, _ time.Duration) (core.Decision, error) {
	r.Cost = -r.Cost
	return s.Adjust(ctx, r)
}
func (downStore) Reset(context.Context, string, *core.Policy) error { return errRefused }
