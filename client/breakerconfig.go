package client

import (
	"cmp"
	"errors"
	"time"

	"github.com/sluice-go/sluice/core"
)

// BreakerConfig configures a [Breaker]. Zero fields take defaults (the zero
// config trips after 5 failures in a row); a negative count or duration, or
// a value out of its stated range, makes [NewBreaker] fail.
type BreakerConfig struct {
	// Name identifies the breaker in errors and hooks. The transport layer
	// sets it to the host.
	Name string
	// ConsecutiveFailures trips the breaker after this many failures in a
	// row. 0 means 5 when FailureRate is 0 too, and no such trigger when
	// FailureRate is set.
	ConsecutiveFailures int
	// FailureRate trips the breaker when failures/calls over Window reach it
	// (0 < rate <= 1), once the window holds at least MinCalls calls.
	// 0 (the default) disables this trigger.
	FailureRate float64
	// MinCalls is the minimum number of calls in the window before
	// FailureRate applies. Default 20.
	MinCalls int
	// Window is the span of the rolling window, kept as Buckets buckets of
	// Window/Buckets each. Defaults 10s and 10; at most 1000 buckets, and
	// each at least a nanosecond wide.
	Window  time.Duration
	Buckets int
	// OpenTimeout is how long the breaker stays open before half-opening.
	// Default 10s.
	OpenTimeout time.Duration
	// HalfOpenProbes is how many calls half-open lets through; all must
	// succeed to close it. Default 1.
	HalfOpenProbes int
	// MaxHold caps how far a Retry-After may push the end of the open
	// period beyond OpenTimeout. Default 5 minutes.
	MaxHold time.Duration
	// Classify maps the error of a call made through Execute or CallThrough
	// to an outcome. The default: nil is Succeeded, context.Canceled is
	// Ignored, anything else Failed.
	Classify func(error) core.Outcome
	// OnStateChange, if set, is called after every state change, outside
	// the breaker's lock, from the goroutine that caused it.
	OnStateChange func(name string, from, to BreakerState)
	// Clock defaults to core.SystemClock.
	Clock core.Clock
}

// Default breaker parameters.
const (
	DefaultBreakerConsecutiveFailures = 5
	DefaultBreakerMinCalls            = 20
	DefaultBreakerWindow              = 10 * time.Second
	DefaultBreakerBuckets             = 10
	DefaultBreakerOpenTimeout         = 10 * time.Second
	DefaultBreakerHalfOpenProbes      = 1
	DefaultBreakerMaxHold             = 5 * time.Minute
)

// maxBuckets bounds BreakerConfig.Buckets: each is memory held per host.
const maxBuckets = 1000

// validate reports every field out of its range, each error wrapping
// ErrInvalidConfig.
func (c BreakerConfig) validate() error {
	var errs []error
	negative := func(field string, bad bool, v any) {
		if bad {
			errs = append(errs, invalid("BreakerConfig.%s %v is negative", field, v))
		}
	}
	negative("ConsecutiveFailures", c.ConsecutiveFailures < 0, c.ConsecutiveFailures)
	negative("MinCalls", c.MinCalls < 0, c.MinCalls)
	negative("Window", c.Window < 0, c.Window)
	negative("Buckets", c.Buckets < 0, c.Buckets)
	negative("OpenTimeout", c.OpenTimeout < 0, c.OpenTimeout)
	negative("HalfOpenProbes", c.HalfOpenProbes < 0, c.HalfOpenProbes)
	negative("MaxHold", c.MaxHold < 0, c.MaxHold)
	if !(c.FailureRate >= 0 && c.FailureRate <= 1) { // NaN too
		errs = append(errs, invalid("BreakerConfig.FailureRate %v is not in (0, 1] (or 0 to disable)", c.FailureRate))
	}
	if c.Buckets > maxBuckets {
		errs = append(errs, invalid("BreakerConfig.Buckets %d is more than %d", c.Buckets, maxBuckets))
	}
	if d := c.withDefaults(); c.Window >= 0 && c.Buckets >= 0 && d.Window < time.Duration(d.Buckets) {
		errs = append(errs, invalid("BreakerConfig.Window %v is too short for %d buckets", d.Window, d.Buckets))
	}
	return errors.Join(errs...)
}

// withDefaults fills in zero fields of a validated config.
func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.ConsecutiveFailures == 0 && c.FailureRate == 0 {
		c.ConsecutiveFailures = DefaultBreakerConsecutiveFailures
	}
	c.MinCalls = cmp.Or(c.MinCalls, DefaultBreakerMinCalls)
	c.Window = cmp.Or(c.Window, DefaultBreakerWindow)
	c.Buckets = cmp.Or(c.Buckets, DefaultBreakerBuckets)
	c.OpenTimeout = cmp.Or(c.OpenTimeout, DefaultBreakerOpenTimeout)
	c.HalfOpenProbes = cmp.Or(c.HalfOpenProbes, DefaultBreakerHalfOpenProbes)
	c.MaxHold = cmp.Or(c.MaxHold, DefaultBreakerMaxHold)
	if c.Classify == nil {
		c.Classify = defaultClassify
	}
	if c.Clock == nil {
		c.Clock = core.SystemClock{}
	}
	return c
}
