package backpressure

import (
	"fmt"
	"math"
	"time"
)

// Gradient is a latency-based limit: each window (of the requests admitted
// under the limit, at least twice their latency long) it compares their
// latency with the service's latency when nothing queues (the baseline,
// measured now and then by a probe that lowers the limit in steps), takes
// the queue off the limit when requests queue (the throughput times the
// wait, Little's law), and grows it when they do not. Latencies are
// compared by the mean of their lower half, which a wait in the queue
// lengthens but hung requests, a slow route or a heavy tail do not sway. It
// settles where every slot is busy and the queue is a few requests deep,
// and follows the capacity when it changes; docs/backpressure.md gives the
// update rule and how it differs from Netflix's Gradient2.
type Gradient struct {
	limit      float64
	min, max   int
	window     time.Duration
	minSamples int
	tolerance  float64
	smoothing  float64
	backoff    float64
	cause      Cause

	base     baseline
	atMin    int  // consecutive windows that ended at Min
	starting bool // no window has queued or dropped yet: grow by doubling

	winFrom    time.Time // the window counts the requests admitted from then on
	winSum     float64   // latencies of the window's successful requests, in nanoseconds
	winSet     sampleSet
	winOK      int
	winN       int
	winDrops   int
	winBusiest int       // the most requests in flight any of the window's requests saw
	winFlight  float64   // the sum of the requests in flight each of them saw
	winPinned  int       // how many of them filled the limit
	winFull    sampleSet // the latencies of those that filled it and succeeded
	winDone    int       // every request completed since winFrom, whenever admitted: the throughput
}

// stuckWindows is how many windows at Min make Gradient measure its baseline
// again: a baseline from before the service slowed down holds the limit at
// Min for good (Envoy's rule).
const stuckWindows = 5

// GradientConfig configures a Gradient limit. Zero fields take their
// defaults.
type GradientConfig struct {
	// Initial is the limit after the first probe (default 20, within Min
	// and Max).
	Initial int
	// Min is the lowest limit, and the lowest a probe descends to (default
	// 1).
	Min int
	// Max is the highest limit (default 1000).
	Max int
	// Window is the shortest time between two updates (default 250ms).
	Window time.Duration
	// MinSamples is the fewest completed requests a window needs (default
	// 10).
	MinSamples int
	// Tolerance is how far above the baseline latency may be without
	// counting as queueing, as a factor (default 1.25, at least 1).
	Tolerance float64
	// Smoothing is the share of a decrease applied per window, in (0, 1]
	// (default 0.2).
	Smoothing float64
	// Backoff multiplies the limit after a window with drops, in [0.5, 1)
	// (default 0.9).
	Backoff float64
	// ProbeInterval is the time between two measurements of the baseline
	// (default 60s); a negative value measures it once, at the start.
	ProbeInterval time.Duration
	// ProbeSamples is the number of requests each step of a probe
	// measures, admitted with the step full (default 20); half as many
	// decide a step whose answer is clear.
	ProbeSamples int
}

// NewGradient returns a Gradient limit, or an error naming the field at
// fault. It starts by measuring its baseline: its limit is half of Initial
// (or Min) until the probe's first step has measured ProbeSamples requests
// admitted with it full.
func NewGradient(c GradientConfig) (*Gradient, error) {
	c = c.withDefaults()
	if err := checkBounds("Gradient", c.Initial, c.Min, c.Max); err != nil {
		return nil, err
	}
	switch {
	case c.Window < 0:
		return nil, fmt.Errorf("backpressure: Gradient window must not be negative, got %v", c.Window)
	case c.MinSamples < 1:
		return nil, fmt.Errorf("backpressure: Gradient minimum samples must be positive, got %d", c.MinSamples)
	case !(c.Tolerance >= 1 && c.Tolerance <= 10):
		return nil, fmt.Errorf("backpressure: Gradient tolerance must be in [1, 10], got %v", c.Tolerance)
	case !(c.Smoothing > 0 && c.Smoothing <= 1):
		return nil, fmt.Errorf("backpressure: Gradient smoothing must be in (0, 1], got %v", c.Smoothing)
	case !(c.Backoff >= 0.5 && c.Backoff < 1):
		return nil, fmt.Errorf("backpressure: Gradient backoff must be in [0.5, 1), got %v", c.Backoff)
	case c.ProbeSamples < 1:
		return nil, fmt.Errorf("backpressure: Gradient probe samples must be positive, got %d", c.ProbeSamples)
	}
	g := &Gradient{
		min: c.Min, max: c.Max,
		window: c.Window, minSamples: c.MinSamples,
		tolerance: c.Tolerance, smoothing: c.Smoothing, backoff: c.Backoff,
		base: baseline{floor: c.Min, samples: c.ProbeSamples, interval: c.ProbeInterval},
	}
	g.limit, g.starting = g.base.start(time.Time{}, float64(c.Initial)), true
	return g, nil
}

func (c GradientConfig) withDefaults() GradientConfig {
	if c.Min == 0 {
		c.Min = 1
	}
	if c.Max == 0 {
		c.Max = 1000
	}
	if c.Initial == 0 {
		c.Initial = min(max(20, c.Min), c.Max)
	}
	if c.Window == 0 {
		c.Window = 250 * time.Millisecond
	}
	if c.MinSamples == 0 {
		c.MinSamples = 10
	}
	if c.Tolerance == 0 {
		c.Tolerance = 1.25
	}
	if c.Smoothing == 0 {
		c.Smoothing = 0.2
	}
	if c.Backoff == 0 {
		c.Backoff = 0.9
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = time.Minute
	}
	if c.ProbeSamples == 0 {
		c.ProbeSamples = 20
	}
	return c
}

// Limit returns the current limit.
func (g *Gradient) Limit() int { return int(g.limit) }

// Baseline returns the mean latency the last probe measured where nothing
// queued, or zero before the first measurement ends.
func (g *Gradient) Baseline() time.Duration { return g.base.value }

// Cause returns why the limit last moved (zero before it has).
func (g *Gradient) Cause() Cause { return g.cause }

// Update folds one sample into the current probe or window, and returns the
// limit, updated when the sample ends a probe or a window.
func (g *Gradient) Update(s Sample) int {
	switch g.base.add(s) {
	case probed:
		g.limit, g.cause, g.atMin = clampLimit(g.base.saved, g.min, g.max), Probed, 0
		g.openWindow(s.At)
		return int(g.limit)
	case stepDown:
		g.limit = float64(g.base.level)
		return int(g.limit)
	}
	if g.base.probing {
		return int(g.limit)
	}
	if g.atMin >= stuckWindows || g.base.due(s.At) {
		g.startProbe(s.At)
		return int(g.limit)
	}
	g.winDone++
	if s.Start().Before(g.winFrom) {
		return int(g.limit) // admitted under an older limit: it says nothing of this one
	}
	g.winN++
	busy := s.busy(int(g.limit))
	g.winBusiest = max(g.winBusiest, busy)
	g.winFlight += float64(busy)
	if busy >= int(g.limit) {
		g.winPinned++
	}
	if s.Dropped {
		g.winDrops++
	} else {
		g.winSum += float64(s.Latency)
		g.winSet.add(float64(s.Latency))
		g.winOK++
		if busy >= int(g.limit) {
			g.winFull.add(float64(s.Latency))
		}
	}
	// A window lasts Window, and at least twice the mean latency of the
	// requests it counts: the first requests admitted under a new limit to
	// complete are the shortest, and a window of them alone would judge
	// the limit before its queue had formed. While the limit doubles, a
	// window that filled it lasts until MinSamples of the requests that
	// filled it are done (or four times as long as it would have, should
	// the load fall): those admitted while it was still filling are done
	// first, and say nothing of the concurrency just added.
	elapsed := s.At.Sub(g.winFrom)
	least := max(float64(g.window), 2*g.winSum/float64(max(g.winOK, 1)))
	if g.winN < g.minSamples || float64(elapsed) < least ||
		(g.starting && g.winDrops == 0 && g.winBusiest >= int(g.limit) && g.winFull.seen < g.minSamples && float64(elapsed) < 4*least) {
		return int(g.limit)
	}
	if g.endWindow(s.At) {
		g.startProbe(s.At)
	} else {
		g.openWindow(s.At)
	}
	return int(g.limit)
}

// endWindow updates the limit from the window just ended and reports
// whether the windows call for a probe of the baseline.
func (g *Gradient) endWindow(now time.Time) (probe bool) {
	old := g.limit
	g.base.used(2*g.winBusiest >= int(g.limit))
	switch {
	case g.winDrops > 0:
		g.limit = min(g.limit*g.backoff, g.limit-1)
		g.starting = false
		g.base.calm()
	case 2*g.winBusiest < int(g.limit):
		// The service is not using the limit: leave it.
		g.base.calm()
	default:
		// The gradient is how far the latency is from the healthy one:
		// below 1 when requests queue, up to Tolerance when none do.
		// Both sides are the lower half's mean (sampleSet.lowMean): a
		// wait in the queue lengthens every request, while hung
		// requests, a slow route and a heavy tail move the mean of a
		// window of a few dozen by more than any tolerance.
		healthy := g.tolerance * g.base.low
		latency := g.winSum / float64(max(g.winOK, 1))
		low := g.winSet.lowMean()
		if g.starting && g.winFull.n > 0 {
			// Doubling: judge the concurrency just added by the requests
			// admitted with it in use (see Update).
			low = g.winFull.lowMean()
		}
		gradient := g.tolerance
		if low > 0 {
			gradient = math.Min(math.Max(healthy/low, 0.5), g.tolerance)
		}
		// The queue allowed for: √limit, as Gradient2's, but no more than
		// a quarter of the limit, lest a service of one or two workers
		// queue as many again.
		allowance := math.Min(math.Sqrt(g.limit), g.limit/4)
		target := gradient*g.limit + allowance
		if elapsed := now.Sub(g.winFrom); low > healthy && elapsed > 0 {
			// Requests queue: by Little's law, the queue past the healthy
			// wait is the throughput times that wait. Taking it off
			// (rather than scaling the limit by the gradient, which is the
			// same when every request takes as long) keeps a mix of fast
			// and slow requests from halving the limit for the wait of a
			// queue of two: a wait that doubles the fast ones' latency
			// adds little to the slow ones', and the throughput is theirs.
			rate := float64(g.winDone) / float64(elapsed)
			target = math.Max(g.limit-rate*(low-healthy), g.limit/2) + allowance
		}
		if gradient < 0.9*g.tolerance {
			g.starting = false // the first sign of a queue (or of noise: either way, no longer double)
		}
		switch {
		case target < g.limit && low > 2*healthy:
			g.limit = target // far past healthy: a smoothed cut would take many round trips
		case target < g.limit:
			g.limit += g.smoothing * (target - g.limit)
		case g.winBusiest >= int(g.limit) && g.starting:
			// Until the first sign of a queue, double (TCP's slow start)
			// a service of 100 workers at 400 ms is otherwise a dozen
			// windows, ten seconds, away from a limit of 20.
			g.limit *= 2
		case g.winBusiest >= int(g.limit):
			// Grow only a limit that held requests back: one that never
			// filled has shown nothing about the service beyond it.
			g.limit = target
		}

		if flight := g.winFlight / float64(g.winN); gradient >= 1 && 2*g.winPinned < g.winN {
			// Nothing queues, and the limit rarely held: the requests in
			// flight are as many as arrive within a latency, a count
			// that varies as a Poisson one does. Keep the limit above its
			// peaks, lest a service with room to spare shed a burst.
			g.limit = math.Max(g.limit, flight+3*math.Sqrt(flight)+1)
		}
		// Faster than the baseline by the tolerance twice over: a window's
		// requests are the first of theirs to complete, and a probe's
		// step, longer, holds more of the slow ones, so that a service
		// with a long tail reads a little faster than its baseline.
		fast := low*g.tolerance*g.tolerance < g.base.low
		probe = g.base.judge(target < old && g.winBusiest >= int(old), fast, latency, g.winFlight/float64(g.winN), old, g.limit)
	}
	g.limit = clampLimit(g.limit, g.min, g.max)
	switch {
	case g.limit > old:
		g.cause = Grew
	case g.limit < old && g.winDrops > 0:
		g.cause = Drops
	case g.limit < old:
		g.cause = Queueing
	}
	if int(g.limit) <= g.min {
		g.atMin++
	} else {
		g.atMin = 0
	}
	return probe
}

// openWindow starts a window at now: it counts the requests admitted from
// then on.
func (g *Gradient) openWindow(now time.Time) {
	g.winFrom = now
	g.resetWindow()
}

func (g *Gradient) resetWindow() {
	g.winSum, g.winOK, g.winN, g.winDrops, g.winBusiest, g.winFlight, g.winPinned, g.winDone = 0, 0, 0, 0, 0, 0, 0, 0
	g.winSet.reset()
	g.winFull.reset()
}

// startProbe lowers the limit to the first step of a probe (see baseline).
func (g *Gradient) startProbe(now time.Time) {
	g.limit, g.cause = g.base.start(now, g.limit), Probing
	g.openWindow(now)
}
