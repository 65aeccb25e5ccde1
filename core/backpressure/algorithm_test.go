package backpressure

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

	// Far past healthy (25ms > 2 × healthy): cut to the target at once,
	// the gradient no lower than 0.5.
	feed(g, 5, 240*ms, 25*ms, 21)
	want = 0.5*want + math.Min(math.Sqrt(want), want/4)
	assert.InDelta(t, want, g.limit, 1e-9)
	assert.Equal(t, Queueing, g.Cause())

	// Moderate queueing (15ms): a fifth of the way to the target.
	feed(g, 5, 400*ms, 15*ms, 16)
	target := healthy/15*want + math.Min(math.Sqrt(want), want/4)
	require.Less(t, target, want)
	want += 0.2 * (target - want)
	assert.InDelta(t, want, g.limit, 1e-9)

	// App-limited: a window where at most 6 of 21 were in flight changes
	// nothing, since nothing queued and a Poisson peak of 6 fits.
	require.Equal(t, 21, g.Limit())
	feed(g, 5, 600*ms, 50*ms, 6)
	assert.InDelta(t, want, g.limit, 1e-9)

	// Healthy and held back, once a window has queued: grow by the
	// gradient (healthy / 10ms) and the allowance, no longer doubling.
	feed(g, 5, 800*ms, 10*ms, 21)
	want = healthy/10*want + math.Min(math.Sqrt(want), want/4)
	assert.InDelta(t, want, g.limit, 1e-9)
	assert.Equal(t, Grew, g.Cause())

	// A drop in the window shrinks the limit by the backoff, whatever the latency.
	g.Update(at(1000*ms, 10*ms, 5, true))
	feed(g, 4, 1025*ms, 10*ms, 5)
	want *= 0.9
	assert.InDelta(t, want, g.limit, 1e-9)
	assert.Equal(t, Drops, g.Cause())
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
	// (Each window's request is admitted after the last window ended.)
	end := 110 * ms
	for range stuckWindows {
		require.False(t, g.base.probing)
		g.Update(at(end, 40*ms, 4, false))
		end += 100 * ms
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
