package core

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Bounds on policy values, documented on PolicyConfig's fields. They keep
// every intermediate value an exact integer in a Lua double (2^53) and every
// per-key state bounded; package storekit, which stores compute with, states
// them again for store authors.
const (
	maxPeriod       = 366 * 24 * time.Hour // the longest Period, MaxDelay or queue wait
	maxQuota        = 1 << 40              // the largest Quota or Burst
	maxLogQuota     = 100_000              // SlidingLog: one entry per admitted request
	maxCounterQuota = math.MaxInt32        // SlidingCounter: two counts share one 64-bit word
	// maxDebt is how deep in debt (Adjust, Reconcile) a bucket key may go,
	// in µs of refill: a key that deep is shut for a year.
	maxDebt = int64(maxPeriod / time.Microsecond)
)

// PolicyConfig describes a policy to build with NewPolicy.
type PolicyConfig struct {
	// Name identifies the policy in decisions, headers and store keys.
	// Printable ASCII, at most 64 bytes.
	Name string
	// Algorithm applies the quota.
	Algorithm Algorithm
	// Quota is the number of units per Period: the refill (or drain) rate of
	// the bucket family, the per-window allowance of the window family. At
	// most 2^40 (maxCost); at most 100,000 for SlidingLog, whose state holds
	// one entry per admitted request, and 2^31-1 for SlidingCounter.
	Quota int64
	// Period is the time Quota is measured over; a whole number of
	// microseconds, at most 366 days.
	Period time.Duration
	// Burst is the bucket capacity: the most units that can pass at once,
	// at most 2^40. Required for TokenBucket, GCRA, LeakyBucket and LeakyQueue (whose
	// Burst units pass without waiting); must be zero for the window
	// algorithms, whose burst is their Quota.
	Burst int64
	// MaxDelay is the longest a LeakyQueue request may wait for its turn:
	// one whose turn comes later is denied at once. A whole number of
	// microseconds, at most 366 days. LeakyQueue needs MaxDelay, MaxQueue
	// or both (then the tighter bound holds); the other algorithms, neither.
	MaxDelay time.Duration
	// MaxQueue is the most units a LeakyQueue key may have waiting at once,
	// nginx's burst less its delay: the kth unit waiting waits k Intervals,
	// so it bounds the wait at MaxQueue×Interval, which must be at most
	// 366 days.
	MaxQueue int64
	// Unit names what the policy counts when it is not requests ("tokens",
	// "content-bytes"): the RateLimit-Policy field's qu parameter. Lower
	// case letters, digits and '-', at most 32 bytes; "" means requests.
	Unit string
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
	unit     string
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

// NewPolicy validates c and returns the policy it describes. The error, a
// *PolicyError, names the field at fault.
func NewPolicy(c PolicyConfig) (*Policy, error) {
	if err := c.checkName(); err != nil {
		return nil, err
	}
	if err := c.checkRate(); err != nil {
		return nil, err
	}
	if err := c.checkUnit(); err != nil {
		return nil, err
	}
	p := &Policy{
		unit:   c.Unit,
		name:   c.Name,
		alg:    c.Algorithm,
		quota:  c.Quota,
		period: c.Period.Microseconds(),
	}
	var err error
	if c.Algorithm.bucket() {
		err = c.bucket(p)
	} else {
		err = c.window(p)
	}
	if err != nil {
		return nil, err
	}
	p.id = p.fingerprint()
	return p, nil
}

// bad returns the *PolicyError of field.
func (c *PolicyConfig) bad(field, reason string) error {
	return &PolicyError{Policy: c.Name, Field: field, Reason: reason}
}

// checkName checks the name and the algorithm.
func (c *PolicyConfig) checkName() error {
	if c.Name == "" {
		return c.bad("Name", "is empty")
	}
	if len(c.Name) > 64 {
		return c.bad("Name", "is longer than 64 bytes")
	}
	for i := 0; i < len(c.Name); i++ {
		// Names go into structured header fields as sf-strings, which allow
		// printable ASCII only, and into Redis keys, where braces would
		// break the hash tag.
		if ch := c.Name[i]; ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\' || ch == '{' || ch == '}' {
			return c.bad("Name", fmt.Sprintf("has character %q; use printable ASCII without quotes, backslashes or braces", ch))
		}
	}
	if !c.Algorithm.valid() {
		return c.bad("Algorithm", fmt.Sprintf("is unknown (%d)", c.Algorithm))
	}
	return nil
}

// checkRate checks Quota and Period, and that the queue's bounds are set
// only for the queue.
func (c *PolicyConfig) checkRate() error {
	switch {
	case c.Quota <= 0:
		return c.bad("Quota", fmt.Sprintf("must be positive, got %d", c.Quota))
	case c.Quota > maxQuota:
		return c.bad("Quota", fmt.Sprintf("must be at most %d, got %d", int64(maxQuota), c.Quota))
	case c.Period <= 0:
		return c.bad("Period", fmt.Sprintf("must be positive, got %v", c.Period))
	case c.Period > maxPeriod:
		return c.bad("Period", fmt.Sprintf("must be at most %v, got %v", maxPeriod, c.Period))
	case c.Period%time.Microsecond != 0:
		return c.bad("Period", fmt.Sprintf("must be a whole number of microseconds, got %v", c.Period))
	case c.Algorithm != LeakyQueue && c.MaxDelay != 0:
		return c.bad("MaxDelay", fmt.Sprintf("does not apply to %v; leave it zero", c.Algorithm))
	case c.Algorithm != LeakyQueue && c.MaxQueue != 0:
		return c.bad("MaxQueue", fmt.Sprintf("does not apply to %v; leave it zero", c.Algorithm))
	}
	return nil
}

// bucket sets the burst, interval and queue bound of p, of the bucket
// family.
func (c *PolicyConfig) bucket(p *Policy) error {
	if c.Burst <= 0 {
		return c.bad("Burst", fmt.Sprintf("must be positive for %v, got %d", c.Algorithm, c.Burst))
	}
	if c.Burst > maxQuota {
		return c.bad("Burst", fmt.Sprintf("must be at most %d, got %d", int64(maxQuota), c.Burst))
	}
	p.burst = c.Burst
	p.interval = p.period / p.quota
	if p.interval == 0 {
		return c.bad("Quota", fmt.Sprintf("%d per %v is more than one unit per microsecond", c.Quota, c.Period))
	}
	if p.burst > (1<<52)/p.interval {
		return c.bad("Burst", fmt.Sprintf("%d at one unit per %dµs takes too long to refill", c.Burst, p.interval))
	}
	if c.Algorithm == LeakyQueue {
		bound, err := queueBound(*c, p.interval)
		if err != nil {
			return err
		}
		p.maxDelay = bound
	}
	return nil
}

// window sets the burst of p, of the window family: its Quota.
func (c *PolicyConfig) window(p *Policy) error {
	if c.Burst != 0 {
		return c.bad("Burst", fmt.Sprintf("does not apply to %v (its burst is Quota); leave it zero", c.Algorithm))
	}
	p.burst = c.Quota
	if c.Algorithm == SlidingLog && c.Quota > maxLogQuota {
		return c.bad("Quota", fmt.Sprintf("%d is too large for a sliding log (at most %d entries per key); use sliding-counter", c.Quota, maxLogQuota))
	}
	if c.Algorithm == SlidingCounter && c.Quota > maxCounterQuota {
		return c.bad("Quota", fmt.Sprintf("must be at most %d for sliding-counter, got %d", maxCounterQuota, c.Quota))
	}
	return nil
}

// queueBound validates a LeakyQueue's MaxDelay and MaxQueue and returns the
// tighter of the two bounds on waiting, in µs. Each is at most maxPeriod,
// which with the Burst's bound keeps every time the queue computes an exact
// integer in a Lua double.
func queueBound(c PolicyConfig, interval int64) (int64, error) {
	bad := func(field, reason string) (int64, error) {
		return 0, &PolicyError{Policy: c.Name, Field: field, Reason: reason}
	}
	bound := maxDebt // maxPeriod in µs
	switch {
	case c.MaxDelay < 0:
		return bad("MaxDelay", fmt.Sprintf("must not be negative, got %v", c.MaxDelay))
	case c.MaxDelay > maxPeriod:
		return bad("MaxDelay", fmt.Sprintf("must be at most %v, got %v", maxPeriod, c.MaxDelay))
	case c.MaxDelay%time.Microsecond != 0:
		return bad("MaxDelay", fmt.Sprintf("must be a whole number of microseconds, got %v", c.MaxDelay))
	case c.MaxDelay > 0:
		bound = c.MaxDelay.Microseconds()
	}
	switch {
	case c.MaxQueue < 0:
		return bad("MaxQueue", fmt.Sprintf("must not be negative, got %d", c.MaxQueue))
	case c.MaxQueue > maxDebt/interval:
		return bad("MaxQueue", fmt.Sprintf("%d at one unit per %dµs waits longer than 366 days", c.MaxQueue, interval))
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

// Name returns the policy's name.
func (p *Policy) Name() string { return p.name }

// Unit returns what the policy counts (PolicyConfig.Unit), "" for requests.
func (p *Policy) Unit() string { return p.unit }

// checkUnit checks Unit: an sf-token the RateLimit-Policy field can carry.
func (c *PolicyConfig) checkUnit() error {
	if len(c.Unit) > 32 {
		return c.bad("Unit", "longer than 32 bytes")
	}
	for i := 0; i < len(c.Unit); i++ {
		if b := c.Unit[i]; !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-') {
			return c.bad("Unit", "only lower case letters, digits and '-'")
		}
	}
	return nil
}

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
