// Package core is sluice's rate-limiting model as its users configure it:
// policies (NewPolicy, or PerSecond and its kin for the common case), the
// decisions they produce, and the Limiter that puts a Store to work, with its
// failure modes, fallback and observer, and its waiting for the turns a
// shaping queue (LeakyQueue) hands out. It does no I/O and imports no
// framework.
//
// What a store author implements against lives apart: the Store contract is
// here, since users pass stores to NewLimiter, but the per-key state, the
// algorithms over it and the input checks every store must make are in
// store/storekit, and the conformance suite every store must pass is
// store/storetest.
package core

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
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
	// (Limiter.TakeTurn does, on a store that implements TurnReturner, as both
	// of this module's do): the next request takes that turn, released at
	// that very instant, so the queue never releases two requests less than
	// an Interval apart (Burst aside), however many waiters give up. A turn
	// given back that nobody takes before it comes is lost: the queue is
	// idle at that instant.
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

// ParseAlgorithm returns the algorithm with the given name ("token-bucket",
// "gcra", "leaky-bucket", "fixed-window", "sliding-log", "sliding-counter",
// "leaky-queue").
func ParseAlgorithm(name string) (Algorithm, error) {
	for a, n := range algorithmNames {
		if n != "" && n == name {
			return Algorithm(a), nil
		}
	}
	return 0, fmt.Errorf("sluice: unknown algorithm %q", name)
}

func (a Algorithm) valid() bool { return a >= TokenBucket && a <= LeakyQueue }

// bucket reports whether the algorithm has a burst capacity distinct from its
// quota (the bucket family) rather than a per-window quota.
func (a Algorithm) bucket() bool {
	return a == TokenBucket || a == GCRA || a == LeakyBucket || a == LeakyQueue
}

// Limits on policy values. They keep every intermediate value an exact integer
// in a Lua double (2^53) and every per-key state bounded.
const (
	// MaxPeriod is the longest period a policy may have.
	MaxPeriod = 366 * 24 * time.Hour
	// MaxQuota is the largest quota or burst of any policy.
	MaxQuota = 1 << 40
	// MaxLogQuota is the largest quota of a SlidingLog policy: its state holds
	// one entry per admitted request, up to Quota entries per key.
	MaxLogQuota = 100_000
	// MaxCounterQuota is the largest quota of a SlidingCounter policy, whose
	// two counts share one 64-bit word in the in-memory state.
	MaxCounterQuota = math.MaxInt32
	// MaxDebt is the most debt a key of the bucket family can be in: charges
	// (Adjust, Reconcile) past the limit stop adding to it once refilling
	// what the key owes would take MaxDebt. A key that deep in debt is shut
	// for a year; the bound keeps every time a store computes exact.
	MaxDebt = MaxPeriod
	// MaxWindowCount is the most units a window algorithm's count can hold,
	// its debt included: charges past it are not counted.
	MaxWindowCount = 1 << 50
)

// maxDebt is MaxDebt in µs.
const maxDebt = int64(MaxDebt / time.Microsecond)

// PolicyConfig describes a policy to build with NewPolicy.
type PolicyConfig struct {
	// Name identifies the policy in decisions, headers and store keys.
	// Printable ASCII, at most 64 bytes.
	Name string
	// Algorithm applies the quota.
	Algorithm Algorithm
	// Quota is the number of units per Period: the refill (or drain) rate of
	// the bucket family, the per-window allowance of the window family.
	Quota int64
	// Period is the time Quota is measured over; a whole number of
	// microseconds, at most MaxPeriod.
	Period time.Duration
	// Burst is the bucket capacity: the most units that can pass at once.
	// Required for TokenBucket, GCRA, LeakyBucket and LeakyQueue (whose
	// Burst units pass without waiting); must be zero for the window
	// algorithms, whose burst is their Quota.
	Burst int64
	// MaxDelay is the longest a LeakyQueue request may wait for its turn:
	// one whose turn comes later is denied at once. A whole number of
	// microseconds, at most MaxPeriod. LeakyQueue needs MaxDelay, MaxQueue
	// or both (then the tighter bound holds); the other algorithms, neither.
	MaxDelay time.Duration
	// MaxQueue is the most units a LeakyQueue key may have waiting at once,
	// nginx's burst less its delay: the kth unit waiting waits k Intervals,
	// so it bounds the wait at MaxQueue×Interval, which must be at most
	// MaxPeriod.
	MaxQueue int64
}

// Policy is a validated, immutable limit. Build one with NewPolicy and share
// it freely: stores and limiters only read it.
type Policy struct {
	name     string
	alg      Algorithm
	quota    int64
	period   int64 // microseconds
	burst    int64 // capacity: Burst for buckets, Quota for windows
	interval int64 // microseconds per unit, bucket family only
	maxDelay int64 // microseconds, LeakyQueue only: its tighter bound on waiting
	id       uint64
}

// PolicyError reports an invalid policy field.
type PolicyError struct {
	Policy string // the policy's name, possibly empty
	Field  string // the PolicyConfig field at fault
	Reason string
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("sluice: policy %q: %s %s", e.Policy, e.Field, e.Reason)
}

// ErrInvalidPolicy is matched by every *PolicyError through errors.Is.
var ErrInvalidPolicy = errors.New("sluice: invalid policy")

// Is makes errors.Is(err, ErrInvalidPolicy) true for policy errors.
func (e *PolicyError) Is(target error) bool { return target == ErrInvalidPolicy }

// NewPolicy validates c and returns the policy it describes. The error, a
// *PolicyError, names the field at fault.
func NewPolicy(c PolicyConfig) (*Policy, error) {
	bad := func(field, reason string) (*Policy, error) {
		return nil, &PolicyError{Policy: c.Name, Field: field, Reason: reason}
	}
	if c.Name == "" {
		return bad("Name", "is empty")
	}
	if len(c.Name) > 64 {
		return bad("Name", "is longer than 64 bytes")
	}
	for i := 0; i < len(c.Name); i++ {
		// Names go into structured header fields as sf-strings, which allow
		// printable ASCII only, and into Redis keys, where braces would
		// break the hash tag.
		if ch := c.Name[i]; ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\' || ch == '{' || ch == '}' {
			return bad("Name", fmt.Sprintf("has character %q; use printable ASCII without quotes, backslashes or braces", ch))
		}
	}
	if !c.Algorithm.valid() {
		return bad("Algorithm", fmt.Sprintf("is unknown (%d)", c.Algorithm))
	}
	if c.Quota <= 0 {
		return bad("Quota", fmt.Sprintf("must be positive, got %d", c.Quota))
	}
	if c.Quota > MaxQuota {
		return bad("Quota", fmt.Sprintf("must be at most %d, got %d", int64(MaxQuota), c.Quota))
	}
	if c.Period <= 0 {
		return bad("Period", fmt.Sprintf("must be positive, got %v", c.Period))
	}
	if c.Period > MaxPeriod {
		return bad("Period", fmt.Sprintf("must be at most %v, got %v", MaxPeriod, c.Period))
	}
	if c.Period%time.Microsecond != 0 {
		return bad("Period", fmt.Sprintf("must be a whole number of microseconds, got %v", c.Period))
	}
	if c.Algorithm != LeakyQueue {
		if c.MaxDelay != 0 {
			return bad("MaxDelay", fmt.Sprintf("does not apply to %v; leave it zero", c.Algorithm))
		}
		if c.MaxQueue != 0 {
			return bad("MaxQueue", fmt.Sprintf("does not apply to %v; leave it zero", c.Algorithm))
		}
	}
	p := &Policy{
		name:   c.Name,
		alg:    c.Algorithm,
		quota:  c.Quota,
		period: c.Period.Microseconds(),
	}
	switch {
	case c.Algorithm.bucket():
		if c.Burst <= 0 {
			return bad("Burst", fmt.Sprintf("must be positive for %v, got %d", c.Algorithm, c.Burst))
		}
		if c.Burst > MaxQuota {
			return bad("Burst", fmt.Sprintf("must be at most %d, got %d", int64(MaxQuota), c.Burst))
		}
		p.burst = c.Burst
		p.interval = p.period / p.quota
		if p.interval == 0 {
			return bad("Quota", fmt.Sprintf("%d per %v is more than one unit per microsecond", c.Quota, c.Period))
		}
		if p.burst > (1<<52)/p.interval {
			return bad("Burst", fmt.Sprintf("%d at one unit per %dµs takes too long to refill", c.Burst, p.interval))
		}
		if c.Algorithm == LeakyQueue {
			bound, err := queueBound(c, p.interval)
			if err != nil {
				return nil, err
			}
			p.maxDelay = bound
		}
	default:
		if c.Burst != 0 {
			return bad("Burst", fmt.Sprintf("does not apply to %v (its burst is Quota); leave it zero", c.Algorithm))
		}
		p.burst = c.Quota
		if c.Algorithm == SlidingLog && c.Quota > MaxLogQuota {
			return bad("Quota", fmt.Sprintf("%d is too large for a sliding log (at most %d entries per key); use sliding-counter", c.Quota, MaxLogQuota))
		}
		if c.Algorithm == SlidingCounter && c.Quota > MaxCounterQuota {
			return bad("Quota", fmt.Sprintf("must be at most %d for sliding-counter, got %d", MaxCounterQuota, c.Quota))
		}
	}
	p.id = p.fingerprint()
	return p, nil
}

// queueBound validates a LeakyQueue's MaxDelay and MaxQueue and returns the
// tighter of the two bounds on waiting, in µs. Each is at most MaxPeriod,
// which with the Burst's bound keeps every time the queue computes an exact
// integer in a Lua double.
func queueBound(c PolicyConfig, interval int64) (int64, error) {
	bad := func(field, reason string) (int64, error) {
		return 0, &PolicyError{Policy: c.Name, Field: field, Reason: reason}
	}
	const maxPeriod = int64(MaxPeriod / time.Microsecond)
	bound := maxPeriod
	switch {
	case c.MaxDelay < 0:
		return bad("MaxDelay", fmt.Sprintf("must not be negative, got %v", c.MaxDelay))
	case c.MaxDelay > MaxPeriod:
		return bad("MaxDelay", fmt.Sprintf("must be at most %v, got %v", MaxPeriod, c.MaxDelay))
	case c.MaxDelay%time.Microsecond != 0:
		return bad("MaxDelay", fmt.Sprintf("must be a whole number of microseconds, got %v", c.MaxDelay))
	case c.MaxDelay > 0:
		bound = c.MaxDelay.Microseconds()
	}
	switch {
	case c.MaxQueue < 0:
		return bad("MaxQueue", fmt.Sprintf("must not be negative, got %d", c.MaxQueue))
	case c.MaxQueue > maxPeriod/interval:
		return bad("MaxQueue", fmt.Sprintf("%d at one unit per %dµs waits longer than MaxPeriod", c.MaxQueue, interval))
	case c.MaxQueue > 0:
		bound = min(bound, c.MaxQueue*interval)
	case c.MaxDelay == 0:
		return bad("MaxDelay", "and MaxQueue are both zero; leaky-queue needs a bound on waiting: set either or both")
	}
	return bound, nil
}

// MustPolicy is NewPolicy for policies fixed at compile time: it panics on an
// invalid PolicyConfig. Use NewPolicy for configuration read at run time.
func MustPolicy(c PolicyConfig) *Policy {
	p, err := NewPolicy(c)
	if err != nil {
		panic(err)
	}
	return p
}

// PerSecond returns a policy admitting n requests a second, up to n at
// once: GCRA with Quota n, Period 1s and Burst n, named "<n>-per-second".
// It is MustPolicy for the common case, so it panics if n is not 1 to
// 1,000,000 (one request a microsecond). Build anything else with NewPolicy.
func PerSecond(n int64) *Policy { return per(n, time.Second, "second") }

// PerMinute is PerSecond for n requests a minute, named "<n>-per-minute".
func PerMinute(n int64) *Policy { return per(n, time.Minute, "minute") }

// PerHour is PerSecond for n requests an hour, named "<n>-per-hour".
func PerHour(n int64) *Policy { return per(n, time.Hour, "hour") }

func per(n int64, period time.Duration, unit string) *Policy {
	return MustPolicy(PolicyConfig{
		Name:      strconv.FormatInt(n, 10) + "-per-" + unit,
		Algorithm: GCRA,
		Quota:     n,
		Period:    period,
		Burst:     n,
	})
}

// MaxShares is the largest n Policy.Share accepts.
const MaxShares = 1 << 16

// Share returns p scaled down to one nth of its limit, for one of n parties
// that enforce it together without sharing state: an instance's fallback
// store while the shared store is down (WithFallbackShare), or one of n keys
// a hot limit is split over.
//
//   - The bucket family keeps p's rate exactly across the n shares: each
//     share refills one unit every n Intervals, and holds Burst/n units
//     rounded down, but at least one.
//   - The window family grants Quota/n units per Period, rounded down, but
//     at least one.
//   - A LeakyQueue share keeps p's MaxDelay: each party's queue releases
//     at a nth of the rate and holds its requests no longer than p does.
//
// So n parties applying their shares admit together at most what p admits,
// plus, when n exceeds p's Burst, one unit per party per burst. The share
// keeps p's name and algorithm, and has a fingerprint of its own. Share(1)
// is p. The error names the field that cannot be shared so finely: a
// bucket's refill slower than MaxPeriod a unit, or n out of 1 to MaxShares.
func (p *Policy) Share(n int) (*Policy, error) {
	if n < 1 || n > MaxShares {
		return nil, &PolicyError{Policy: p.name, Field: "Share", Reason: fmt.Sprintf("must be 1 to %d, got %d", MaxShares, n)}
	}
	if n == 1 {
		return p, nil
	}
	q := *p
	if p.alg.bucket() {
		q.interval = p.interval * int64(n)
		if q.interval > maxDebt {
			return nil, &PolicyError{Policy: p.name, Field: "Quota", Reason: fmt.Sprintf("shared %d ways refills one unit every %v, beyond MaxPeriod", n, time.Duration(q.interval)*time.Microsecond)}
		}
		q.quota, q.period = 1, q.interval
		q.burst = max(p.burst/int64(n), 1)
	} else {
		q.quota = max(p.quota/int64(n), 1)
		q.burst = q.quota
	}
	q.id = q.fingerprint()
	return &q, nil
}

// Name returns the policy's name.
func (p *Policy) Name() string { return p.name }

// Algorithm returns the policy's algorithm.
func (p *Policy) Algorithm() Algorithm { return p.alg }

// Quota returns the units allowed per Period.
func (p *Policy) Quota() int64 { return p.quota }

// Period returns the time Quota is measured over.
func (p *Policy) Period() time.Duration { return time.Duration(p.period) * time.Microsecond }

// Burst returns the most units that can pass at once: the bucket capacity for
// the bucket family, Quota for the window family. It is also the Limit every
// Decision of this policy reports.
func (p *Policy) Burst() int64 { return p.burst }

// Interval returns the time one unit takes to refill (drain, for the leaky
// bucket; the gap between two releases, for the leaky queue): Period/Quota
// rounded down to a whole microsecond. It is zero for the window algorithms.
func (p *Policy) Interval() time.Duration { return time.Duration(p.interval) * time.Microsecond }

// MaxDelay returns the longest a LeakyQueue request may wait for its turn:
// PolicyConfig.MaxDelay or MaxQueue Intervals, whichever is shorter. It is
// zero for the other algorithms, whose requests never wait.
func (p *Policy) MaxDelay() time.Duration { return time.Duration(p.maxDelay) * time.Microsecond }

// Window returns the time over which Burst units are granted, the "w" of the
// RateLimit-Policy header field: Period for the window family, and the time an
// empty bucket takes to fill (Burst×Interval) for the bucket family.
func (p *Policy) Window() time.Duration {
	if p.alg.bucket() {
		return time.Duration(p.burst*p.interval) * time.Microsecond
	}
	return p.Period()
}

// Fingerprint is a stable 64-bit digest of the policy's name and parameters:
// equal on every process for equal policies, so stores shared by many
// instances can derive key names from it.
func (p *Policy) Fingerprint() uint64 { return p.id }

// String describes the policy, e.g. "per-ip: token-bucket 2/1s burst 10"
// or "upstream: leaky-queue 2/1s burst 1 max delay 5s".
func (p *Policy) String() string {
	s := p.name + ": " + p.alg.String() + " " + strconv.FormatInt(p.quota, 10) + "/" + p.Period().String()
	if p.alg.bucket() {
		s += " burst " + strconv.FormatInt(p.burst, 10)
	}
	if p.alg == LeakyQueue {
		s += " max delay " + p.MaxDelay().String()
	}
	return s
}

// fingerprint is FNV-1a over the canonical description: cheap, stable across
// processes, and only ever hashed once per policy.
func (p *Policy) fingerprint() uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, s := range []string{p.name, "\x00", p.alg.String(), "\x00",
		strconv.FormatInt(p.quota, 10), "/", strconv.FormatInt(p.period, 10), "/", strconv.FormatInt(p.burst, 10)} {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime
		}
	}
	if p.alg == LeakyQueue {
		// Only the queue hashes its bound, so that the other algorithms'
		// fingerprints, and the store keys named by them, stay as they were.
		for _, c := range "/" + strconv.FormatInt(p.maxDelay, 10) {
			h ^= uint64(c)
			h *= prime
		}
	}
	return h
}
