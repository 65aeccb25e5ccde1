package benchmarks

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The accuracy cases count what each limiter admits against what the
// shared policy allows: policyMax over the span the requests were made in,
// which is the burst plus what refills in that span. Each case reports
// admitted and policy-max; a limiter is exact when they are equal, and
// admits too much when admitted is above.
//
// A contender that can read an injected clock (sluice, x/time/rate,
// throttled) runs on a clock that moves only when the case moves it, so its
// figures are exact and the same on every run. The others run in real time
// and their span is measured: it includes the time the requests took, so
// on a busy machine policy-max grows by a few units, never by a window.
const (
	// hammerers goroutines make hammerTries attempts each, all released at
	// once: 4 times the burst.
	hammerers   = 8
	hammerTries = 50
	// edgeGap is how far from a window's edge the window-edge case spends.
	edgeGap = 50 * time.Millisecond
)

// accuracyKey is the one key every case hammers.
const accuracyKey = "10.0.0.1"

// clockStart is where injected clocks start: on a second, so that sluice's
// fixed windows, which are aligned to the epoch, have an edge a period
// later.
var clockStart = time.Unix(1_700_000_000, 0)

// BenchmarkAccuracy runs each case once per run, whatever -benchtime says.
//
//   - burst: hammerers goroutines hammer a fresh key at once. Every
//     limiter should admit the burst, 100, and no more.
//   - edge: a key takes one unit at t0, then is hammered at t0+period-gap
//     and again at t0+period+gap: across the edge of a window that started
//     at t0 (a fixed window's), within 2×gap. A bucket admits its burst
//     plus 2×gap's refill; a fixed window admits twice its quota, less one.
//
// The redis-burst and redis-edge cases are the same on Redis from four
// instances (clients and limiters) sharing the key, hammerers goroutines
// each.
func BenchmarkAccuracy(b *testing.B) {
	for _, c := range append(limiterContenders(), sluiceFixedContender) {
		b.Run("case=burst/lib="+c.lib, func(b *testing.B) {
			reportAccuracy(b, burstCase(memoryInstances(b, c)))
		})
		b.Run("case=edge/lib="+c.lib, func(b *testing.B) {
			reportAccuracy(b, edgeCase(b, memoryInstances(b, c)))
		})
	}
	addr := redisAddr(b)
	for _, rc := range redisContenders() {
		if rc.floor {
			continue
		}
		b.Run("case=redis-burst/lib="+rc.lib, func(b *testing.B) {
			reportAccuracy(b, burstCase(redisInstances(b, rc, addr)))
		})
		b.Run("case=redis-edge/lib="+rc.lib, func(b *testing.B) {
			reportAccuracy(b, edgeCase(b, redisInstances(b, rc, addr)))
		})
	}
}

// instances is a limiter as several instances share it, and how its time
// moves.
type instances struct {
	allow []allowFunc // one per instance
	// clock is the limiter's clock, or nil for real time.
	clock *manualClock
	// align, if set, waits for a window to start (see contender.align).
	align func()
}

// memoryInstances is one in-process limiter of c, on an injected clock if c
// reads one.
func memoryInstances(tb testing.TB, c contender) instances {
	var clock *manualClock
	if c.clocked {
		clock = newManualClock(clockStart)
	}
	return instances{allow: []allowFunc{c.build(tb, setup{clock: clock})}, clock: clock, align: c.align}
}

// redisInstances is four instances of rc, each with its own client, on one
// fresh key prefix.
func redisInstances(tb testing.TB, rc redisContender, addr string) instances {
	prefix := newPrefix() + ":"
	var is instances
	for range 4 {
		is.allow = append(is.allow, rc.build(tb, newRedisClient(tb, addr), prefix))
	}
	return is
}

// now returns the instances' time.
func (is instances) now() time.Time {
	if is.clock != nil {
		return is.clock.Now()
	}
	return time.Now()
}

// waitUntil moves the instances' time to t: sets the clock, or sleeps.
func (is instances) waitUntil(t time.Time) {
	if is.clock != nil {
		is.clock.Set(t)
		return
	}
	time.Sleep(time.Until(t))
}

// accuracy is what a case counted.
type accuracy struct {
	admitted  int
	policyMax int
	errors    int
}

func reportAccuracy(b *testing.B, a accuracy) {
	for b.Loop() { // the case ran once already; the loop only satisfies -benchtime
	}
	b.ReportMetric(float64(a.admitted), "admitted")
	b.ReportMetric(float64(a.policyMax), "policy-max")
	if a.errors > 0 {
		b.ReportMetric(float64(a.errors), "errors")
	}
}

// burstCase hammers a fresh key.
func burstCase(is instances) accuracy {
	if is.align != nil {
		is.align()
	}
	start := is.now()
	admitted, errs := hammer(is.allow)
	return accuracy{admitted: admitted, policyMax: policyMax(is.now().Sub(start)), errors: errs}
}

// edgeCase hammers a key on both sides of the edge of a window that
// started with the key's first request.
func edgeCase(tb testing.TB, is instances) accuracy {
	if is.align != nil {
		is.align()
	}
	t0 := is.now()
	if _, err := is.allow[0](context.Background(), accuracyKey); err != nil {
		tb.Fatal(err)
	}
	is.waitUntil(t0.Add(period - edgeGap))
	start := is.now()
	before, errsBefore := hammer(is.allow)
	is.waitUntil(t0.Add(period + edgeGap))
	after, errsAfter := hammer(is.allow)
	return accuracy{admitted: before + after, policyMax: policyMax(is.now().Sub(start)), errors: errsBefore + errsAfter}
}

// hammer makes hammerers×hammerTries attempts on accuracyKey per instance,
// from hammerers goroutines each, released at once, and returns how many
// were admitted and how many failed.
func hammer(allow []allowFunc) (admitted, errs int) {
	var ok, failed atomic.Int64
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	for _, a := range allow {
		for range hammerers {
			ready.Add(1)
			done.Go(func() {
				ctx := context.Background()
				ready.Done()
				<-release
				for range hammerTries {
					switch yes, err := a(ctx, accuracyKey); {
					case err != nil:
						failed.Add(1)
					case yes:
						ok.Add(1)
					}
				}
			})
		}
	}
	ready.Wait()
	close(release)
	done.Wait()
	return int(ok.Load()), int(failed.Load())
}
