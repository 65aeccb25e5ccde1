package storekit

import (
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

// TakeTo is Take writing the decision to *d, for a store's hot path: a store
// that decides into its own named result copies the Decision once (see
// docs/algorithms.md, Decisions).
func TakeTo(d *core.Decision, p *core.Policy, s *State, now, cost int64) {
	specOf(p).step(s, now, cost, true, d)
}

// Spec is a policy's parameters in the terms the algorithms work in, for a
// store that decides many requests under one policy: made once with SpecOf
// and kept beside the policy's state, it spares each request the policy's
// reading. A Spec decides exactly as the functions given the policy do.
type Spec struct{ p spec }

// SpecOf returns the Spec of p.
func SpecOf(p *core.Policy) Spec { return Spec{*specOf(p)} }

// TakeTo is the package's TakeTo under the policy of sp.
func (sp *Spec) TakeTo(d *core.Decision, s *State, now, cost int64) {
	if sp.p.alg == core.GCRA { // the hot path's commonest policy, without the switch
		sp.p.gcra(s, now, cost, true, d)
		return
	}
	sp.p.step(s, now, cost, true, d)
}

// Status is the standing of s now without taking anything: Remaining and
// ResetAfter as a Take would report them, Allowed false only while the key is
// in debt (after an Adjust charged more than it held), Delay zero.
func Status(p *core.Policy, s State, now int64) (d core.Decision) {
	specOf(p).step(&s, now, 0, false, &d)
	return d
}

// Adjust changes what s holds without a decision, and returns the standing
// afterwards as Status reports it: a negative delta gives units back (never
// beyond full; under LeakyQueue, from the queue's end: use ReturnTurn for a
// waiter that gives up), a positive one charges units into debt, up to
// MaxDebt of refill (a window's count up to MaxWindowCount, the sliding
// counter's MaxCounterQuota). delta must be within ±MaxCost (CheckAdjust).
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

func clamp(v, lo, hi int64) int64 { return min(max(v, lo), hi) }
