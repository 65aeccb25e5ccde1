package storekit

import (
	"math"

	"github.com/sluice-go/sluice/core"
)

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
