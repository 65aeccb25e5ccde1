package backpressure

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

func nan() float64 { return math.NaN() }

const ms = time.Millisecond

// at returns a sample that completed at epoch+end after latency, admitted
// with inFlight requests in flight.
func at(end, latency time.Duration, inFlight int, dropped bool) Sample {
	return Sample{At: epoch.Add(end), Latency: latency, InFlight: inFlight, Dropped: dropped}
}

func TestStatic(t *testing.T) {
	s := Static(7)
	assert.Equal(t, 7, s.Limit())
	assert.Equal(t, 7, s.Update(at(0, time.Hour, 1000, true)))
}

func TestAIMD(t *testing.T) {
	a, err := NewAIMD(AIMDConfig{Initial: 10, Min: 5, Max: 12, Tolerance: -1})
	require.NoError(t, err)
	var limits []int
	var raw []float64
	step := func(s Sample) {
		limits = append(limits, a.Update(s))
		raw = append(raw, a.limit)
	}
	step(at(10*ms, 10*ms, 4, false))  // 4 of 10 in flight: app-limited, no growth
	step(at(20*ms, 10*ms, 5, false))  // +1/√10
	step(at(30*ms, 10*ms, 10, false)) // +1/√10.3
	step(at(40*ms, 10*ms, 10, true))  // drop: ×0.9
	step(at(45*ms, 10*ms, 9, true))   // admitted at 35ms, before the cut at 40ms: ignored
	step(at(50*ms, 10*ms, 9, true))   // admitted at 40ms, under the cut limit: counts
	step(at(60*ms, 10*ms, 9, true))
	step(at(70*ms, 10*ms, 9, true))
	step(at(80*ms, 10*ms, 9, true))
	step(at(90*ms, 10*ms, 9, true)) // the floor, 5
	l0 := 10 + 1/math.Sqrt(10)
	l1 := l0 + 1/math.Sqrt(l0)
	l2 := l1 * 0.9
	l3 := math.Min(l2*0.9, l2-1) // at small limits, -1 is the larger step
	l4 := l3 - 1
	l5 := l4 - 1
	l6 := l5 - 1
	assert.Equal(t, []float64{10, l0, l1, l2, l2, l3, l4, l5, l6, 5}, raw)
	assert.Equal(t, []int{10, 10, 10, 9, 9, 8, 7, 6, 5, 5}, limits)

	// Growth stops at Max.
	for i := range 200 {
		a.Update(at(time.Second+time.Duration(i)*ms, ms, 12, false))
	}
	assert.Equal(t, 12, a.Limit())
}

func TestAIMDSmallLimitsShrinkByOne(t *testing.T) {
	a, err := NewAIMD(AIMDConfig{Initial: 3, Tolerance: -1})
	require.NoError(t, err)
	assert.Equal(t, 2, a.Update(at(10*ms, ms, 3, true)), "3 × 0.9 would keep 2.7 and shrink nothing")
	assert.Equal(t, 1, a.Update(at(20*ms, ms, 2, true)))
	assert.Equal(t, 1, a.Update(at(30*ms, ms, 1, true)), "never below Min")
}

func TestAIMDConfig(t *testing.T) {
	a, err := NewAIMD(AIMDConfig{})
	require.NoError(t, err)
	assert.Equal(t, AIMDConfig{Initial: 20, Min: 1, Max: 1000, Backoff: 0.9, Tolerance: 1.5,
		ProbeInterval: time.Minute, ProbeSamples: 20}, AIMDConfig{}.withDefaults())
	assert.Equal(t, 10, a.Limit(), "the baseline is measured from half the limit down")
	assert.Equal(t, 20, int(a.base.saved))
	one, err := NewAIMD(AIMDConfig{Max: 2})
	require.NoError(t, err)
	assert.Equal(t, 1, one.Limit(), "half of 2")
	for _, c := range []AIMDConfig{
		{Min: -1}, {Min: 10, Max: 5}, {Initial: 2000}, {Max: MaxLimit + 1},
		{Backoff: 1}, {Backoff: 0.4}, {Backoff: nan()},
		{Tolerance: 0.9}, {Tolerance: 11}, {Tolerance: nan()}, {ProbeSamples: -1},
	} {
		_, err := NewAIMD(c)
		assert.Error(t, err, "%+v", c)
	}
}

// feed gives g n samples of the given latency, the first ending at end and
// the next ones every 25ms, each admitted with inFlight in flight, and
// returns the limit after the last. Five samples (a test window's
// MinSamples) span 100ms plus latency: one window.
func feed(g *Gradient, n int, end, latency time.Duration, inFlight int) int {
	var limit int
	for i := range n {
		limit = g.Update(at(end+time.Duration(i)*25*ms, latency, inFlight, false))
	}
	return limit
}

func TestGradient(t *testing.T) {
	g, err := NewGradient(GradientConfig{Initial: 16, Min: 8, Max: 100, Window: 100 * ms, MinSamples: 5, ProbeSamples: 4, ProbeInterval: 10 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, 8, g.Limit(), "the baseline is measured at half the limit, Min at the lowest")

	// The probe: four samples, mean 10ms, the lower half's mean 8.5ms.
	for i, lat := range []time.Duration{8 * ms, 12 * ms, 9 * ms, 11 * ms} {
		assert.Equal(t, 8, g.Limit())
		g.Update(at(time.Duration(20+i)*ms, lat, 8, false))
	}
	assert.Equal(t, 10*ms, g.Baseline())
	assert.Equal(t, 16, g.Limit(), "the probe over (at 23ms), the initial limit")
	healthy := 1.25 * 8.5

	// A window of 5 samples over 100ms, all at the baseline's 8.5ms, before
	// any has queued: double (slow start).
	assert.Equal(t, 16, feed(g, 4, 40*ms, 8500*time.Microsecond, 16))
	assert.Equal(t, 16, g.Update(at(120*ms, 8500*time.Microsecond, 16, false)), "5 samples but only 97ms")
	want := 32.0
	assert.Equal(t, int(want), g.Update(at(130*ms, 8500*time.Microsecond, 16, false)), "6 samples over 100ms")
	assert.InDelta(t, want, g.limit, 1e-9)

	// Queueing: by Little's law the queue past the healthy wait is the
	// throughput times that wait. Far past healthy (25ms > 2 × healthy),
	// the limit is cut by it at once, the allowance added back. A sample
	// completes every millisecond, 21 in flight, from 160ms: the window
	// (opened at 130ms) ends at 230ms with 71 of them.
	feedEvery(g, 71, 160*ms, ms, 25*ms, 21)
	rate := 71 / 100e6
	want = want - rate*(25e6-healthy*1e6) + math.Min(math.Sqrt(want), want/4)
	assert.InDelta(t, want, g.limit, 1e-6)
	assert.Equal(t, Queueing, g.Cause())

	// Moderate queueing (20ms): a fifth of the way to the target. The
	// window opened at 230ms and ends at 330ms, with 81 samples.
	feedEvery(g, 81, 250*ms, ms, 20*ms, 21)
	rate = 81 / 100e6
	target := want - rate*(20e6-healthy*1e6) + math.Min(math.Sqrt(want), want/4)
	require.Less(t, target, want)
	want += 0.2 * (target - want)
	assert.InDelta(t, want, g.limit, 1e-6)

	// A window far past healthy cuts no more than half the limit.
	feedEvery(g, 101, 350*ms, ms, 200*ms, 21)
	// (None of these was admitted after the window opened, at 330ms: the
	// window goes on until enough were, for twice their latency, to 730ms.)
	feedEvery(g, 180, 550*ms, ms, 200*ms, 21)
	require.Equal(t, 26, g.Limit())
	g.Update(at(730*ms, 200*ms, 21, false))
	want = want/2 + math.Min(math.Sqrt(want), want/4)
	assert.InDelta(t, want, g.limit, 1e-6)

	// App-limited: a window where at most 6 were in flight changes
	// nothing, since nothing queued and a Poisson peak of 6 fits.
	require.Equal(t, 18, g.Limit())
	feed(g, 5, 800*ms, 50*ms, 6)
	assert.InDelta(t, want, g.limit, 1e-6)

	// Healthy and held back, once a window has queued: grow by the
	// gradient (healthy / 10ms) and the allowance, no longer doubling.
	feed(g, 5, 1000*ms, 10*ms, 18)
	want = healthy/10*want + math.Min(math.Sqrt(want), want/4)
	assert.InDelta(t, want, g.limit, 1e-6)
	assert.Equal(t, Grew, g.Cause())

	// A drop in the window shrinks the limit by the backoff, whatever the latency.
	g.Update(at(1200*ms, 10*ms, 5, true))
	feed(g, 4, 1225*ms, 10*ms, 5)
	want *= 0.9
	assert.InDelta(t, want, g.limit, 1e-6)
	assert.Equal(t, Drops, g.Cause())
}

// feedEvery gives g n samples of the given latency, the first ending at
// end and the next ones every gap, each admitted with inFlight in flight.
func feedEvery(g *Gradient, n int, end, gap, latency time.Duration, inFlight int) {
	for i := range n {
		g.Update(at(end+time.Duration(i)*gap, latency, inFlight, false))
	}
}

// probedAt16 returns a Gradient whose first probe (descending from 8 to 4,
// 10ms a request) ended at 43ms and restored its initial 16, doubling.
func probedAt16(t *testing.T) *Gradient {
	t.Helper()
	g, err := NewGradient(GradientConfig{Initial: 16, Min: 1, Window: 10 * ms, MinSamples: 4, ProbeSamples: 4, ProbeInterval: -1})
	require.NoError(t, err)
	feedEvery(g, 4, 20*ms, ms, 10*ms, 8)
	feedEvery(g, 4, 40*ms, ms, 10*ms, 4)
	require.Equal(t, 16, g.Limit(), "the probe over, at 43ms")
	require.True(t, g.starting)
	return g
}

// While the limit doubles, a window that filled it is judged by the
// requests admitted with it full, and lasts until MinSamples of them are
// done: those admitted while it was filling complete first and fast, on a
// service not yet queueing them.
func TestGradientSlowStartJudgesTheAddedConcurrency(t *testing.T) {
	g := probedAt16(t)

	feedEvery(g, 3, 60*ms, ms, 10*ms, 12) // admitted as the limit filled
	assert.Equal(t, 16, g.Update(at(63*ms, 10*ms, 16, false)), "the first admitted full: the window goes on")
	feedEvery(g, 3, 74*ms, ms, 30*ms, 16) // queued
	assert.Equal(t, 16, g.Limit())
	g.Update(at(100*ms, 30*ms, 16, false)) // twice the mean latency: the window ends
	assert.False(t, g.starting, "the requests admitted full queued: no more doubling")
	assert.Less(t, g.Limit(), 20, "and no doubling now")
}

// Half the requests take 5ms and half 200ms: a wait of 5ms, a queue of
// one or two, doubles the lower half's latency. The cut is the queue
// Little's law counts (the throughput times the wait past the healthy
// one), within the allowance here, not a cut by the gradient's 0.6.
func TestGradientCutsByTheQueueNotTheRatio(t *testing.T) {
	g, err := NewGradient(GradientConfig{Initial: 32, Min: 8, Window: 10 * ms, MinSamples: 4, ProbeSamples: 4, ProbeInterval: -1})
	require.NoError(t, err)
	mix := func(i int) time.Duration { return []time.Duration{5 * ms, 200 * ms}[i%2] }
	for i := range 4 {
		g.Update(at(300*ms+time.Duration(i)*ms, mix(i), 16, false))
	}
	for i := range 4 {
		g.Update(at(600*ms+time.Duration(i)*ms, mix(i), 8, false))
	}
	require.False(t, g.base.probing)
	require.Equal(t, float64(5*ms), g.base.low, "the lower half: the fast requests")
	require.Equal(t, 32, g.Limit())

	// Every request waits 5ms; 32 in flight complete every 3ms, about
	// 330 a second. Little's law: a queue of 1.25 past the healthy wait.
	counted, ended := false, false
	done, now := 0, 610*ms
	for ; now < 2*time.Second && !ended; now += 3 * ms {
		g.Update(at(now, mix(done)+5*ms, 32, false))
		done++
		ended = counted && g.winN == 0
		counted = g.winN > 0
	}
	require.True(t, ended, "a window ended")
	// Every request completed since the window opened (at 603ms) counts
	// toward the throughput, those admitted before it too; the window's
	// own, all fast so far, say 10ms.
	elapsed := now - 3*ms - 603*ms
	want := 32 - float64(done)/float64(elapsed)*float64(10*ms-6250*time.Microsecond) + math.Sqrt(32)
	assert.InDelta(t, want, g.limit, 1e-9, "within the allowance: it grows")
	assert.Equal(t, Grew, g.Cause())
	assert.False(t, g.starting, "a queue, if a short one: no more doubling")
}

// A healthy window whose limit rarely filled keeps the limit above the
// Poisson peaks of the requests in flight, so that a service with room to
// spare does not shed a burst.
func TestGradientKeepsRoomForPeaks(t *testing.T) {
	g, err := NewGradient(GradientConfig{Initial: 8, Min: 8, Window: 100 * ms, MinSamples: 5, ProbeSamples: 1, ProbeInterval: -1})
	require.NoError(t, err)
	g.Update(at(10*ms, 10*ms, 8, false))
	require.Equal(t, 8, g.Limit())
	feed(g, 5, 30*ms, 10*ms, 7)
	assert.Equal(t, int(7+3*math.Sqrt(7)+1), g.Limit())
}

func TestGradientProbesAgain(t *testing.T) {
	g, err := NewGradient(GradientConfig{Initial: 4, Min: 2, Window: 10 * ms, MinSamples: 2, ProbeSamples: 2, ProbeInterval: time.Second})
	require.NoError(t, err)
	feed(g, 2, 0, 10*ms, 2)
	require.Equal(t, 10*ms, g.Baseline())
	require.Equal(t, 4, g.Limit())

	// A second after the probe ended (at 25ms), the next sample starts a
	// probe: the limit drops to half, and requests admitted before the
	// probe do not count toward it.
	assert.Equal(t, 4, g.Update(at(1024*ms, 10*ms, 4, false)))
	assert.Equal(t, 2, g.Update(at(1025*ms, 10*ms, 4, false)))
	for i := range 5 {
		assert.Equal(t, 2, g.Update(at(1030*ms+time.Duration(i)*ms, 10*ms, 4, false)), "admitted before the probe")
	}
	assert.Equal(t, 2, g.Update(at(1100*ms, 30*ms, 2, false)))
	assert.Equal(t, 4, g.Update(at(1110*ms, 50*ms, 2, false)), "the limit from before the probe")
	assert.Equal(t, 40*ms, g.Baseline(), "the service got slower")
}

func TestGradientProbesWhenStuckAtMin(t *testing.T) {
	g, err := NewGradient(GradientConfig{Initial: 4, Min: 4, Window: 10 * ms, MinSamples: 1, ProbeSamples: 1, ProbeInterval: -1})
	require.NoError(t, err)
	g.Update(at(10*ms, 10*ms, 4, false))
	require.Equal(t, 10*ms, g.Baseline())
	// The service got slower for good: every window shrinks toward Min.
	// (4 in flight at 40ms: a request completes every 10ms, the first
	// admitted after the probe ended.)
	end := 60 * ms
	for g.atMin < stuckWindows {
		require.False(t, g.base.probing)
		require.Less(t, end, time.Second, "the windows never reach Min")
		g.Update(at(end, 40*ms, 4, false))
		end += 10 * ms
	}
	assert.Equal(t, 4, g.Limit())
	g.Update(at(end, 40*ms, 4, false))
	assert.True(t, g.base.probing, "five windows at Min: measure again")
	g.Update(at(end+50*ms, 40*ms, 4, false))
	assert.Equal(t, 40*ms, g.Baseline())
}

func TestGradientConfig(t *testing.T) {
	g, err := NewGradient(GradientConfig{})
	require.NoError(t, err)
	assert.Equal(t, GradientConfig{Initial: 20, Min: 1, Max: 1000, Window: 250 * ms, MinSamples: 10,
		Tolerance: 1.25, Smoothing: 0.2, Backoff: 0.9, ProbeInterval: time.Minute, ProbeSamples: 20},
		GradientConfig{}.withDefaults())
	assert.Equal(t, 10, g.Limit(), "the first probe starts at half the initial limit")
	for _, c := range []GradientConfig{
		{Min: -1}, {Min: 30, Initial: 20}, {Window: -1}, {MinSamples: -1}, {Tolerance: 0.9}, {Tolerance: nan()},
		{Smoothing: 1.5}, {Smoothing: -1}, {Backoff: 1}, {ProbeSamples: -2},
	} {
		_, err := NewGradient(c)
		assert.Error(t, err, "%+v", c)
	}
}

func TestGradientSurvivesHostileSamples(t *testing.T) {
	g, err := NewGradient(GradientConfig{MinSamples: 1, ProbeSamples: 1, Window: 1})
	require.NoError(t, err)
	g.Update(at(0, 0, 4, false)) // a zero baseline
	for i := range 100 {
		g.Update(at(time.Duration(i+1)*ms, time.Duration(math.MaxInt64), MaxLimit, false))
		g.Update(at(time.Duration(i+1)*ms, 0, MaxLimit, false))
	}
	assert.GreaterOrEqual(t, g.Limit(), 1)
	assert.LessOrEqual(t, g.Limit(), 1000)
	assert.False(t, math.IsNaN(g.limit))
}

// samples is a Controller that keeps what it is given, at a fixed limit.
type samples struct {
	limit int
	got   []Sample
}

func (c *samples) Limit() int { return c.limit }
func (c *samples) Update(s Sample) int {
	c.got = append(c.got, s)
	return c.limit
}

// With Headroom, a request of a lower class is admitted into less room than
// the limit: a Sample says how much, and the last of it is the limit for
// that request (the probe's step is full, the limit held it back).
func TestSampleRoom(t *testing.T) {
	ctl := &samples{limit: 10}
	l, clock, _ := newLimiter(t, Config{Controller: ctl, Headroom: Headroom{Critical: 0.2, Default: 0.2}})
	var ps []Permit
	for _, c := range []core.Class{core.Sheddable, core.Default, core.Critical} {
		ps = append(ps, mustAcquire(t, l, c))
	}
	clock.Advance(ms)
	for _, p := range ps {
		p.Done(core.Succeeded)
	}
	require.Len(t, ctl.got, 3)
	assert.Equal(t, []int{6, 8, 10}, []int{ctl.got[0].Room, ctl.got[1].Room, ctl.got[2].Room})
	assert.Equal(t, 10, Sample{InFlight: 6, Room: 6}.busy(10), "the last of its room")
	assert.Equal(t, 9, Sample{InFlight: 5, Room: 6}.busy(10))
	assert.Equal(t, 7, Sample{InFlight: 7}.busy(10), "no room said: the limit")
	assert.Equal(t, MaxLimit, Sample{InFlight: MaxLimit, Room: 1}.busy(MaxLimit), "no overflow")

	// A Gradient whose requests are all of the default class, with 20% of
	// the limit kept for critical ones: its probe's steps fill at 8 of 10
	// and 4 of 5, and it descends.
	g, err := NewGradient(GradientConfig{Initial: 20, Min: 1, ProbeSamples: 2})
	require.NoError(t, err)
	require.Equal(t, 10, g.Limit())
	g.Update(Sample{At: epoch.Add(20 * ms), Latency: 10 * ms, InFlight: 8, Room: 8})
	assert.Equal(t, 5, g.Update(Sample{At: epoch.Add(21 * ms), Latency: 10 * ms, InFlight: 8, Room: 8}), "a full step, and down")
	assert.True(t, g.base.probing)
}

// While the limit doubles, a window that filled it once waits for more of
// the requests that filled it, but not for ever: should the load fall, four
// times as long as it would have lasted.
func TestGradientSlowStartWaitEnds(t *testing.T) {
	g := probedAt16(t)
	g.Update(at(60*ms, 10*ms, 16, false)) // the limit filled once
	end := 61 * ms
	for ; g.winN > 0 && end < time.Second; end += ms {
		g.Update(at(end, 10*ms, 3, false)) // then the load fell
	}
	assert.Zero(t, g.winN, "the window ended")
	assert.Equal(t, 43*ms+80*ms, end-ms, "at four times the 20ms it would have lasted")
}
