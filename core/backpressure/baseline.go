package backpressure

import (
	"math"
	"slices"
	"time"
)

// baseline is the service's latency at a concurrency low enough that
// nothing queues, as AIMD and Gradient measure it. Both judge every later
// window against it, so it must follow the service: when the service itself
// gets slower (or faster), the baseline must move with it, or the algorithm
// takes the new normal for congestion and spirals down.
//
// A probe measures it by lowering the limit in steps: it starts at half the
// limit in force, measures `samples` requests admitted at that concurrency
// (with the step full: see add), and halves the concurrency again while the
// latency per request in flight stays put (requests were queueing: the
// latency of queued requests is proportional to their number, Little's
// law), down to the floor at most. The step that stops the descent measures
// the baseline, with the step above when that clearly did not queue
// either. Starting from the limit rather than from a fixed low concurrency
// keeps a probe short however slow the service is (its samples complete at
// the rate the service runs at), and the descent finds the baseline even
// when the limit was far above the service's capacity. When a step queued, it also tells
// the concurrency the service carries: the step's requests in flight times
// the latency of the step below over its own. A probe restores the limit it
// found, but no higher than that (plus its square root), since a limit
// above it only queues.
//
// A probe starts at the beginning, every interval, and when the windows
// say the baseline may be stale: spiralWindows busy windows in a row that
// all shrank the limit for their latency, or all had a latency below the
// baseline by more than the tolerance. Congestion looks the same at first,
// so a probe that finds the baseline where it was doubles the run of
// windows the next one needs (up to maxBackoff doublings), and a probe that
// finds it moved, or a scheduled one, resets it.
type baseline struct {
	value    time.Duration // zero before the first probe ends
	low      float64       // the lower half's mean latency at the baseline (sampleSet.lowMean), in nanoseconds
	floor    int           // the lowest concurrency a probe descends to
	samples  int
	interval time.Duration // between scheduled probes; ≤ 0: at the start only

	probing     bool
	level       int       // the concurrency of the probe's current step
	from, to    time.Time // requests admitted in [from, to) count toward the step
	full        stepStats // the step's requests admitted with the step full (InFlight ≥ level)
	short       stepStats // and those admitted with room to spare
	endedShort  bool      // the probe ended on a step that did not fill: the baseline is short's
	upper       float64   // the mean latency of the step above, 0 at the first step
	upperCost   float64   // the lower half's mean latency per request in flight of the step above
	upperFlight float64   // the mean requests in flight the step above's requests saw
	above       stepStats // the step above's full requests
	queued      float64   // the concurrency the service carries, from the last step that queued (0: none did)
	saved       float64   // the limit to restore when the probe ends
	before      float64   // the limit before the run of windows that called for the probe
	next        time.Time

	idle    bool    // the last window left half the limit unused
	run     int     // consecutive busy windows outside the tolerance, signed: >0 slow, <0 fast
	runFrom float64 // the limit when the run began
	runCost float64 // the latency per request in flight of the run's first window
	backoff int     // doublings of the run the next triggered probe needs
}

// step is what a sample did to a probe.
type step uint8

const (
	noStep   step = iota // nothing the controller must act on
	stepDown             // the probe went down a step: the limit is b.level
	probed               // the probe ended: the limit is b.saved
)

// spiralWindows is the run of windows, all slower (or all faster) than the
// baseline allows, that makes an algorithm measure its baseline again.
const spiralWindows = 4

// maxBackoff bounds the doublings of spiralWindows between probes that find
// nothing new.
const maxBackoff = 5

// descent bounds the rise of the latency per request in flight from one
// step of a probe to the next below which the higher step queued: while
// requests queue, their latency is proportional to their number (Little's
// law) and the ratio is 1; once they no longer do, the latency stays and
// the ratio is 2. The lower half of a step's 20 requests is within 15% or
// so of its true value: 1.5 tells the two apart most of the time, and
// clearlyQueued bounds what a wrong call costs.
const descent = 1.5

// clearlyQueued bounds the same rise below which the step above surely
// queued, and its estimate of the concurrency the service carries may cap
// the limit the probe restores: a step's noise can put a rise of 2 below
// 1.5, and a cap from that would restore a fraction of the capacity.
const clearlyQueued = 1.2

// earlyQueued and earlyClear bound the same rise, measured on half a
// step's requests, below which the step above surely queued and above
// which it surely did not: half the requests leave the lower half's mean
// within 20% or so of its true value, against a rise of 1 or 2. Fewer
// than earlySamples decide nothing early.
const (
	earlyQueued  = 1.1
	earlyClear   = 1.8
	earlySamples = 8
)

// start begins a probe: it returns the limit during its first step, and
// keeps limit to restore afterwards.
func (b *baseline) start(now time.Time, limit float64) float64 {
	b.probing = true
	b.level = max(b.floor, int(limit)/2)
	b.from, b.to = now, time.Time{}
	b.upper, b.queued, b.endedShort = 0, 0, false
	b.full.reset()
	b.short.reset()
	b.above.reset()
	b.saved, b.before = limit, limit
	if b.run > 0 {
		b.before = max(limit, b.runFrom)
	}
	b.run = 0
	return float64(b.level)
}

// add counts a sample toward the probe, if the request was admitted during
// its current step and succeeded, and reports what that did. Requests
// admitted during the last step that complete after the probe ended, of
// the kind it ended on (full or not), still count toward the baseline's
// mean: without them it would be the mean of the first requests to
// complete, the shorter ones.
//
// A step judges by the requests admitted while it was full (InFlight at its
// level less a Poisson dip, on the scale of Sample.busy): the descent's
// test holds the latency of one step against the next at half the
// requests in flight, and a step the load had not filled yet (the start of
// a run, when the requests in flight are still rising) held fewer, which
// reads as a queue. A step that measures samples requests admitted with
// room to spare, over twice their latency, before it measures as many
// full ends the probe: the load does not fill it, and those requests'
// latency is the service's at the concurrency the load brings.
func (b *baseline) add(s Sample) step {
	if s.Dropped || s.Start().Before(b.from) || (!b.probing && !s.Start().Before(b.to)) {
		return noStep
	}
	// Full within a Poisson dip: with the step full, a request is admitted
	// as soon as one leaves, unless two leave before the next arrives.
	full := float64(s.busy(b.level)) >= float64(b.level)-math.Sqrt(float64(b.level))
	if !b.probing {
		// The mean only: the lower half's mean stays that of the step's
		// first requests to complete, as a window's is (a window ends
		// before its slowest requests do), so that the two compare.
		if full != b.endedShort {
			st := b.result()
			st.add(s)
			b.value = time.Duration(st.sum / float64(st.n))
		}
		return noStep
	}
	if full {
		b.full.add(s)
	} else {
		b.short.add(s)
	}
	if sh := &b.short; sh.n >= b.samples && float64(sh.last.Sub(sh.first)) >= 2*sh.sum/float64(sh.n) {
		// (And full.n < samples: the step would have ended.) Requests
		// admitted with room to spare over twice their latency: the load
		// does not fill the step. Those admitted only while it filled,
		// on a service already queueing them, say nothing of the kind.
		return b.end(s.At, true)
	}
	st := &b.full
	if st.n < b.samples && (b.upper == 0 || 2*st.n < b.samples || st.n < earlySamples) {
		return noStep
	}
	mean, flight, cost := st.sum/float64(st.n), st.flight/float64(st.n), st.cost.lowMean()
	// The latency per request in flight stays put from a step that queued
	// to the one below it, and rises as the requests in flight fall once
	// they no longer queue. (Judged on each request's own, the lower
	// half's mean, which hung requests and heavy tails do not sway; the
	// concurrency the service carries is estimated from the means, which
	// Little's law relates.)
	queued := b.upper > 0 && cost < descent*b.upperCost
	if st.n < b.samples {
		// Half a step decides when the answer is already clear: a step
		// at low concurrency takes samples × latency / level, seconds on
		// a slow service.
		switch {
		case cost >= earlyClear*b.upperCost:
			queued = false
		case cost < earlyQueued*b.upperCost && b.level > b.floor:
			queued = true // (at the floor it would end the probe on half a step)
		default:
			return noStep
		}
	}
	if queued && cost < clearlyQueued*b.upperCost {
		// (From half a step too: its mean is of the first half to
		// complete, the shorter ones, so that the cap errs low by a
		// little, and without one a service of 2 gets back a limit of
		// 20.)
		b.queued = b.upperFlight * mean / b.upper
	}
	if b.level > b.floor && (b.upper == 0 || queued) {
		b.upper, b.upperCost, b.upperFlight, b.level = mean, cost, flight, max(b.floor, b.level/2)
		b.from = s.At
		b.above = b.full
		b.full.reset()
		b.short.reset()
		return stepDown
	}
	if b.upper > 0 && cost >= earlyClear*b.upperCost {
		// Clearly, the step above did not queue either: its requests
		// measured the service's own latency too, and the baseline is
		// theirs and this step's together (a step decided early has
		// only half its own).
		st.merge(&b.above)
	}
	return b.end(s.At, false)
}

// end ends the probe at now on its current step, measured by the requests
// admitted with the step full or, if short, with room to spare.
func (b *baseline) end(now time.Time, short bool) step {
	b.endedShort = short
	st := b.result()
	old := b.low
	b.value, b.low = time.Duration(st.sum/float64(st.n)), st.lat.lowMean()
	b.probing, b.to = false, now
	switch {
	case old == 0:
	case !b.moved(old):
		b.backoff = min(b.backoff+1, maxBackoff)
	default:
		// The windows that shrank the limit judged it by a stale baseline:
		// restore the limit from before them.
		b.saved, b.backoff = b.before, 0
	}
	if b.queued > 0 {
		b.saved = min(b.saved, b.queued+math.Sqrt(b.queued))
	}
	b.saved = max(b.saved, float64(b.level))
	if b.interval > 0 {
		b.next = now.Add(b.interval)
	}
	return probed
}

// result returns the statistics the probe's baseline comes from.
func (b *baseline) result() *stepStats {
	if b.endedShort {
		return &b.short
	}
	return &b.full
}

// due reports whether a scheduled probe is due. It waits while the limit
// holds nobody back: the baseline then decides nothing, and a probe would
// shed requests the limit has room for.
func (b *baseline) due(now time.Time) bool {
	if b.interval > 0 && !b.idle && !now.Before(b.next) {
		b.backoff = 0
		return true
	}
	return false
}

// judge folds the verdict on a busy window, of mean latency latency and
// mean requests in flight inFlight under limit was, which leaves the limit
// at limit, into the run of windows: slow
// (its latency shrank the limit) or fast (below baseline / tolerance). It
// reports whether the run calls for a probe: long enough, and for a slow
// run, one that cut the limit by a fifth or more without bringing the
// latency down with it.
//
// That last test is Little's law: while requests queue in the service, the
// latency is the limit over the service's throughput, so that it falls in
// proportion as the requests in flight fall, and latency per request in
// flight stays put. When it rises instead, fewer requests are in flight
// than the service carries, and the latency is the service's own: the
// baseline is stale.
func (b *baseline) judge(slow, fast bool, latency, inFlight, was, limit float64) bool {
	cost := latency / max(inFlight, 1)
	switch {
	case slow:
		if b.run <= 0 {
			b.run, b.runFrom, b.runCost = 0, was, cost
		}
		b.run++
	case fast:
		b.run = min(b.run, 0) - 1
	default:
		b.run = 0
	}
	need := spiralWindows << b.backoff
	return -b.run >= need || (b.run >= need && 10*limit <= 9*b.runFrom && cost >= spiralCost*b.runCost)
}

// spiralCost is the rise in latency per request in flight over a slow run that
// says the latency did not fall with the limit (the noise of a window's
// mean is about a tenth).
const spiralCost = 1.15

// calm ends a run: a window in which the limit held nobody back says
// nothing about the baseline.
func (b *baseline) calm() { b.run = 0 }

// used records whether the window just ended used at least half the limit.
func (b *baseline) used(busy bool) { b.idle = !busy }

// moved reports whether the baseline's lower-half mean moved from old by
// more than the noise of a probe's (a quarter). The mean would say so
// whenever a heavy tail or hung requests sway it.
func (b *baseline) moved(old float64) bool {
	return 4*b.low > 5*old || 5*b.low < 4*old
}

// stepStats is what a probe's step measured of the requests it counts.
type stepStats struct {
	sum         float64 // latencies, in nanoseconds, as float64 so that no sum overflows
	n           int
	first, last time.Time // the earliest and latest admission among them
	flight      float64   // the sum of the requests in flight each saw
	lat         sampleSet // their latencies
	cost        sampleSet // their latencies per request in flight
}

func (st *stepStats) add(s Sample) {
	if start := s.Start(); st.n == 0 {
		st.first, st.last = start, start
	} else if start.Before(st.first) {
		st.first = start
	} else if start.After(st.last) {
		st.last = start
	}
	st.sum += float64(s.Latency)
	st.n++
	st.flight += float64(s.InFlight)
	st.lat.add(float64(s.Latency))
	st.cost.add(float64(s.Latency) / float64(max(s.InFlight, 1)))
}

// merge adds o's requests to st's.
func (st *stepStats) merge(o *stepStats) {
	st.sum += o.sum
	st.n += o.n
	st.flight += o.flight
	for _, x := range o.lat.v[:o.lat.n] {
		st.lat.add(x)
	}
	for _, x := range o.cost.v[:o.cost.n] {
		st.cost.add(x)
	}
}

func (st *stepStats) reset() {
	st.sum, st.n, st.flight = 0, 0, 0
	st.first, st.last = time.Time{}, time.Time{}
	st.lat.reset()
	st.cost.reset()
}

// sampleSet keeps a uniform sample of up to 64 of the latencies added to it
// (a reservoir), for a statistic a heavy tail cannot sway.
type sampleSet struct {
	v    [64]float64
	n    int    // kept
	seen int    // added since the last reset
	rng  uint64 // a linear congruential generator's state: the reservoir's choices
}

func (s *sampleSet) reset() { s.n, s.seen = 0, 0 }

func (s *sampleSet) add(x float64) {
	s.seen++
	if s.n < len(s.v) {
		s.v[s.n] = x
		s.n++
		return
	}
	s.rng = s.rng*6364136223846793005 + 1442695040888963407
	if j := (s.rng >> 33) % uint64(s.seen); j < uint64(len(s.v)) {
		s.v[j] = x
	}
}

// lowMean returns the mean of the lower half of the sample, 0 for none. It
// moves with queueing as the mean does (a wait adds to every request), but
// hung requests, a slow route or a heavy tail do not sway it: they are all
// in the upper half.
func (s *sampleSet) lowMean() float64 {
	if s.n == 0 {
		return 0
	}
	v := s.v[:s.n]
	slices.Sort(v)
	half := (s.n + 1) / 2
	var sum float64
	for _, x := range v[:half] {
		sum += x
	}
	return sum / float64(half)
}
