package storekit

import (
	"math"
	"time"

	"github.com/sluice-go/sluice/core"
)

// State is the per-key state of every algorithm but SlidingLog: two integers
// whose meaning depends on the policy's algorithm. The zero State is a key
// never seen (or forgotten), which every algorithm treats as full.
//
// Times given to the functions below are microseconds since the Unix epoch and
// must be positive; a store may pass any clock that moves forward, but the
// window algorithms align their windows to multiples of Period from the epoch.
type State struct {
	// TokenBucket: tokens, the time they were exact.
	// GCRA:        theoretical arrival time, unused.
	// LeakyQueue:  the time the queue drains (GCRA's TAT), the turns
	//              before it given back (see queue.go).
	// LeakyBucket: level, the time it was exact.
	// FixedWindow: the window's end, its count.
	// SlidingCounter: the current window's end, its count<<32 | the previous window's count.
	a, b int64
}

// spec is a policy's parameters in the integer microseconds the algorithms
// work in, read once per call through the policy's accessors.
type spec struct {
	policy                         *core.Policy
	alg                            core.Algorithm
	quota, period, burst, interval int64
	// bound is the longest a LeakyQueue request may wait, zero otherwise;
	// most is the largest cost the policy can grant: burst, and for the
	// queue the units that fit within bound on top.
	bound, most int64
}

func specOf(p *core.Policy) *spec {
	s := &spec{
		policy:   p,
		alg:      p.Algorithm(),
		quota:    p.Quota(),
		period:   int64(p.Period() / time.Microsecond),
		burst:    p.Burst(),
		interval: int64(p.Interval() / time.Microsecond),
		bound:    int64(p.MaxDelay() / time.Microsecond),
	}
	s.most = s.burst
	if s.bound > 0 {
		s.most += s.bound / s.interval
	}
	return s
}

// maxDebt is MaxDebt in µs.
const maxDebt = int64(MaxDebt / time.Microsecond)

func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// IsZero reports whether s holds nothing, i.e. the key is at its full allowance.
func (s State) IsZero() bool { return s == State{} }

// StateOf returns the State whose Words are a and b, for a store that keeps
// states in a layout of its own: Words and StateOf convert without loss.
func StateOf(a, b int64) State { return State{a, b} }

// Words returns the two words of s (see StateOf).
func (s State) Words() (a, b int64) { return s.a, s.b }

// OneWord reports whether the states of p's algorithm keep their second word
// zero, as GCRA's does (a theoretical arrival time alone): a store may keep
// the first word only, and give StateOf a zero second word.
func OneWord(p *core.Policy) bool {
	return p.Algorithm() == core.GCRA
}

// Take decides whether cost units can be taken now and, if so, takes them
// from s. cost must be positive (stores check it); Take never fails.
// It panics if p is a SlidingLog policy, whose state is a Log. Under a
// LeakyQueue policy a grant's Delay is the request's turn, which the store
// returns and its caller waits out.
func Take(p *core.Policy, s *State, now, cost int64) (d core.Decision) {
	specOf(p).step(s, now, cost, true, &d)
	return d
}

// TakeTo is Take writing the decision to *d, for a store's hot path. A
// Decision is too large for Go to return in registers: each function that
// returns one passes it through memory, and the copy's loads stall on the
// stores just made, which costs a fast store more than the arithmetic. A
// store that decides into its own named result with TakeTo pays once.
func TakeTo(d *core.Decision, p *core.Policy, s *State, now, cost int64) {
	specOf(p).step(s, now, cost, true, d)
}

// Status is the standing of s now without taking anything: Remaining and
// ResetAfter as a Take would report them, Allowed false only while the key is
// in debt (after an Adjust charged more than it held), Delay zero.
func Status(p *core.Policy, s State, now int64) (d core.Decision) {
	specOf(p).step(&s, now, 0, false, &d)
	return d
}

// Adjust changes what s holds without a decision: a negative delta gives
// units back (never beyond full), a positive one charges units even past the
// limit, leaving the key in debt until they are repaid. It is how a
// reservation is reconciled with the actual cost. The returned decision is
// the standing afterwards, as Status reports it.
//
// Under a LeakyQueue policy a refund shortens the queue from its end: it
// ends delta Intervals earlier (never before now). That is exact for the
// last request in the queue; for one with requests waiting behind it, who
// keep their turns, the next request would be released at the same moment
// as one of them: a request that gives up waiting gives its turn back with
// ReturnTurn instead, which knows where the turn stands.
//
// Debt is bounded: a bucket-family key stops taking charges once refilling
// what it owes would take MaxDebt (for LeakyQueue, once its queue reaches
// MaxDebt past the longest a request may wait), and a window's count stops at
// MaxWindowCount (the sliding counter's at MaxCounterQuota). delta must be
// within ±MaxCost (stores check it with CheckAdjust); then no sum overflows,
// and every value stays exact in a double, as the Redis store needs.
func Adjust(policy *core.Policy, s *State, now, delta int64) core.Decision {
	p := specOf(policy)
	switch p.alg {
	case core.TokenBucket:
		tokens, last := p.refill(*s, now)
		tokens = max(tokens-delta, min(tokens, -p.debtUnits()))
		if tokens >= p.burst {
			tokens, last = p.burst, now
		}
		*s = State{tokens, last}
	case core.GCRA:
		tat := max(s.a, now)
		*s = State{max(tat+p.tatDelta(tat, now, delta)*p.interval, now), 0}
	case core.LeakyQueue:
		p.adjustQueue(s, now, delta)
	case core.LeakyBucket:
		level, last := p.leak(*s, now)
		level = min(level+delta, max(level, p.burst+p.debtUnits()))
		*s = State{max(level, 0), last}
	case core.FixedWindow:
		end, count := p.window(*s, now)
		*s = State{end, clamp(count+delta, 0, max(count, MaxWindowCount))}
	case core.SlidingCounter:
		end, curr, prev := p.counters(*s, now)
		*s = State{end, clamp(curr+delta, 0, MaxCounterQuota)<<32 | prev}
	default:
		panic("sluice: Adjust on a " + p.alg.String() + " policy; use AdjustLog")
	}
	return Status(policy, *s, now)
}

// tatDelta bounds delta, the intervals an Adjust moves a theoretical
// arrival time tat: a charge by the token bucket's bound, in GCRA's terms
// (what the key may still be charged is the whole intervals between its
// TAT and the furthest one the bound allows: for the queue, past the
// longest wait; bound is zero for GCRA), a refund by what refunds to full
// (any more refunds to full all the same).
func (p *spec) tatDelta(tat, now, delta int64) int64 {
	if delta > 0 {
		return min(delta, max(p.burst*p.interval+p.bound+p.debtUnits()*p.interval-(tat-now), 0)/p.interval)
	}
	return max(delta, -((tat-now)/p.interval + 1))
}

// debtUnits is MaxDebt in units of a bucket-family policy.
func (p *spec) debtUnits() int64 { return maxDebt / p.interval }

// Full reports whether s is back to the full allowance at now, so a store may
// forget it: forgetting changes no future decision.
func Full(policy *core.Policy, s State, now int64) bool {
	p := specOf(policy)
	if s.IsZero() {
		return true
	}
	switch p.alg {
	case core.TokenBucket:
		tokens, _ := p.refill(s, now)
		return tokens >= p.burst
	case core.GCRA, core.LeakyQueue:
		return s.a <= now
	case core.LeakyBucket:
		level, _ := p.leak(s, now)
		return level == 0
	case core.FixedWindow:
		return now >= s.a
	case core.SlidingCounter:
		return now >= s.a+p.period
	}
	return false
}

// step runs the policy's algorithm, writing the decision to d: the decision
// is built in place rather than copied up through each call, which on the
// hot path costs as much as the arithmetic.
func (p *spec) step(s *State, now, cost int64, commit bool, d *core.Decision) {
	switch p.alg {
	case core.TokenBucket:
		p.tokenBucket(s, now, cost, commit, d)
	case core.GCRA:
		p.gcra(s, now, cost, commit, d)
	case core.LeakyBucket:
		p.leakyBucket(s, now, cost, commit, d)
	case core.FixedWindow:
		p.fixedWindow(s, now, cost, commit, d)
	case core.SlidingCounter:
		p.slidingCounter(s, now, cost, commit, d)
	case core.LeakyQueue:
		p.leakyQueue(s, now, cost, commit, d)
	default:
		panic("sluice: Take on a " + p.alg.String() + " policy; use TakeLog")
	}
}

// decide fills d the way every algorithm reports.
func (p *spec) decide(d *core.Decision, allowed bool, cost, remaining, resetAfter, retryAfter int64) {
	// Cleared, then set field by field: a composite literal is built apart
	// and copied, and the copy's loads stall on the stores just made (see
	// TakeTo).
	*d = core.Decision{}
	d.Policy = p.policy
	d.Allowed = allowed
	d.Limit = p.burst
	d.Remaining = max(remaining, 0)
	d.ResetAfter = micros(max(resetAfter, 0))
	switch {
	case cost > p.most:
		d.Allowed, d.Impossible = false, true
	case !allowed:
		d.RetryAfter = micros(max(retryAfter, 1))
	}
}

// tokenBucket refills lazily: only whole tokens are added, and the time of the
// last whole token is kept, so no fraction of a token is ever lost or rounded.
func (p *spec) tokenBucket(s *State, now, cost int64, commit bool, d *core.Decision) {
	tokens, last := p.refill(*s, now)
	since := now - last // < interval unless the bucket is full
	allowed := cost <= p.burst && tokens >= cost
	retry := int64(0)
	if allowed {
		tokens -= cost
	} else if cost <= p.burst {
		retry = (cost-tokens)*p.interval - since
	}
	reset := int64(0)
	if tokens < p.burst {
		reset = (p.burst-tokens)*p.interval - since
	}
	if commit && allowed {
		*s = State{tokens, last}
	}
	p.decide(d, allowed, cost, tokens, reset, retry)
}

func (p *spec) refill(s State, now int64) (tokens, last int64) {
	if s.IsZero() {
		return p.burst, now
	}
	tokens, last = s.a, s.b
	if now > last {
		n := (now - last) / p.interval
		if n >= p.burst-tokens {
			return p.burst, now
		}
		tokens, last = tokens+n, last+n*p.interval
	}
	return tokens, last
}

// gcra keeps the theoretical arrival time (TAT): when the key would be full
// again. A request of cost c moves it c intervals later, and is allowed while
// the TAT stays within Burst intervals of now.
func (p *spec) gcra(s *State, now, cost int64, commit bool, d *core.Decision) {
	tat := max(s.a, now)
	span := p.burst * p.interval
	allowed, retry := false, int64(0)
	if cost <= p.burst { // a larger cost is Impossible, and its product could overflow
		next := tat + cost*p.interval
		if allowed = next-span <= now; allowed {
			tat = next
		} else {
			retry = next - span - now
		}
	}
	if commit && allowed {
		*s = State{tat, 0}
	}
	p.decide(d, allowed, cost, floorDiv(span-(tat-now), p.interval), tat-now, retry)
}

// leakyBucket is the token bucket seen from the other side: the level is the
// bucket's emptiness, draining one unit per interval.
func (p *spec) leakyBucket(s *State, now, cost int64, commit bool, d *core.Decision) {
	level, last := p.leak(*s, now)
	since := now - last
	allowed := cost <= p.burst && level+cost <= p.burst
	retry := int64(0)
	if allowed {
		level += cost
	} else if cost <= p.burst {
		retry = (level+cost-p.burst)*p.interval - since
	}
	reset := int64(0)
	if level > 0 {
		reset = level*p.interval - since
	}
	if commit && allowed {
		*s = State{level, last}
	}
	p.decide(d, allowed, cost, p.burst-level, reset, retry)
}

func (p *spec) leak(s State, now int64) (level, last int64) {
	if s.IsZero() {
		return 0, now
	}
	level, last = s.a, s.b
	if now > last {
		n := (now - last) / p.interval
		if n >= level {
			return 0, now
		}
		level, last = level-n, last+n*p.interval
	}
	return level, last
}

// fixedWindow counts units per window [k×Period, (k+1)×Period).
func (p *spec) fixedWindow(s *State, now, cost int64, commit bool, d *core.Decision) {
	end, count := p.window(*s, now)
	allowed := cost <= p.quota && count+cost <= p.quota
	if allowed {
		count += cost
	}
	if commit && allowed {
		*s = State{end, count}
	}
	reset := int64(0)
	if count > 0 {
		reset = end - now
	}
	p.decide(d, allowed, cost, p.quota-count, reset, end-now)
}

// window returns the current window's end and count. A state from a later
// window (a clock that stepped back) is kept, to stay on the safe side.
func (p *spec) window(s State, now int64) (end, count int64) {
	end = now - now%p.period + p.period
	if s.a >= end {
		return s.a, s.b
	}
	return end, 0
}

// slidingCounter estimates the trailing window's count as
//
//	floor(prev × (Period − elapsed) / Period) + curr
//
// where prev and curr are the previous and current fixed windows' counts and
// elapsed is the time since the current window began. The product is taken in
// float64, exactly as the Redis store's Lua does, so both round alike.
//
// Bound: the estimate assumes the previous window's units were spread evenly.
// When they were not, any trailing Period may hold up to Quota + the units the
// estimate lets through as the previous window ages, at most 2×Quota; for a
// burst of Quota just before a boundary, a trailing Period holds at most
// Quota×(1 + elapsed/Period) units at elapsed into the next window.
func (p *spec) slidingCounter(s *State, now, cost int64, commit bool, d *core.Decision) {
	end, curr, prev := p.counters(*s, now)
	start := end - p.period
	elapsed := now - start
	count := p.weigh(prev, elapsed) + curr
	allowed := cost <= p.quota && count+cost <= p.quota
	retry := int64(0)
	if allowed {
		curr += cost
		count += cost
	} else if cost <= p.quota {
		retry = p.counterRetry(curr, prev, elapsed, cost) - elapsed
	}
	if commit && allowed {
		*s = State{end, curr<<32 | prev}
	}
	// The estimate reaches zero once curr has aged out of the next window,
	// or, with curr empty, once prev has aged out of this one.
	reset := int64(0)
	if curr > 0 {
		reset = p.period + p.zeroAt(curr, 0) - elapsed
	} else if prev > 0 {
		reset = p.zeroAt(prev, elapsed) - elapsed
	}
	p.decide(d, allowed, cost, p.quota-count, reset, retry)
}

// counters returns the current window's end and the current and previous
// windows' counts at now, rolling the stored windows forward.
func (p *spec) counters(s State, now int64) (end, curr, prev int64) {
	end = now - now%p.period + p.period
	switch {
	case s.a >= end:
		return s.a, s.b >> 32, s.b & math.MaxUint32
	case s.a == end-p.period:
		return end, 0, s.b >> 32
	}
	return end, 0, 0
}

func (p *spec) weigh(prev, elapsed int64) int64 {
	if prev == 0 {
		return 0
	}
	elapsed = clamp(elapsed, 0, p.period)
	return int64(math.Floor(float64(prev) * float64(p.period-elapsed) / float64(p.period)))
}

// counterRetry returns the earliest offset from the current window's start at
// which cost units fit, searching this window, the next and the one after
// (which starts empty, so cost ≤ Quota always fits there).
func (p *spec) counterRetry(curr, prev, elapsed, cost int64) int64 {
	if room := p.quota - curr - cost; room >= 0 {
		if e := p.firstFit(prev, room, elapsed); e >= 0 {
			return e
		}
	}
	if e := p.firstFit(curr, p.quota-cost, 0); e >= 0 {
		return p.period + e
	}
	return 2 * p.period
}

// firstFit returns the smallest elapsed time e in [from, Period) at which
// weigh(prev, e) ≤ room, or -1 if there is none. weigh falls as e grows, so a
// binary search finds it exactly, whatever the float rounding. The search
// first tries the bracket around the real-valued answer, so that it usually
// ends after two probes instead of log2(Period): it runs on every decision
// (for ResetAfter, and RetryAfter on a denial).
func (p *spec) firstFit(prev, room, from int64) int64 {
	if room < 0 {
		return -1
	}
	if p.weigh(prev, from) <= room {
		return from
	}
	lo, hi := from, p.period // weigh(lo) > room; weigh(Period) = 0 ≤ room
	// The answer is the real-valued guess rounded up, or one more when the
	// guess is a whole number (as with a quota that divides the period);
	// float rounding may move it by one either way.
	guess := float64(p.period) - float64(room+1)*float64(p.period)/float64(prev)
	switch g := int64(math.Ceil(guess)); {
	case g >= hi:
		// None fits before Period, as for most RetryAfter searches in the
		// current window: one probe confirms it.
		if p.weigh(prev, hi-1) > room {
			return -1
		}
		hi--
	case g <= lo:
		// The answer is just after from, as when a full current window
		// must age by a microsecond to admit anything.
		if p.weigh(prev, lo+1) <= room {
			hi = lo + 1
		}
	default:
		if p.weigh(prev, g) <= room {
			hi = g
			if p.weigh(prev, g-1) > room {
				lo = g - 1
			}
		} else {
			lo = g
			if g+1 < hi && p.weigh(prev, g+1) <= room {
				hi = g + 1
			}
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if p.weigh(prev, mid) <= room {
			hi = mid
		} else {
			lo = mid
		}
	}
	if hi == p.period {
		return -1
	}
	return hi
}

// zeroAt returns the elapsed time from which count, as the previous window,
// weighs nothing: Period when it never does within the window (a quota denser
// than one unit per microsecond of the period), since the window after holds
// it no more.
func (p *spec) zeroAt(count, from int64) int64 {
	if e := p.firstFit(count, 0, from); e >= 0 {
		return e
	}
	return p.period
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func clamp(v, lo, hi int64) int64 { return min(max(v, lo), hi) }
