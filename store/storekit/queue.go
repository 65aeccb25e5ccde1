package storekit

import (
	"math/bits"

	"github.com/sluice-go/sluice/core"
)

// A LeakyQueue's state is GCRA's theoretical arrival time, which here is
// when the queue drains (its end), and the turns before the end that
// requests gave back (ReturnTurn), which the next requests fill: a bit
// set, bit k for the unit whose turn ends k Intervals before the end. A
// turn given back is a gap in the queue, not a queue shorter by one:
// the requests behind it keep their turns, so shortening the queue would
// release the next request together with one of them. The next request
// takes the gap's turn instead, released at that very instant, one
// Interval after the request before it and one before the request behind.
//
// A gap whose turn has come unfilled is lost: a request released later in
// its place would come less than an Interval before the next. So is one
// more than gapBits turns from the end (the queue's last gapBits turns are
// remembered). The last turn given back is no gap: the queue ends earlier.

// gapBits is how many turns before its end a queue remembers as given
// back: the set must stay exact in a double, as the Redis store keeps it.
const gapBits = 52

const gapMask = 1<<gapBits - 1

// ReturnTurn gives back the turn of a LeakyQueue grant of cost units whose
// turn (its Delay) comes in µs from now, for a request that will not be
// served: its units become a gap the next requests fill, at the instants
// they stood at, or, if it is the last in the queue, the queue ends cost
// Intervals earlier. in is the Delay the grant reported less the time
// since (a grant's own clock can tell it: the store cannot); a turn that
// has come (in at most zero) is lost while others wait behind it. The
// position is rounded to the nearest Interval. cost must be 1 to MaxCost.
// Under any other algorithm it is Adjust(policy, s, now, -cost). It
// returns the standing afterwards, as Status reports it.
func ReturnTurn(policy *core.Policy, s *State, now, cost, in int64) core.Decision {
	p := specOf(policy)
	if p.alg != core.LeakyQueue {
		return Adjust(policy, s, now, -cost)
	}
	tat, gaps := p.queueAt(*s, now)
	span := p.burst * p.interval
	waiting := tat-span > now // some request waits for its turn
	k := floorDiv(tat-(now+in+span)+p.interval/2, p.interval)
	switch {
	case in <= 0 && waiting: // its turn came: lost
	case in <= 0 || k <= 0: // the last in the queue, or no one waits
		tat, gaps = p.shorten(tat, gaps, now, cost)
	default:
		for j := k; j < k+cost && j < gapBits; j++ {
			gaps |= 1 << j
		}
	}
	*s = State{tat, int64(gaps)}
	return Status(policy, *s, now)
}

// leakyQueue decides a request of cost c: it fills c gaps, the earliest,
// if the queue has as many ahead of now, released at the turn of the last
// of them; else it is the c units after everything queued, so its turn
// ends c intervals after the later of the TAT and now. The first Burst
// intervals of the queue pass at once; a request ending beyond them waits
// until its end is Burst intervals away, and is admitted only if that wait
// is within the bound. A denial takes nothing; its RetryAfter is when the
// wait shrinks to the bound.
func (p *spec) leakyQueue(s *State, now, cost int64, commit bool, d *core.Decision) {
	tat, gaps := p.queueAt(*s, now)
	span := p.burst * p.interval
	if cost > 0 && cost <= p.most && cost <= int64(bits.OnesCount64(gaps)) {
		filled, last := earliest(gaps, cost)
		wait := tat - last*p.interval - span - now
		if commit {
			*s = State{tat, int64(gaps &^ filled)}
		}
		p.decide(d, true, cost, floorDiv(span-(tat-now), p.interval), tat-now, 0)
		d.Delay = micros(wait)
		return
	}
	allowed, wait, retry := false, int64(0), int64(0)
	if cost <= p.most { // a larger cost is Impossible, and its product could overflow
		next := tat + cost*p.interval
		wait = max(next-now-span, 0)
		if allowed = wait <= p.bound; allowed {
			tat, gaps = next, shiftGaps(gaps, cost)
		} else {
			retry = wait - p.bound
		}
	}
	if commit && allowed {
		*s = State{tat, int64(gaps)}
	}
	p.decide(d, allowed, cost, floorDiv(span-(tat-now), p.interval), tat-now, retry)
	if allowed && cost > 0 {
		d.Delay = micros(wait)
	}
}

// adjustQueue is Adjust on a queue: a charge lengthens it at its end, a
// refund shortens it from its end.
func (p *spec) adjustQueue(s *State, now, delta int64) {
	tat, gaps := p.queueAt(*s, now)
	if delta = p.tatDelta(tat, now, delta); delta >= 0 {
		*s = State{tat + delta*p.interval, int64(shiftGaps(gaps, delta))}
		return
	}
	tat, gaps = p.shorten(tat, gaps, now, -delta)
	*s = State{tat, int64(gaps)}
}

// queueAt is a queue's end and gaps at now: the gaps whose turns have not
// come (the unit k turns before the end is released at its end less the
// burst's span).
func (p *spec) queueAt(s State, now int64) (tat int64, gaps uint64) {
	if s.a <= now {
		return now, 0
	}
	ahead := s.a - p.burst*p.interval - now // until the last unit's turn
	if ahead < 0 {
		return s.a, 0
	}
	gaps = uint64(s.b) & gapMask
	if k := ahead / p.interval; k < gapBits-1 {
		gaps &= 1<<(k+1) - 1
	}
	return s.a, gaps
}

// shorten ends the queue n turns earlier (never before now), and the gaps
// that end it then too.
func (p *spec) shorten(tat int64, gaps uint64, now, n int64) (int64, uint64) {
	n = min(n, (tat-now)/p.interval+1)
	tat = max(tat-n*p.interval, now)
	if n >= gapBits {
		return tat, 0
	}
	gaps >>= n
	for gaps&1 != 0 && tat > now {
		tat, gaps = tat-p.interval, gaps>>1
	}
	return tat, gaps
}

// shiftGaps moves gaps n turns further from the end: n units were queued
// after them.
func shiftGaps(gaps uint64, n int64) uint64 {
	if n >= gapBits {
		return 0
	}
	return gaps << n & gapMask
}

// earliest picks the n earliest of gaps (the highest bits), which holds at
// least n: their set, and the position of the last of them.
func earliest(gaps uint64, n int64) (filled uint64, last int64) {
	for ; n > 0; n-- {
		last = int64(63 - bits.LeadingZeros64(gaps&^filled))
		filled |= 1 << last
	}
	return filled, last
}
