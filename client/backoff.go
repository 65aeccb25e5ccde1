package client

import (
	crand "crypto/rand"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Jitter selects how a [Backoff] randomizes its exponential ceiling.
type Jitter int

const (
	// FullJitter sleeps uniformly in [0, ceiling). It is the default: in
	// AWS's herd simulations it does the least total work and finishes soonest.
	FullJitter Jitter = iota
	// EqualJitter sleeps ceiling/2 + uniform [0, ceiling/2): it keeps a
	// guaranteed minimum wait.
	EqualJitter
	// DecorrelatedJitter sleeps uniformly in [Base, 3×previous), capped. It
	// depends on the previous delay rather than the attempt number.
	DecorrelatedJitter
	// NoJitter sleeps exactly the ceiling. It keeps clients in lockstep and
	// exists for comparison only.
	NoJitter
)

// String names the jitter mode.
func (j Jitter) String() string {
	switch j {
	case FullJitter:
		return "full"
	case EqualJitter:
		return "equal"
	case DecorrelatedJitter:
		return "decorrelated"
	case NoJitter:
		return "none"
	}
	return "Jitter(?)"
}

// Backoff is a capped exponential backoff schedule. It is a plain value and
// [Backoff.Delay] is a pure function of its arguments, so a schedule is
// reproducible given the random source.
//
// Zero fields take defaults: Base 200ms, Multiplier 2, Cap 5s, FullJitter.
// Other values must pass [Backoff.Validate]; [WithBackoff] checks it.
type Backoff struct {
	// Base is the ceiling of the first retry's wait; not negative.
	Base time.Duration
	// Multiplier grows the ceiling per retry: at least 1 (1 keeps it
	// constant), finite.
	Multiplier float64
	// Cap bounds every wait; not negative, and not below Base.
	Cap time.Duration
	// Jitter is the randomization; the zero value is FullJitter.
	Jitter Jitter
}

// Default backoff parameters.
const (
	DefaultBackoffBase       = 200 * time.Millisecond
	DefaultBackoffMultiplier = 2.0
	DefaultBackoffCap        = 5 * time.Second
)

// Validate reports a schedule that cannot mean what it says: a negative
// Base or Cap, a Multiplier below 1 (other than the zero default), NaN or
// infinite, a Cap below Base once defaults are applied, or an unknown Jitter.
// The error wraps [ErrInvalidConfig].
func (b Backoff) Validate() error {
	var errs []error
	if b.Base < 0 {
		errs = append(errs, invalid("Backoff.Base %v is negative", b.Base))
	}
	if b.Cap < 0 {
		errs = append(errs, invalid("Backoff.Cap %v is negative", b.Cap))
	}
	if m := b.Multiplier; m != 0 && !(m >= 1 && !math.IsInf(m, 1)) {
		errs = append(errs, invalid("Backoff.Multiplier %v is not a finite number >= 1", m))
	}
	if d := b.withDefaults(); b.Base >= 0 && b.Cap >= 0 && d.Cap < d.Base {
		errs = append(errs, invalid("Backoff.Cap %v is below Base %v", d.Cap, d.Base))
	}
	if b.Jitter < FullJitter || b.Jitter > NoJitter {
		errs = append(errs, invalid("Backoff.Jitter %d is not a known mode", int(b.Jitter)))
	}
	return errors.Join(errs...)
}

// withDefaults fills in zero fields. It also keeps Delay and Ceiling total
// on a schedule that Validate rejects: they still return a wait in
// [0, max(Base, Cap)], if not a meaningful one.
func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBackoffBase
	}
	if !(b.Multiplier >= 1) {
		b.Multiplier = DefaultBackoffMultiplier
	}
	if b.Cap <= 0 {
		b.Cap = DefaultBackoffCap
	}
	return b
}

// Ceiling returns min(Cap, Base × Multiplier^retry), the un-jittered wait
// before retry number retry (0 for the first retry; a negative retry counts
// as 0). It never overflows.
func (b Backoff) Ceiling(retry int) time.Duration {
	b = b.withDefaults()
	retry = max(retry, 0)
	c := float64(b.Base) * math.Pow(b.Multiplier, float64(retry))
	if c >= float64(b.Cap) || math.IsInf(c, 0) || math.IsNaN(c) {
		return b.Cap
	}
	return time.Duration(c)
}

// Delay returns the wait before retry number retry (0 for the first retry).
// prev is the previous wait returned for this request (0 before the first
// retry); only DecorrelatedJitter uses it. r supplies the randomness; with
// the same r state the result is the same. r may be nil for NoJitter.
// The schedule should pass [Backoff.Validate]; Delay does not check it.
func (b Backoff) Delay(retry int, prev time.Duration, r *rand.Rand) time.Duration {
	b = b.withDefaults()
	switch b.Jitter {
	case NoJitter:
		return b.Ceiling(retry)
	case EqualJitter:
		c := b.Ceiling(retry)
		return c/2 + uniform(r, c-c/2)
	case DecorrelatedJitter:
		// min(cap, random(base, prev*3)), with prev starting at base.
		if prev < b.Base {
			prev = b.Base
		}
		hi := b.Cap
		if prev <= b.Cap/3 {
			hi = prev * 3
		}
		if hi <= b.Base {
			return b.Base
		}
		return b.Base + uniform(r, hi-b.Base)
	default: // FullJitter
		return uniform(r, b.Ceiling(retry))
	}
}

// uniform returns a duration in [0, n), or 0 when n <= 0.
func uniform(r *rand.Rand, n time.Duration) time.Duration {
	if n <= 0 || r == nil {
		return 0
	}
	return time.Duration(r.Int64N(int64(n)))
}

// lockedRand is a per-client random source safe for concurrent use.
// *rand.Rand is not, and a shared global would couple clients together.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

// newLockedRand wraps src, or, when src is nil, a ChaCha8 generator seeded
// from crypto/rand: a fleet of clients must never share a seed, or their
// jitter re-synchronizes the herd it is meant to break up.
func newLockedRand(src rand.Source) *lockedRand {
	if src == nil {
		var seed [32]byte
		// crypto/rand.Read never fails on supported platforms (Go 1.24+
		// crashes the program instead of returning an error).
		_, _ = crand.Read(seed[:])
		src = rand.NewChaCha8(seed)
	}
	return &lockedRand{r: rand.New(src)}
}

// delay computes b.Delay under the lock.
func (l *lockedRand) delay(b Backoff, retry int, prev time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return b.Delay(retry, prev, l.r)
}

// uniform returns a duration in [0, n) under the lock.
func (l *lockedRand) uniform(n time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return uniform(l.r, n)
}

// float64 returns a number in [0, 1) under the lock.
func (l *lockedRand) float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}
