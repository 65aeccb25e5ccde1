package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/benchmarks/overload/sim"
	"github.com/sluice-go/sluice/core"
)

func tiny() sim.Config {
	return sim.Config{Workers: 4, Service: 10 * time.Millisecond, Spread: 0.5, Load: 0.5,
		Timeout: time.Second, Warmup: 200 * time.Millisecond, Span: time.Second, Seed: 1}
}

// With no limiter at 0.5x, nothing is shed and nearly all are good.
func TestHTTPUnloaded(t *testing.T) {
	defer goleak.VerifyNone(t)
	r, err := runHTTP(tiny(), nil)
	require.NoError(t, err)
	assert.Positive(t, r.Arrived)
	assert.Zero(t, r.Shed)
	assert.Zero(t, r.Failed)
	assert.GreaterOrEqual(t, r.Good, r.Arrived*9/10)
}

// The pool shrinks and grows at run time behind a limiter, and the run
// ends with nothing left running.
func TestHTTPWorkersChange(t *testing.T) {
	defer goleak.VerifyNone(t)
	cfg := tiny()
	cfg.Load = 0.8
	cfg.Changes = []sim.Change{{At: 300 * time.Millisecond, Workers: 1}, {At: 800 * time.Millisecond, Workers: 3, Load: 0.3}}
	l, err := sim.Contenders(cfg)[1].New(core.SystemClock{})
	require.NoError(t, err)
	r, err := runHTTP(cfg, l)
	require.NoError(t, err)
	assert.Equal(t, 3, r.Workers)
	assert.Positive(t, r.Good)
	assert.Zero(t, r.Failed)
	assert.Equal(t, 4, r.FinalLimit)
}

// The pool serves first come first served, and a resize takes effect as
// the work in hand finishes.
func TestBackendResize(t *testing.T) {
	b := newBackend(tiny(), nil)
	b.apply(sim.Change{Workers: 2})
	_, ok := b.acquire()
	require.True(t, ok)
	_, ok = b.acquire()
	require.True(t, ok)
	got := make(chan int, 2)
	for i := range 2 {
		go func() {
			if _, ok := b.acquire(); ok {
				got <- i
			}
		}()
		require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiting) == i+1 }, 5*time.Second, time.Millisecond)
	}
	b.apply(sim.Change{Workers: 1})
	b.release(0, 0) // busy 1 of 1: nobody starts
	select {
	case i := <-got:
		t.Fatalf("waiter %d started with the pool full", i)
	case <-time.After(10 * time.Millisecond):
	}
	b.release(0, 0)
	assert.Equal(t, 0, <-got, "first come, first served")
	b.apply(sim.Change{Workers: 2})
	assert.Equal(t, 1, <-got)
	b.close()
	_, ok = b.acquire()
	assert.False(t, ok, "closed, a full pool answers at once")
}

func TestWithSpan(t *testing.T) {
	cfg := sim.Config{Warmup: 10 * time.Second, Span: 30 * time.Second,
		Changes: []sim.Change{{At: 5 * time.Second, Load: 2}, {At: 25 * time.Second, Workers: 1}}}
	got := withSpan(cfg, 2*time.Second, 6*time.Second)
	assert.Equal(t, []time.Duration{time.Second, 5 * time.Second}, []time.Duration{got.Changes[0].At, got.Changes[1].At})
	assert.Equal(t, 5*time.Second, cfg.Changes[0].At, "cfg's own changes untouched")
	assert.Equal(t, cfg, withSpan(cfg, 0, 0))
}

// p99 is measured on the server as sim measures it: a hung request, which
// its client abandons, counts with its whole work, past the timeout.
func TestHTTPP99Uncapped(t *testing.T) {
	defer goleak.VerifyNone(t)
	cfg := tiny()
	cfg.Timeout = 200 * time.Millisecond
	cfg.Hang = 0.3
	r, err := runHTTP(cfg, nil)
	require.NoError(t, err)
	assert.Greater(t, r.P99, cfg.Timeout, "uncapped, abandoned requests included")
	assert.LessOrEqual(t, r.ClientP99, cfg.Timeout+100*time.Millisecond, "the client's is capped")
}

// A case the machine cannot drive runs with its workers divided by the
// smallest k that brings its peak rate under the cap; one that would keep
// under 4 workers is skipped.
func TestScaleCase(t *testing.T) {
	cfg := sim.Config{Workers: 32, Service: 20 * time.Millisecond, Spread: 0.5, Load: 2, Timeout: time.Second,
		Warmup: time.Second, Span: time.Second, Changes: []sim.Change{{At: time.Second, Workers: 12}, {At: 2 * time.Second, Service: time.Second}}}
	ref := cfg
	ref.Workers, ref.Load, ref.Changes = 12, 0.5, nil
	c := sim.Case{Name: "x", Config: cfg, Unloaded: ref}

	got, ok := scaleCase(c, 2000) // 3200/s: k = 2
	require.True(t, ok)
	assert.Equal(t, "x (C=32→16)", got.Name)
	assert.Equal(t, 16, got.Workers)
	assert.Equal(t, []int{6, 0}, []int{got.Changes[0].Workers, got.Changes[1].Workers})
	assert.Equal(t, 6, got.Unloaded.Workers)
	assert.Equal(t, cfg.Service, got.Service)
	assert.Equal(t, cfg.Load, got.Load)
	assert.Equal(t, 12, c.Changes[0].Workers, "c's own changes untouched")

	got, ok = scaleCase(c, 1000) // k = 3: 10 workers, 1000/s
	require.True(t, ok)
	assert.Equal(t, "x (C=32→10)", got.Name)

	got, ok = scaleCase(c, 3200)
	require.True(t, ok)
	assert.Equal(t, c, got, "under the cap, as it is")

	c.Hang = 0.3 // mean service 314 ms, as sim.interarrival has it: 204/s
	got, ok = scaleCase(c, 2000)
	require.True(t, ok)
	assert.Equal(t, c, got)

	got, ok = scaleCase(c, 30) // k = 7: 4 workers, 25/s
	require.True(t, ok)
	assert.Equal(t, "x (C=32→4)", got.Name)
	_, ok = scaleCase(c, 20) // 4 workers still give 25/s, 3 are too few: skipped
	assert.False(t, ok)
}
