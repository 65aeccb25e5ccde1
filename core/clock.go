package core

import (
	"context"
	"time"
)

// Clock tells the time and waits on it. Stores, limiters (rate and
// concurrency), observers and the client take one, so that tests move time
// by hand (sluicetest.ManualClock); production code uses SystemClock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// SleepUntil holds the caller until t, or until ctx is done if that
	// comes first: nil once t has passed, ctx.Err() otherwise.
	SleepUntil(ctx context.Context, t time.Time) error
	// AfterFunc calls f in its own goroutine once d has passed, unless
	// stop is called first; stop reports false if the call has started.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
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
