package client

import (
	"context"
	"time"
)

// Clock is the package's only access to time. Tests inject a fake one so that
// nothing really sleeps; production code uses [SystemClock].
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits for d. It returns ctx.Err() as soon as ctx is done, even
	// mid-sleep, and nil when the full duration has passed. A d <= 0
	// returns at once (with ctx.Err() if ctx is already done).
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real [Clock]: [time.Now] and a timer.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits for d or until ctx is done, whichever comes first. The timer is
// stopped on return, so nothing is left running.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
