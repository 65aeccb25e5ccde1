package backpressure

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/sluice/core"
)

// A core.LimitChanged event says why the limit moved (Cause) and against
// what baseline (Latency), and Limiter.Baseline reads it: an operator sees
// a spiral start.
func TestLimitChangedSaysWhy(t *testing.T) {
	g, err := NewGradient(GradientConfig{Initial: 4, Min: 2, ProbeSamples: 2})
	require.NoError(t, err)
	l, clock, rec := newLimiter(t, Config{Controller: g})
	assert.Equal(t, time.Duration(0), l.Baseline(), "not measured yet")
	p1, p2 := mustAcquire(t, l, core.Default), mustAcquire(t, l, core.Default)
	clock.Advance(10 * ms)
	p2.Done(core.Succeeded) // admitted with the probe's step full
	p1.Done(core.Succeeded) // the probe's second request (a step of 2 is full at 1): the baseline is measured
	assert.Equal(t, []core.Event{{Kind: core.LimitChanged, Limit: 4, Cause: "probed", Baseline: 10 * ms}}, rec.take())
	assert.Equal(t, 10*ms, l.Baseline())

	a, err := NewAIMD(AIMDConfig{Initial: 10, Tolerance: -1})
	require.NoError(t, err)
	l, _, rec = newLimiter(t, Config{Controller: a})
	mustAcquire(t, l, core.Default).Done(core.Failed)
	assert.Equal(t, []core.Event{{Kind: core.LimitChanged, Limit: 9, Cause: "drops"}}, rec.take())
	assert.Equal(t, time.Duration(0), l.Baseline(), "a loss-only AIMD measures none")

	l, _, rec = newLimiter(t, Config{Controller: Static(1)})
	mustAcquire(t, l, core.Default).Done(core.Failed)
	assert.Empty(t, rec.take())
	assert.Equal(t, time.Duration(0), l.Baseline())
}

func TestCauseString(t *testing.T) {
	assert.Equal(t, "queueing", Queueing.String())
	assert.Equal(t, "probed", Probed.String())
	assert.Equal(t, "Cause(0)", Cause(0).String())
	assert.Equal(t, "Cause(9)", Cause(9).String())
}

// AIMD judges a round trip's mean latency against Tolerance × the baseline:
// within it, the round trip's growth is credited; over it, the limit is cut
// and the growth forgone.
func TestAIMDJudgesRoundTrips(t *testing.T) {
	a, err := NewAIMD(AIMDConfig{Initial: 20, Min: 10, ProbeSamples: 4, ProbeInterval: -1})
	require.NoError(t, err)
	require.Equal(t, 10, a.Limit())
	for i := range 4 {
		a.Update(at(time.Duration(10+i)*ms, 10*ms, 10, false))
	}
	require.Equal(t, 10*ms, a.Baseline())
	require.Equal(t, 20, a.Limit())
	assert.Equal(t, Probed, a.Cause())

	// A round trip (20 requests, the limit, over twice their latency) at
	// the baseline: √20 of growth.
	end := 30 * ms
	for i := range 20 {
		a.Update(at(end+time.Duration(i)*ms, 10*ms, 20, false))
	}
	want := 20 + 4.47213595499958
	assert.InDelta(t, want, a.limit, 1e-9)
	assert.Equal(t, Grew, a.Cause())

	// One at 16ms, over 1.5 × 10ms: cut, and no growth.
	end += 100 * ms
	for i := range 24 {
		a.Update(at(end+time.Duration(i)*ms, 16*ms, 24, false))
	}
	want *= 0.9
	assert.InDelta(t, want, a.limit, 1e-9)
	assert.Equal(t, Queueing, a.Cause())

	// A window in which at most 8 of 22 were in flight: the limit held
	// nobody back, and neither moves.
	end += 100 * ms
	for i := range 22 {
		a.Update(at(end+time.Duration(i)*ms, 40*ms, 8, false))
	}
	assert.InDelta(t, want, a.limit, 1e-9)
}

// A slow run probes again only when the latency per request in flight rose
// as the limit fell (Little's law: a queue's latency falls with it).
func TestBaselineSpiral(t *testing.T) {
	b := baseline{value: 10 * ms, low: float64(10 * ms), floor: 4, samples: 2}
	ms := float64(time.Millisecond)
	// Queueing: latency falls with the requests in flight.
	limit := 40.0
	for range 8 {
		next := limit * 0.9
		require.False(t, b.judge(true, false, limit/2*ms, limit, limit, next), "latency %v at %v", limit/2, limit)
		limit = next
	}
	b.calm()
	// The service got slower: the latency stays as the limit falls.
	limit = 40
	var probe bool
	for i := range 4 {
		next := limit * 0.9
		probe = b.judge(true, false, 20*ms, limit, limit, next)
		assert.Equal(t, i == 3, probe, "window %d, limit %v", i, next)
		limit = next
	}
	assert.Equal(t, 13.0, b.start(epoch, limit), "the probe starts at half the limit")
	assert.Equal(t, 40.0, b.before, "and keeps the limit from before the run")

	// The probe finds the service twice as slow: the latency stays as the
	// requests in flight halve, so the descent stops at its second step,
	// and the limit from before the run comes back.
	assert.Equal(t, noStep, b.add(at(time.Second, 20*time.Millisecond, 13, false)))
	assert.Equal(t, stepDown, b.add(at(time.Second+time.Millisecond, 20*time.Millisecond, 13, false)))
	assert.Equal(t, 6, b.level)
	b.add(at(2*time.Second, 20*time.Millisecond, 6, false))
	assert.Equal(t, probed, b.add(at(2*time.Second+time.Millisecond, 20*time.Millisecond, 6, false)))
	assert.False(t, b.probing)
	assert.Equal(t, 20*time.Millisecond, b.value)
	assert.Equal(t, 40.0, b.saved)
	assert.Equal(t, 0, b.backoff)

	// A probe that finds the baseline where it was doubles the run the next
	// one needs.
	b.start(epoch.Add(3*time.Second), 30)
	b.add(at(4*time.Second, 21*time.Millisecond, 15, false))
	b.add(at(4*time.Second+time.Millisecond, 21*time.Millisecond, 15, false))
	b.add(at(5*time.Second, 21*time.Millisecond, 7, false))
	assert.Equal(t, probed, b.add(at(5*time.Second+time.Millisecond, 21*time.Millisecond, 7, false)))
	assert.Equal(t, 1, b.backoff)
	assert.Equal(t, 30.0, b.saved)
	for i := range 2 * spiralWindows {
		assert.Equal(t, i == 2*spiralWindows-1, b.judge(false, true, 0, 10, 10, 10), "fast window %d", i)
	}
}

// Requests admitted during a probe that complete after it still count: the
// first to complete are the shortest.
func TestBaselineCountsStragglers(t *testing.T) {
	b := baseline{floor: 2, samples: 2}
	assert.Equal(t, 5.0, b.start(epoch, 10))
	b.add(at(10*ms, 10*ms, 5, false))
	assert.Equal(t, stepDown, b.add(at(12*ms, 12*ms, 5, false)))
	b.add(at(30*ms, 10*ms, 2, false))
	assert.Equal(t, probed, b.add(at(32*ms, 12*ms, 2, false)), "the latency stayed as the requests in flight fell")
	assert.Equal(t, 11*ms, b.value, "both steps' requests: the step above did not queue either")
	b.add(at(60*ms, 38*ms, 2, false)) // admitted at 22ms, during the probe
	assert.Equal(t, (44+38)*ms/5, b.value)
	b.add(at(70*ms, 30*ms, 10, false)) // admitted at 40ms, after it
	assert.Equal(t, (44+38)*ms/5, b.value)
}

// A probe descends while the latency falls with the requests in flight
// (they queued), and restores no more than the concurrency the service
// carried at the step that queued, plus its square root.
func TestBaselineDescends(t *testing.T) {
	b := baseline{floor: 1, samples: 2}
	assert.Equal(t, 40.0, b.start(epoch, 80))
	// C = 10, S = 10ms: 40 in flight take 40ms, 20 take 20ms, 10 take 10ms,
	// and 5 take 10ms too.
	steps := []struct {
		flight  int
		latency time.Duration
		want    step
	}{{40, 40 * ms, stepDown}, {20, 20 * ms, stepDown}, {10, 10 * ms, stepDown}, {5, 10 * ms, probed}}
	now := 100 * ms
	for _, st := range steps {
		b.add(at(now, st.latency, st.flight, false))
		assert.Equal(t, st.want, b.add(at(now+ms, st.latency, st.flight, false)), "step of %d", st.flight)
		now += 100 * ms
	}
	assert.Equal(t, 10*ms, b.value)
	assert.InDelta(t, 10+math.Sqrt(10), b.saved, 1e-9, "the concurrency the service carried, and its square root")
}

// A step judges by the requests admitted while it was full: at the start
// of a run the requests in flight are still rising, and a step that held
// fewer than its level would read as a queue. A step the load does not
// fill ends the probe, measured by the requests it had room for.
func TestBaselineJudgesFullSteps(t *testing.T) {
	b := baseline{floor: 1, samples: 4}
	assert.Equal(t, 10.0, b.start(epoch, 20))
	// Rising: 2, 4 and 6 in flight, 10 ms each, below 10 − √10 (a Poisson
	// dip of a full step); these count for nothing while full requests
	// come in first.
	for i, f := range []int{2, 4, 6} {
		assert.Equal(t, noStep, b.add(at(time.Duration(10+i)*ms, 10*ms, f, false)))
	}
	for i := range 3 {
		assert.Equal(t, noStep, b.add(at(time.Duration(20+i)*ms, 10*ms, 10-i, false)))
	}
	assert.Equal(t, stepDown, b.add(at(23*ms, 10*ms, 10, false)), "four requests admitted at 10, or within a dip of it")
	// At 5 the latency stays (nothing queued at 10): the descent stops,
	// although the step above's first requests had as few in flight.
	for i := range 3 {
		b.add(at(time.Duration(40+i)*ms, 10*ms, 5, false))
	}
	assert.Equal(t, probed, b.add(at(43*ms, 10*ms, 5, false)))
	assert.Equal(t, 10*ms, b.value)
	assert.Equal(t, 20.0, b.saved)

	// Requests admitted with room to spare, but only as the step filled
	// (over 5ms, a sixth of their latency): a service already queueing
	// them, whose step will fill. They end nothing.
	b.start(epoch.Add(time.Second), 40)
	for i := range 6 {
		assert.Equal(t, noStep, b.add(at(time.Second+time.Duration(40+i)*ms, 30*ms, 4+i%3, false)))
	}
	// A probe the load never fills: samples requests admitted with room
	// to spare over twice their latency end it, and their latency is the
	// baseline.
	b.start(epoch.Add(2*time.Second), 40)
	for i := range 3 {
		assert.Equal(t, noStep, b.add(at(2*time.Second+time.Duration(20+10*i)*ms, 12*ms, 4, false)))
	}
	assert.Equal(t, probed, b.add(at(2*time.Second+50*ms, 12*ms, 4, false)), "admitted over 30ms")
	assert.Equal(t, 12*ms, b.value)
	assert.Equal(t, 20, b.level, "it ended where it began")
	b.add(at(2*time.Second+70*ms, 40*ms, 3, false)) // admitted during the probe, with room to spare
	assert.Equal(t, 17*ms+600*time.Microsecond, b.value)
	assert.Equal(t, float64(12*ms), b.low, "the lower half's mean stays the step's, as a window's would")
	b.add(at(2*time.Second+80*ms, 40*ms, 20, false)) // admitted full: not of the kind it ended on
	assert.Equal(t, 17*ms+600*time.Microsecond, b.value)
}

// Half a step decides when its answer is clear: a rise of the latency per
// request in flight of 1.8 or more ends the descent, one under 1.1 goes on
// down; in between, the step measures all its requests.
func TestBaselineDecidesEarly(t *testing.T) {
	const samples = 20
	run := func(latency time.Duration) (step, int) {
		b := baseline{floor: 1, samples: samples}
		b.start(epoch, 40)
		for i := range samples {
			b.add(at(time.Duration(30+i)*ms, 20*ms, 20, false)) // 1 ms per request in flight
		}
		require.Equal(t, 10, b.level)
		for i := range samples {
			if st := b.add(at(time.Duration(100+i)*ms, latency, 10, false)); st != noStep {
				return st, i + 1
			}
		}
		return noStep, samples
	}
	st, n := run(20 * ms) // 2 ms per request in flight: the step above did not queue
	assert.Equal(t, probed, st)
	assert.Equal(t, samples/2, n)
	st, n = run(10 * ms) // 1 ms: it queued
	assert.Equal(t, stepDown, st)
	assert.Equal(t, samples/2, n)
	st, n = run(15 * ms) // 1.5 ms: unclear on half the requests; on all, it did not queue
	assert.Equal(t, probed, st)
	assert.Equal(t, samples, n)
	st, n = run(14 * ms) // 1.4 ms: it queued, told on all the requests
	assert.Equal(t, stepDown, st)
	assert.Equal(t, samples, n)
}

// The step that ends the descent measures the baseline with the step
// above's requests as well when the rise says clearly that neither queued;
// when the rise is only past the descent's bound, the step above may have
// queued a little, and the step's own requests measure it.
func TestBaselinePoolsAClearStep(t *testing.T) {
	probe := func(lower time.Duration) baseline {
		b := baseline{floor: 1, samples: 4}
		b.start(epoch, 20)
		for i := range 4 {
			b.add(at(time.Duration(20+i)*ms, 8*ms, 10, false))
		}
		require.Equal(t, 5, b.level)
		var st step
		for i := range 4 {
			st = b.add(at(time.Duration(40+i)*ms, lower, 5, false))
		}
		require.Equal(t, probed, st)
		return b
	}
	b := probe(12 * ms) // a rise of 3
	assert.Equal(t, 10*ms, b.value)
	assert.Equal(t, float64(8*ms), b.low)
	b = probe(6500 * time.Microsecond) // a rise of 1.625
	assert.Equal(t, 6500*time.Microsecond, b.value)
	assert.Equal(t, float64(6500*time.Microsecond), b.low)
}

// A scheduled probe waits while the limit holds nobody back: it would shed
// requests the limit has room for, to measure a baseline that decides
// nothing.
func TestScheduledProbeWaitsForABusyLimit(t *testing.T) {
	g, err := NewGradient(GradientConfig{Initial: 20, Min: 10, Window: 10 * ms, MinSamples: 2, ProbeSamples: 2, ProbeInterval: time.Second})
	require.NoError(t, err)
	feed(g, 2, 0, 10*ms, 10) // the first probe, over at 25ms
	require.Equal(t, 20, g.Limit())
	feed(g, 2, 100*ms, 10*ms, 4) // a window with 4 of 20 in flight
	assert.Equal(t, 20, g.Update(at(1100*ms, 10*ms, 4, false)), "due, but the limit is idle")
	assert.Equal(t, 40, g.Update(at(1200*ms, 10*ms, 20, false)), "a window that used the limit ends, and grows it")
	assert.Equal(t, 20, g.Update(at(1300*ms, 10*ms, 20, false)), "now the probe, from half the limit")
	assert.Equal(t, Probing, g.Cause())
}

// The lower half's mean ignores what sits in the upper half (hung
// requests, a slow route), and the reservoir keeps 64 samples however many
// are added.
func TestSampleSet(t *testing.T) {
	var s sampleSet
	assert.Equal(t, 0.0, s.lowMean())
	for i := range 10 {
		lat := 10.0
		if i%10 < 3 {
			lat = 1000 // hung
		}
		s.add(lat)
	}
	assert.Equal(t, 10.0, s.lowMean())
	for i := range 100_000 {
		s.add(float64(i % 100))
	}
	assert.Equal(t, len(s.v), s.n)
	assert.InDelta(t, 25, s.lowMean(), 8, "the lower half of a uniform sample of 0..99")
	s.reset()
	assert.Equal(t, 0.0, s.lowMean())
}
