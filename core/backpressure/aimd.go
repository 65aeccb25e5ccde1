package backpressure

import (
	"fmt"
	"math"
	"time"
)

// AIMD is a loss-based limit: it grows by √limit requests per round trip
// while requests succeed, and shrinks by Backoff when one is dropped (a
// core.Failed outcome, or a request slower than Config.MaxLatency) or when a
// round trip's mean latency exceeds Tolerance × its measured baseline. It
// needs no setting that depends on the service; docs/backpressure.md says
// how it differs from Netflix's AIMDLimit, and why.
type AIMD struct {
	limit     float64
	min, max  int
	backoff   float64
	tolerance float64   // < 0: latency is not judged
	cutAt     time.Time // when the limit last shrank
	cause     Cause
	base      baseline

	// The round trip being judged: requests admitted from winStart on.
	winStart   time.Time
	winSum     float64 // nanoseconds
	winN       int
	winBusiest int
	winFlight  float64 // the sum of the requests in flight each of them saw
	winGrowth  float64 // the growth its successes earned, applied if it did not queue
}

// AIMDConfig configures an AIMD limit. Zero fields take their defaults.
type AIMDConfig struct {
	// Initial is the limit to start from, once the baseline is measured
	// (default 20, within Min and Max).
	Initial int
	// Min and Max bound the limit (defaults 1 and 1000).
	Min, Max int
	// Backoff multiplies the limit on a drop, in [0.5, 1) (default 0.9).
	// The limit always shrinks by at least one.
	Backoff float64
	// Tolerance is how far above the baseline a round trip's mean latency
	// may be without counting as queueing, as a factor in [1, 10] (default
	// 1.5); negative: latency is not judged (drops alone move the limit).
	Tolerance float64
	// ProbeInterval is the time between two scheduled measurements of the
	// baseline (default 60s); a negative value schedules none after the
	// first.
	ProbeInterval time.Duration
	// ProbeSamples is the number of requests each step of a measurement
	// of the baseline takes, admitted with the step full (default 20);
	// half as many decide a step whose answer is clear.
	ProbeSamples int
}

// aimdWindow is the fewest requests a round trip is judged over.
const aimdWindow = 10

// NewAIMD returns an AIMD limit, or an error naming the field at fault.
// Unless its Tolerance is negative, it starts by measuring its baseline:
// until the probe's first step has measured ProbeSamples requests admitted
// with it full, its limit is half of Initial (within Min and Max).
func NewAIMD(c AIMDConfig) (*AIMD, error) {
	c = c.withDefaults()
	if err := checkBounds("AIMD", c.Initial, c.Min, c.Max); err != nil {
		return nil, err
	}
	switch {
	case !(c.Backoff >= 0.5 && c.Backoff < 1):
		return nil, fmt.Errorf("backpressure: AIMD backoff must be in [0.5, 1), got %v", c.Backoff)
	case !(c.Tolerance < 0 || (c.Tolerance >= 1 && c.Tolerance <= 10)):
		return nil, fmt.Errorf("backpressure: AIMD tolerance must be in [1, 10], or negative, got %v", c.Tolerance)
	case c.ProbeSamples < 1:
		return nil, fmt.Errorf("backpressure: AIMD probe samples must be positive, got %d", c.ProbeSamples)
	}
	a := &AIMD{limit: float64(c.Initial), min: c.Min, max: c.Max, backoff: c.Backoff, tolerance: c.Tolerance,
		base: baseline{floor: c.Min, samples: c.ProbeSamples, interval: c.ProbeInterval}}
	if a.tolerance > 0 {
		a.limit = a.base.start(time.Time{}, a.limit)
	}
	return a, nil
}

func (c AIMDConfig) withDefaults() AIMDConfig {
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
	if c.Tolerance == 0 {
		c.Tolerance = 1.5
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = time.Minute
	}
	if c.ProbeSamples == 0 {
		c.ProbeSamples = 20
	}
	return c
}

// Limit returns the current limit.
func (a *AIMD) Limit() int { return int(a.limit) }

// Baseline returns the latency last measured at a low concurrency, or zero
// before the first measurement ends (and for ever, with a negative
// Tolerance).
func (a *AIMD) Baseline() time.Duration { return a.base.value }

// Cause returns why the limit last moved (zero before it has).
func (a *AIMD) Cause() Cause { return a.cause }

// Update applies one sample: a drop shrinks the limit; a success while at
// least half the slots were busy grows it by 1/√limit, once its round trip
// is over and did not queue; and a round trip whose requests queued
// shrinks it.
func (a *AIMD) Update(s Sample) int {
	if a.tolerance > 0 {
		switch a.base.add(s) {
		case probed:
			a.limit, a.cause = clampLimit(a.base.saved, a.min, a.max), Probed
			a.openWindow(s.At)
			return int(a.limit)
		case stepDown:
			a.limit = float64(a.base.level)
			a.openWindow(s.At)
			return int(a.limit)
		}
		if a.base.probing {
			return int(a.limit)
		}
		if a.base.due(s.At) {
			a.probe(s.At)
			return int(a.limit)
		}
	}
	busy := s.busy(int(a.limit))
	switch {
	case s.Dropped:
		if !s.Start().Before(a.cutAt) { // else admitted under a limit already cut
			a.cut(s.At, Drops)
			a.base.calm()
		}
		return int(a.limit)
	case a.tolerance < 0:
		if 2*busy >= int(a.limit) {
			a.grow(1 / math.Sqrt(a.limit))
		}
		return int(a.limit)
	case 2*busy >= int(a.limit):
		a.winGrowth += 1 / math.Sqrt(a.limit)
	}
	if !s.Start().Before(a.winStart) {
		a.winSum += float64(s.Latency)
		a.winN++
		a.winBusiest = max(a.winBusiest, busy)
		a.winFlight += float64(busy)
		// At least a limit of requests, and twice their mean latency: the
		// first requests admitted in the window to complete are the
		// shortest, and a window of them alone would judge the service
		// faster than it is.
		if a.winN >= max(aimdWindow, int(a.limit)) && float64(s.At.Sub(a.winStart)) >= 2*a.winSum/float64(a.winN) {
			a.endWindow(s.At)
		}
	}
	return int(a.limit)
}

// endWindow judges the round trip just ended, and opens the next.
func (a *AIMD) endWindow(now time.Time) {
	a.base.used(2*a.winBusiest >= int(a.limit))
	if 2*a.winBusiest < int(a.limit) {
		a.base.calm() // the limit held nobody back
		a.openWindow(now)
		return
	}
	// (cut and probe open the next window: read this one first)
	was, latency, inFlight := a.limit, a.winSum/float64(a.winN), a.winFlight/float64(a.winN)
	slow := latency > a.tolerance*float64(a.base.value)
	held := a.winBusiest >= int(was) // the limit held requests back
	if slow {
		a.cut(now, Queueing)
	} else {
		// A window lasts two round trips or so: its growth is capped at
		// one round trip's, lest one step overshoot by more than a cut
		// takes back.
		a.grow(min(a.winGrowth, math.Sqrt(a.limit)))
	}
	if a.base.judge(slow && held, latency*a.tolerance < float64(a.base.value), latency, inFlight, was, a.limit) {
		a.probe(now)
		return
	}
	a.openWindow(now)
}

// grow adds n to the limit.
func (a *AIMD) grow(n float64) {
	if n > 0 {
		a.limit = clampLimit(a.limit+n, a.min, a.max)
		a.cause = Grew
	}
}

// cut shrinks the limit by the backoff, by one at least.
func (a *AIMD) cut(now time.Time, why Cause) {
	a.limit = clampLimit(min(a.limit*a.backoff, a.limit-1), a.min, a.max)
	a.cutAt, a.cause = now, why
	a.openWindow(now)
}

// probe lowers the limit to the first step of a probe (see baseline).
func (a *AIMD) probe(now time.Time) {
	a.limit, a.cause = a.base.start(now, a.limit), Probing
	a.openWindow(now)
}

func (a *AIMD) openWindow(now time.Time) {
	a.winStart, a.winSum, a.winN, a.winBusiest, a.winFlight, a.winGrowth = now, 0, 0, 0, 0, 0
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
