package backpressure

import (
	"fmt"
	"time"
)

// AIMD is a loss-based limit: it grows by one request per round trip while
// requests succeed, and shrinks by a factor when one is dropped (an error
// the caller reports as Dropped, or a request slower than
// Config.MaxLatency), as TCP congestion control does with its window. It
// needs drops to find the service's capacity: give the Limiter a
// MaxLatency, the latency past which the service is no longer healthy.
//
// It follows Netflix concurrency-limits' AIMDLimit, with two deliberate
// differences:
//
//   - It grows by 1/limit per successful request, one per round trip when
//     every slot is busy (TCP's additive increase), not by one per request.
//     Growing by one per request doubles the limit every round trip, so
//     between two drops it overshoots the service's capacity by as much as
//     the limit itself, and the queue it builds meanwhile is the latency the
//     limit is there to prevent.
//   - It backs off at most once per round trip: a drop counts only if the
//     request was admitted after the last decrease (TCP NewReno's one cut
//     per window of losses). The requests admitted under the old limit all
//     see the same overload; counting each of them would cut the limit to
//     its floor for one event.
//
// Like AIMDLimit, it does not grow while fewer than half its slots are in
// use, since successes then say nothing about the limit.
type AIMD struct {
	limit    float64
	min, max int
	backoff  float64
	cutAt    time.Time // when the limit last shrank
}

// AIMDConfig configures an AIMD limit. Zero fields take their defaults.
type AIMDConfig struct {
	// Initial is the limit to start from (default 20, or Min if higher).
	Initial int
	// Min and Max bound the limit (defaults 1 and 1000).
	Min, Max int
	// Backoff multiplies the limit on a drop, in [0.5, 1) (default 0.9).
	// The limit always shrinks by at least one.
	Backoff float64
}

// NewAIMD returns an AIMD limit, or an error naming the field at fault.
func NewAIMD(c AIMDConfig) (*AIMD, error) {
	if c.Min == 0 {
		c.Min = 1
	}
	if c.Max == 0 {
		c.Max = 1000
	}
	if c.Initial == 0 {
		c.Initial = min(max(20, c.Min), c.Max)
	}
	if c.Backoff == 0 {
		c.Backoff = 0.9
	}
	if err := checkBounds("AIMD", c.Initial, c.Min, c.Max); err != nil {
		return nil, err
	}
	if !(c.Backoff >= 0.5 && c.Backoff < 1) {
		return nil, fmt.Errorf("backpressure: AIMD backoff must be in [0.5, 1), got %v", c.Backoff)
	}
	return &AIMD{limit: float64(c.Initial), min: c.Min, max: c.Max, backoff: c.Backoff}, nil
}

// Limit returns the current limit.
func (a *AIMD) Limit() int { return int(a.limit) }

// Update applies one sample: a drop shrinks the limit, a success while at
// least half the slots were busy grows it by 1/limit.
func (a *AIMD) Update(s Sample) int {
	switch {
	case s.Dropped:
		if s.Start().Before(a.cutAt) {
			break // admitted under the limit that has already been cut
		}
		a.limit = clampLimit(min(a.limit*a.backoff, a.limit-1), a.min, a.max)
		a.cutAt = s.At
	case 2*s.InFlight >= int(a.limit):
		a.limit = clampLimit(a.limit+1/a.limit, a.min, a.max)
	}
	return int(a.limit)
}

// checkBounds checks an adaptive algorithm's initial, minimum and maximum
// limits.
func checkBounds(alg string, initial, lo, hi int) error {
	switch {
	case lo < 1 || lo > MaxLimit:
		return fmt.Errorf("backpressure: %s minimum limit must be 1 to %d, got %d", alg, MaxLimit, lo)
	case hi < lo || hi > MaxLimit:
		return fmt.Errorf("backpressure: %s maximum limit must be %d (the minimum) to %d, got %d", alg, lo, MaxLimit, hi)
	case initial < lo || initial > hi:
		return fmt.Errorf("backpressure: %s initial limit must be within [%d, %d], got %d", alg, lo, hi, initial)
	}
	return nil
}
