package backpressure

import "time"

// baseline is the service's latency at a low concurrency, as AIMD and
// Gradient measure it: the limit is pinned to a few requests now and then
// (a probe) until enough of them have completed, and their mean latency is
// the latency the service has when nothing queues. Both algorithms judge
// every later window against it, so it must follow the service: when the
// service itself gets slower (or faster), the baseline must move with it,
// or the algorithm takes the new normal for congestion and spirals down.
//
// A probe starts at the beginning, every interval, and when the windows
// say the baseline may be stale: spiralWindows busy windows in a row that
// all shrank the limit for their latency, or all had a latency below the
// baseline by more than the tolerance. Congestion looks the same at first, so a
// probe that finds the baseline where it was doubles the run of windows
// the next one needs (up to maxBackoff doublings), and a probe that finds
// it moved, or a scheduled one, resets it.
type baseline struct {
	value    time.Duration // zero before the first probe ends
	at       int           // the concurrency a probe pins the limit to
	samples  int
	interval time.Duration // between scheduled probes; ≤ 0: at the start only

	probing  bool
	from, to time.Time // requests admitted in [from, to) count toward the probe
	sum      float64   // nanoseconds, as float64 so that no sum overflows
	n        int
	saved    float64 // the limit to restore when the probe ends
	before   float64 // the limit before the run of windows that called for the probe
	next     time.Time

	idle    bool    // the last window left half the limit unused
	run     int     // consecutive busy windows outside the tolerance, signed: >0 slow, <0 fast
	runFrom float64 // the limit when the run began
	runCost float64 // the latency per request in flight of the run's first window
	backoff int     // doublings of the run the next triggered probe needs
}

// spiralWindows is the run of windows, all slower (or all faster) than the
// baseline allows, that makes an algorithm measure its baseline again.
const spiralWindows = 4

// maxBackoff bounds the doublings of spiralWindows between probes that find
// nothing new.
const maxBackoff = 5

// start pins the limit: it returns the limit during the probe, and keeps
// limit to restore afterwards.
func (b *baseline) start(now time.Time, limit float64) float64 {
	b.probing = true
	b.from, b.to = now, time.Time{}
	b.sum, b.n = 0, 0
	b.saved, b.before = limit, limit
	if b.run > 0 {
		b.before = max(limit, b.runFrom)
	}
	b.run = 0
	return float64(b.at)
}

// add counts a sample toward the probe, if the request was admitted during
// it and succeeded. It reports whether the sample ended the probe; the
// limit to restore is then b.saved. Requests admitted during the probe that
// complete after it ended still count toward the baseline: without them it
// would be the mean of the first requests to complete, the shorter ones.
func (b *baseline) add(s Sample) (ended bool) {
	if s.Dropped || s.Start().Before(b.from) || (!b.probing && !s.Start().Before(b.to)) {
		return false
	}
	b.sum += float64(s.Latency)
	b.n++
	if !b.probing {
		b.value = time.Duration(b.sum / float64(b.n))
		return false
	}
	if b.n < b.samples {
		return false
	}
	old := b.value
	b.value = time.Duration(b.sum / float64(b.n))
	b.probing, b.to = false, s.At
	switch {
	case old == 0:
	case !b.moved(old):
		b.backoff = min(b.backoff+1, maxBackoff)
	default:
		// The windows that shrank the limit judged it by a stale baseline:
		// restore the limit from before them.
		b.saved, b.backoff = b.before, 0
	}
	if b.interval > 0 {
		b.next = s.At.Add(b.interval)
	}
	return true
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
	return -b.run >= need || (b.run >= need && 5*limit <= 4*b.runFrom && cost >= spiralCost*b.runCost)
}

// spiralCost is the rise in latency per request in flight over a slow run that
// says the latency did not fall with the limit (the noise of a window's
// mean is about a tenth).
const spiralCost = 1.3

// calm ends a run: a window in which the limit held nobody back says
// nothing about the baseline.
func (b *baseline) calm() { b.run = 0 }

// used records whether the window just ended used at least half the limit.
func (b *baseline) used(busy bool) { b.idle = !busy }

// moved reports whether the baseline moved from old by more than the noise
// of a probe's mean (a quarter).
func (b *baseline) moved(old time.Duration) bool {
	return 4*b.value > 5*old || 5*b.value < 4*old
}
