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
	// LeakyQueue is the queue flavour of the leaky bucket, which shapes
	// traffic rather than only capping it: requests over the rate wait their
	// turn and are released one Interval apart, as nginx's limit_req with a
	// burst does. The first Burst units pass at once (nginx's delay=N is
	// Burst N+1; Burst 1 delays every request that is not alone); the next
	// ones pass with a Decision.Delay, their turn in the queue, which the
	// caller waits out (Limiter.TakeTurn) before serving them. A request whose
	// turn would come more than MaxDelay from now, or that would leave more
	// than MaxQueue units waiting, is denied at once and takes nothing: the
	// decision is made up front, never after a wait. A cost above Burst plus
	// the units that fit in the policy's MaxDelay (MaxDelay/Interval,
	// rounded down) is Impossible.
	//
	// A request that gives up waiting gives its turn back where it stood
	// (Limiter.TakeTurn does, with Store.ReturnTurn): the next request takes that turn, released
	// at that very instant, so the queue never releases two requests less
	// than an Interval apart (Burst aside), however many waiters give up. A
	// turn given back that nobody takes before it comes is lost: the queue
	// is idle at that instant.
	//
	// Its state is the time the queue drains, as GCRA's, and the turns
	// before it given back (its last 52). PolicyConfig.MaxDelay and
	// MaxQueue apply to it alone.
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

// MarshalText returns the algorithm's name, so that configuration files
// name algorithms as ParseText reads them.
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
