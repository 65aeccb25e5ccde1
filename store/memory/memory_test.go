package memory_test

import (
	"context"
	"fmt"
	"github.com/sluice-go/sluice/sluicetest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
	"github.com/sluice-go/sluice/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t testing.TB, clock core.Clock) core.Store {
		s, err := memory.New(memory.WithClock(clock))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// TestConformanceTinyStore runs the suite on a store so small that it rotates
// its generations all the time: decisions must not change while keys fit.
func TestConformanceTinyStore(t *testing.T) {
	storetest.Run(t, func(t testing.TB, clock core.Clock) core.Store {
		s, err := memory.New(memory.WithClock(clock), memory.WithMaxKeys(1<<12), memory.WithSweepInterval(time.Millisecond))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestOptionsRejectBadValues(t *testing.T) {
	for name, opt := range map[string]memory.Option{
		"max keys":       memory.WithMaxKeys(0),
		"clock":          memory.WithClock(nil),
		"sweep interval": memory.WithSweepInterval(-time.Second),
	} {
		_, err := memory.New(opt)
		assert.Error(t, err, name)
	}
}

func newStore(t *testing.T, opts ...memory.Option) (*memory.Store, *sluicetest.ManualClock) {
	clock := sluicetest.NewManualClock(storetest.Epoch)
	s, err := memory.New(append([]memory.Option{memory.WithClock(clock), memory.WithSweepInterval(0)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, clock
}

var gcra = core.MustPolicy(core.PolicyConfig{Name: "gcra", Algorithm: core.GCRA, Quota: 100, Period: time.Second, Burst: 100})

func take(t *testing.T, s core.Store, key string, p *core.Policy) core.Decision {
	t.Helper()
	d, err := s.Take(context.Background(), core.Request{Key: key, Policy: p, Cost: 1})
	require.NoError(t, err)
	return d
}

// A flood of 1M distinct keys into a store capped at 100k keeps at most 100k
// keys and a heap proportional to the cap, while a key in steady use keeps
// its state through it.
func TestFloodStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a million keys")
	}
	const capKeys, flood = 100_000, 1_000_000
	s, _ := newStore(t, memory.WithMaxKeys(capKeys))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	for range 60 {
		require.True(t, take(t, s, "hot", gcra).Allowed)
	}
	key := make([]byte, 0, 16)
	for i := range flood {
		key = fmt.Appendf(key[:0], "10.%d.%d.%d", i>>16&0xff, i>>8&0xff, i&0xff)
		_, _ = s.Take(context.Background(), core.Request{Key: string(key), Policy: gcra, Cost: 1})
		if i%1000 == 0 {
			take(t, s, "hot", gcra) // in steady use
		}
		if i%100_000 == 0 {
			require.LessOrEqual(t, s.Len(), capKeys)
		}
	}
	assert.LessOrEqual(t, s.Len(), capKeys)
	assert.Greater(t, s.Len(), capKeys/4, "eviction keeps a useful share of the cap")

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	assert.Less(t, held, int64(capKeys*150), "heap held after the flood: %d bytes", held)
	runtime.KeepAlive(s)

	d := take(t, s, "hot", gcra)
	assert.Less(t, d.Remaining, int64(40-1), "the hot key kept its state: %d remaining", d.Remaining)
}

// The sweep drops exactly the keys back to full.
func TestSweepDropsFullState(t *testing.T) {
	s, clock := newStore(t)
	slow := core.MustPolicy(core.PolicyConfig{Name: "slow", Algorithm: core.TokenBucket, Quota: 1, Period: time.Hour, Burst: 5})
	for i := range 10 {
		take(t, s, fmt.Sprint("fast", i), gcra)
		take(t, s, fmt.Sprint("slow", i), slow)
	}
	require.Equal(t, 20, s.Len())
	clock.Advance(time.Second)
	s.Sweep()
	assert.Equal(t, 10, s.Len(), "the fast keys refilled in 1s, the slow ones did not")
	assert.Equal(t, int64(3), take(t, s, "slow0", slow).Remaining, "the slow keys kept their state")
	clock.Advance(2 * time.Hour) // slow0 took two units
	s.Sweep()
	assert.Zero(t, s.Len())
}

// The background sweep runs on its own and stops with Close; goleak (in
// TestMain) fails the package if it does not.
func TestBackgroundSweepStopsOnClose(t *testing.T) {
	clock := sluicetest.NewManualClock(storetest.Epoch)
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(time.Millisecond))
	require.NoError(t, err)
	take(t, s, "k", gcra)
	clock.Advance(time.Minute)
	require.Eventually(t, func() bool { return s.Len() == 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	assert.True(t, take(t, s, "k", gcra).Allowed, "the store stays usable after Close")
}

func TestTakeFromExistingKeyAllocatesNothing(t *testing.T) {
	s, clock := newStore(t)
	for _, alg := range []core.Algorithm{core.TokenBucket, core.GCRA, core.LeakyBucket, core.FixedWindow, core.SlidingLog, core.SlidingCounter} {
		c := core.PolicyConfig{Name: alg.String(), Algorithm: alg, Quota: 1000, Period: time.Second}
		if alg == core.TokenBucket || alg == core.GCRA || alg == core.LeakyBucket {
			c.Burst = 1000
		}
		r := core.Request{Key: "10.1.2.3", Policy: core.MustPolicy(c), Cost: 1}
		_, _ = s.Take(context.Background(), r)
		allocs := testing.AllocsPerRun(100, func() {
			clock.Advance(time.Microsecond)
			_, _ = s.Take(context.Background(), r)
		})
		assert.Zero(t, allocs, alg.String())
	}
}

// Layered requests over many shards from many goroutines neither deadlock
// nor lose units: every admitted request took exactly one unit per layer.
func TestTakeAllAcrossShardsConcurrently(t *testing.T) {
	s, _ := newStore(t)
	user := core.MustPolicy(core.PolicyConfig{Name: "user", Algorithm: core.FixedWindow, Quota: 50, Period: time.Hour})
	var wg sync.WaitGroup
	admitted := make([]int, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds := make([]core.Decision, 3)
			for i := range 100 {
				rs := []core.Request{
					{Key: fmt.Sprint("ip", i%7), Policy: gcra, Cost: 1},
					{Key: "shared-user", Policy: user, Cost: 1},
					{Key: fmt.Sprint("route", (i+g)%5), Policy: user, Cost: 1},
				}
				if err := s.TakeAll(context.Background(), rs, ds); err != nil {
					panic(err)
				}
				if ds[0].Allowed && ds[1].Allowed && ds[2].Allowed {
					admitted[g]++
				}
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, n := range admitted {
		total += n
	}
	assert.Equal(t, 50, total, "the shared user layer admits exactly its quota")
	d := take(t, s, "shared-user", user)
	assert.False(t, d.Allowed)
}
