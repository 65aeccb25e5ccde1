package core

import (
	"errors"
	"fmt"
	"time"
)

// Option configures a Limiter. A Limiter is infrastructure: it takes
// functional options, as stores and observers do, while the limits
// themselves are described by config structs (PolicyConfig,
// backpressure.Config, admit.Config); see the package documentation,
// Options.
type Option func(*Limiter) error

// WithFailClosed denies the requests the store cannot decide, with a
// RetryAfter of retryAfter (at least 1s; zero means 1s), where by default
// a Limiter admits them (fails open). Either way the decision is marked
// Degraded and carries no figures (Limit zero), and the observer sees the
// failure; adapters answer a fail-closed denial with 503 Service
// Unavailable and Retry-After rather than 429, since the client did
// nothing wrong. A fallback store (WithFallback) decides first: the
// failure mode applies only when the fallback fails too.
func WithFailClosed(retryAfter time.Duration) Option {
	return func(l *Limiter) error {
		if retryAfter == 0 {
			retryAfter = time.Second
		}
		if retryAfter < time.Second {
			return fmt.Errorf("sluice: fail-closed retry-after must be at least 1s, got %v", retryAfter)
		}
		l.failClosed, l.failRetry = true, retryAfter
		return nil
	}
}

// WithFallback decides on s (typically an in-memory store) when the primary
// store fails: a local, per-instance approximation of the shared limit
// rather than no limit at all. It takes precedence over the failure mode,
// which applies only when the fallback fails too.
//
// The fallback applies one share'th of every limit (Policy.Share), for a
// fleet of share instances sharing one store: while the store is down, the
// fallbacks together then admit about what one limit admits, instead of
// share whole limits. A single instance passes 1; share is 1 to 65,536.
//
// The bound, per key and policy, for an outage of length T and a fleet of
// n = share instances: the fleet admits at most n×(Burst/n + 1) + Rate×T
// units (Burst/n rounded down, at least 1) for the bucket family, and
// n×max(Quota/n, 1) per window for the window family, on top of what the
// shared store admitted before it failed. A fallback keeps its state
// between outages, so a second outage soon after the first starts where
// the first left off. A request whose store call failed is always taken
// from the fallback, even if the shared store may have taken it too (a
// call that timed out after reaching Redis): it counts against both,
// never against neither.
func WithFallback(s Store, share int) Option {
	return func(l *Limiter) error {
		if s == nil {
			return errors.New("sluice: nil fallback store")
		}
		if share < 1 || share > maxShares {
			return fmt.Errorf("sluice: fallback share must be 1 to %d, got %d", maxShares, share)
		}
		l.fallback, l.share = s, share
		return nil
	}
}

// WithObserver reports every decision to o.
func WithObserver(o Observer) Option {
	return func(l *Limiter) error { l.observe = o; return nil }
}

// WithoutLatency reports events to the observer without the store's
// latency: Event.Latency is zero. Timing a store call takes two clock reads,
// which on virtual machines cost about as much as a whole decision of the
// memory store (a read of the monotonic clock, ~30 ns on kvm-clock); without
// them, an observed decision on the memory store reads the clock once, in the
// store, as an unobserved one does.
func WithoutLatency() Option {
	return func(l *Limiter) error { l.timed = false; return nil }
}

// WithNearLimit sets the fraction of Limit, in [0, 1], at or under which an
// allowed decision is reported as NearLimit (default 0.1).
func WithNearLimit(fraction float64) Option {
	return func(l *Limiter) error {
		if !(fraction >= 0 && fraction <= 1) {
			return fmt.Errorf("sluice: near-limit fraction must be in [0, 1], got %v", fraction)
		}
		l.nearLimit = fraction
		return nil
	}
}

// WithClock sets the clock TakeTurn holds queued requests on (default
// SystemClock): their turns are reckoned from its reading once the store
// has decided, and a context's deadline is compared with it. A clock with
// a method SleepUntil (see Clock) is waited on; any other is read, and
// waited on with a real timer. Tests pass the sluicetest.ManualClock their
// store runs on, and move it to release waiters.
func WithClock(c Clock) Option {
	return func(l *Limiter) error {
		if c == nil {
			return errors.New("sluice: nil clock")
		}
		l.clock = c
		return nil
	}
}
