package benchmarks

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The tests hold every contender to the shared policy, so that a peer given
// the wrong settings (an off-by-one burst, a rate per minute) cannot skew a
// table, and check that the accuracy cases tell an exact limiter from a
// fixed window. Contenders on an injected clock are held to exact figures;
// those in real time to the policy's bounds over the measured span.

// peerGoroutines are goroutines the peers start and offer no way to stop.
var peerGoroutines = []goleak.Option{
	// ulule's memory store stops its cleaner from a finalizer only.
	goleak.IgnoreTopFunction("github.com/ulule/limiter/v3/drivers/store/memory.(*cleaner).Run"),
	// Fiber's limiter and memory storage start a process-wide clock (its
	// name depends on where it was inlined) and a collector.
	goleak.IgnoreTopFunction("github.com/gofiber/fiber/v2/utils.StartTimeStampUpdater.func1.1"),
	goleak.IgnoreTopFunction("github.com/gofiber/fiber/v2/internal/memory.New.StartTimeStampUpdater.func1.1"),
	goleak.IgnoreTopFunction("github.com/gofiber/fiber/v2/middleware/limiter.FixedWindow.New.StartTimeStampUpdater.func1.1"),
	goleak.IgnoreAnyFunction("github.com/gofiber/fiber/v2/internal/memory.(*Storage).gc"),
}

func TestMemoryContendersHoldThePolicy(t *testing.T) {
	defer goleak.VerifyNone(t, peerGoroutines...)
	ctx := context.Background()
	for _, c := range append(speedContenders(), fiberContender) {
		t.Run(c.lib, func(t *testing.T) {
			is := memoryInstances(t, c)
			if is.align != nil {
				is.align()
			}
			allow := is.allow[0]
			start := time.Now()
			admitted := 0
			for range 2 * burst {
				ok, err := allow(ctx, accuracyKey)
				require.NoError(t, err)
				if ok {
					admitted++
				}
			}
			other, err := allow(ctx, "10.0.0.2")
			require.NoError(t, err)
			assert.True(t, other, "another key is limited apart")
			if !c.clocked {
				assertWithinPolicy(t, admitted, time.Since(start))
				return
			}
			assert.Equal(t, burst, admitted, "the burst, on a clock that does not move")
			is.clock.Set(clockStart.Add(period / quota))
			ok, err := allow(ctx, accuracyKey)
			require.NoError(t, err)
			assert.True(t, ok, "one unit refills in period/quota")
			ok, err = allow(ctx, accuracyKey)
			require.NoError(t, err)
			assert.False(t, ok, "only one")
		})
	}
}

func TestRedisContendersHoldThePolicy(t *testing.T) {
	addr := redisAddr(t)
	defer goleak.VerifyNone(t, peerGoroutines...)
	ctx := context.Background()
	for _, rc := range redisContenders() {
		if rc.floor {
			continue
		}
		t.Run(rc.lib, func(t *testing.T) {
			allow := redisInstances(t, rc, addr).allow
			start := time.Now()
			admitted := 0
			for i := range 2 * burst {
				ok, err := allow[i%len(allow)](ctx, accuracyKey)
				require.NoError(t, err)
				if ok {
					admitted++
				}
			}
			assertWithinPolicy(t, admitted, time.Since(start))
		})
	}
}

func TestMiddlewaresHoldThePolicy(t *testing.T) {
	defer goleak.VerifyNone(t, peerGoroutines...)
	cs := clients(2)
	for _, m := range middlewares() {
		for _, kind := range []writer{reusedWriter, recorderWriter} {
			if kind == recorderWriter && m.fw == "fiber" {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s/writer=%d", m.fw, m.lib, kind), func(t *testing.T) {
				testMiddlewareHoldsThePolicy(t, m.build(t, kind), m.lib, cs)
			})
		}
	}
}

func testMiddlewareHoldsThePolicy(t *testing.T, serve server, lib string, cs []client) {
	var hot statusTally
	start := time.Now()
	for range 2 * burst {
		hot.add(serve(&cs[0]))
	}
	elapsed := time.Since(start)
	assert.Equal(t, http.StatusOK, serve(&cs[1]), "another client is limited apart")
	assert.Zero(t, hot.other)
	if lib == "bare" {
		assert.Equal(t, 2*burst, hot.ok)
		return
	}
	assertWithinPolicy(t, hot.ok, elapsed)
	assert.NoError(t, hot.check(false, 1, elapsed))
}

// assertWithinPolicy asserts that admitted, of 2×burst attempts on a fresh
// key over elapsed, is what the shared policy admits: at least the burst,
// at most the burst plus what refills in elapsed.
func assertWithinPolicy(t *testing.T, admitted int, elapsed time.Duration) {
	t.Helper()
	assert.GreaterOrEqual(t, admitted, burst, "the burst is admitted")
	assert.LessOrEqual(t, admitted, policyMax(elapsed), "no more than the policy allows in %v", elapsed)
}

// TestAccuracyCases runs the cases on the contenders with an injected
// clock, whose figures are exact: the cases must tell a bucket, which is
// held to the policy across a window edge, from a fixed window, which
// admits twice its quota there.
func TestAccuracyCases(t *testing.T) {
	defer goleak.VerifyNone(t, peerGoroutines...)
	for _, tc := range []struct {
		c          contender
		burst      accuracy
		edge       accuracy
		edgeReason string
	}{
		{sluiceContender, accuracy{admitted: 100, policyMax: 100}, accuracy{admitted: 110, policyMax: 110}, "a bucket refills 10 in 100ms"},
		{xrateContender, accuracy{admitted: 100, policyMax: 100}, accuracy{admitted: 110, policyMax: 110}, "a bucket refills 10 in 100ms"},
		{throttledContender, accuracy{admitted: 100, policyMax: 100}, accuracy{admitted: 110, policyMax: 110}, "a bucket refills 10 in 100ms"},
		{sluiceFixedContender, accuracy{admitted: 100, policyMax: 100}, accuracy{admitted: 199, policyMax: 110}, "99 before the edge, 100 after"},
	} {
		t.Run(tc.c.lib, func(t *testing.T) {
			require.True(t, tc.c.clocked)
			burst, edge := burstCase(memoryInstances(t, tc.c)), edgeCase(t, memoryInstances(t, tc.c))
			if tc.c.lib == throttledContender.lib {
				// throttled's GCRA gives up on a key after 10 failed
				// compare-and-swaps: under 8 goroutines an attempt now and
				// then fails, which the tables count as its errors.
				burst.errors, edge.errors = 0, 0
			}
			assert.Equal(t, tc.burst, burst, "burst")
			assert.Equal(t, tc.edge, edge, "edge: %s", tc.edgeReason)
		})
	}
}

func TestSpreadVisitsEveryKey(t *testing.T) {
	for _, n := range []int{1, 7, manyKeys} {
		seen := make([]bool, n)
		for i := range uint64(n) {
			seen[spread(i, n)] = true
		}
		for k, ok := range seen {
			require.True(t, ok, fmt.Sprintf("n=%d: key %d never visited", n, k))
		}
	}
}
