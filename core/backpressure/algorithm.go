package backpressure

import (
	"math"
	"time"
)

// Controller sets a Limiter's limit from the requests it completes: Static,
// AIMD and Gradient are the controllers this package has. A Limiter calls
// its controller under its lock: implementations need no locking of their
// own, and a controller value serves one Limiter only.
type Controller interface {
	// Limit returns the limit in force now.
	Limit() int
	// Update folds one completed request into the controller and returns
	// the limit from now on. The Limiter clamps it to at least 1.
	Update(s Sample) int
}

// Sample is one completed request, as a Limiter measured it.
type Sample struct {
	// At is when the request completed, on the Limiter's clock.
	At time.Time
	// Latency is the time from its admission to its completion. It does
	// not include time spent waiting in the queue.
	Latency time.Duration
	// InFlight is the number of requests in flight when it was admitted,
	// itself included: an algorithm grows its limit only while the limit is
	// what holds the service back, not while the service is idle.
	InFlight int
	// Room is the most requests its class could have had in flight when
	// it was admitted: the limit, less what Config.Headroom keeps from its
	// class. Zero stands for the limit (as in a Sample made by hand).
	Room int
	// Dropped reports a failure that says the service is overloaded: the
	// caller reported core.Failed, or the request took longer than
	// Config.MaxLatency.
	Dropped bool
}

// Start returns when the request was admitted.
func (s Sample) Start() time.Time { return s.At.Add(-s.Latency) }

// busy returns the requests in flight the request saw, on the scale of
// limit: with Headroom, a request of a lower class is admitted into a
// room smaller than the limit, and the last of it is the limit for that
// request (busy(limit) ≥ limit: the limit was holding requests back).
func (s Sample) busy(limit int) int {
	if s.Room <= 0 || s.Room >= limit {
		return s.InFlight
	}
	return int(min((int64(s.InFlight)*int64(limit)+int64(s.Room)-1)/int64(s.Room), MaxLimit))
}

// Static is a fixed limit: Static(64) admits 64 requests at a time, whatever
// their latency.
type Static int

// Limit returns s.
func (s Static) Limit() int { return int(s) }

// Update returns s: a static limit learns nothing.
func (s Static) Update(Sample) int { return int(s) }

// MaxLimit is the largest limit a controller may set; it keeps sums of
// limits and counts far from overflow.
const MaxLimit = 1 << 30

// clampLimit keeps an adaptive algorithm's limit within [lo, hi].
func clampLimit(v float64, lo, hi int) float64 {
	return math.Min(math.Max(v, float64(lo)), float64(hi))
}
