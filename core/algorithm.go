package core

import (
	"fmt"
	"strconv"
)

// Algorithm names a rate-limiting algorithm.
type Algorithm uint8

// The algorithms. The zero value is invalid so that a forgotten field is an
// error rather than a silent default.
const (
	// TokenBucket holds up to Burst tokens, refilled at Quota per Period;
	// a request spends Cost tokens. State: tokens and the time they were exact.
	TokenBucket Algorithm = iota + 1
	// GCRA is the token bucket expressed as one "theoretical arrival time".
	// Its decisions equal TokenBucket's; its state is a single number.
	GCRA
	// LeakyBucket is the meter flavour of the leaky bucket: a level that
	// drains at Quota per Period and overflows above Burst. A request it
	// admits passes at once; its decisions equal TokenBucket's. LeakyQueue is
	// the queue flavour.
	LeakyBucket
	// FixedWindow counts units in windows of Period aligned to the Unix epoch.
	// It admits up to 2×Quota across a window boundary.
	FixedWindow
	// SlidingLog records each admitted request and counts those inside the
	// trailing Period. Exact, but its state grows with Quota.
	SlidingLog
	// SlidingCounter weights the previous fixed window's count by how much of
	// it the trailing Period still overlaps. storekit documents its bound.
	SlidingCounter
	// LeakyQueue is the queue flavour of the leaky bucket: it shapes traffic
	// as nginx's limit_req with a burst does. The first Burst units pass at
	// once; later ones are granted with a Decision.Delay, their turn, one
	// Interval apart, which the caller waits out (Limiter.TakeTurn). A
	// request whose turn would come past PolicyConfig.MaxDelay, or that would
	// leave more than MaxQueue units waiting, is denied at once and takes
	// nothing.
	LeakyQueue
)

var algorithmNames = [...]string{
	TokenBucket:    "token-bucket",
	GCRA:           "gcra",
	LeakyBucket:    "leaky-bucket",
	FixedWindow:    "fixed-window",
	SlidingLog:     "sliding-log",
	SlidingCounter: "sliding-counter",
	LeakyQueue:     "leaky-queue",
}

// String returns the algorithm's name, as ParseAlgorithm accepts it.
func (a Algorithm) String() string {
	if a.valid() {
		return algorithmNames[a]
	}
	return "Algorithm(" + strconv.Itoa(int(a)) + ")"
}

// MarshalText returns the algorithm's name, as UnmarshalText reads it.
func (a Algorithm) MarshalText() ([]byte, error) {
	if !a.valid() {
		return nil, fmt.Errorf("sluice: unknown algorithm %d", uint8(a))
	}
	return []byte(algorithmNames[a]), nil
}

// UnmarshalText sets a to the algorithm with the given name
// ("token-bucket", "gcra", "leaky-bucket", "fixed-window", "sliding-log",
// "sliding-counter", "leaky-queue"), as configuration decoders
// (encoding/json, flag.TextVar) call it.
func (a *Algorithm) UnmarshalText(name []byte) error {
	for v, n := range algorithmNames {
		if n != "" && n == string(name) {
			*a = Algorithm(v)
			return nil
		}
	}
	return fmt.Errorf("sluice: unknown algorithm %q", name)
}

func (a Algorithm) valid() bool { return a >= TokenBucket && a <= LeakyQueue }

// bucket reports whether the algorithm has a burst capacity distinct from its
// quota (the bucket family) rather than a per-window quota.
func (a Algorithm) bucket() bool {
	return a == TokenBucket || a == GCRA || a == LeakyBucket || a == LeakyQueue
}
