package backpressure

import "time"

// Clock is the Limiter's only access to time: latencies, waits and the
// algorithms' windows all read it, so that tests and simulations can run a
// Limiter on virtual time. Production code uses SystemClock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f, in a goroutine of its own, once d has passed,
	// unless the returned Timer is stopped first. The Limiter uses it to
	// bound how long a request waits.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call made by Clock.AfterFunc.
type Timer interface {
	// Stop cancels the call. It reports false when the call has already
	// started, or happened.
	Stop() bool
}

// SystemClock is the real Clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc returns time.AfterFunc(d, f).
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
