package core

import (
	"errors"
	"fmt"
	"time"
)

// Option configures a Limiter; NewLimiter returns its error.
type Option func(*Limiter) error

// WithFailClosed denies the requests the store cannot decide, with a
// RetryAfter of retryAfter (at least 1s; zero means 1s), where by default a
// Limiter admits them. Either way the decision is Degraded with Limit zero
// (adapters answer 503); a fallback store, if any, decides first.
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

// WithFallback decides on s (typically a memory store) when the primary
// store fails, applying one share'th of every limit (Policy.Share) so that a
// fleet of share instances admits about one limit in all; a single instance
// passes 1, and share is 1 to 65,536. The failure mode applies only when the
// fallback fails too. docs/core.md states the fleet's bound.
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
// latency (Event.Latency is zero), sparing the two clock reads per decision
// that timing the store costs.
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

// WithClock sets the clock TakeTurn reckons turns and deadlines on and waits
// with (default SystemClock). Tests pass the sluicetest.ManualClock their
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
