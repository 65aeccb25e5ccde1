package core

import (
	"context"
	"time"
)

// Clock tells the time. Stores, limiters (rate and concurrency) and
// observers take one so that tests can move time by hand
// (sluicetest.ManualClock); production code uses SystemClock.
//
// A clock may also hold callers and run timers on its own time, with the
// methods SystemClock and sluicetest.ManualClock have:
//
//	SleepUntil(ctx context.Context, t time.Time) error
//	AfterFunc(d time.Duration, f func()) (stop func() bool)
//
// A Limiter waits for a shaping queue's turn with SleepUntil, and a
// backpressure.Limiter bounds a queued request's wait with AfterFunc, when
// their clock has them; on a clock that only reads the time, they use real
// timers.
type Clock interface {
	Now() time.Time
}

// sleeper is a Clock that can hold a caller until a time of its own.
type sleeper interface {
	SleepUntil(ctx context.Context, t time.Time) error
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// SleepUntil waits until t, or until ctx is done if that comes first: nil
// once t has passed, ctx.Err() otherwise. Its timer is stopped on return.
func (SystemClock) SleepUntil(ctx context.Context, t time.Time) error {
	return sleepFor(ctx, time.Until(t))
}

// AfterFunc calls f in its own goroutine once d has passed, as
// time.AfterFunc does, unless stop is called first; stop reports false if
// the call has already started.
func (SystemClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}

func sleepFor(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
