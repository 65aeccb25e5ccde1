package redis

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core"
)

// BenchmarkRedis measures decisions per second through one client with 1,
// 16 and 64 concurrent callers, on one hot key and over 100k keys, for:
//
//   - floor: one EVALSHA of a script that returns 1, the least a decision
//     can cost through this client;
//   - redis_rate: github.com/go-redis/redis_rate (GCRA, one EVALSHA per
//     decision) on the same limit, 1000 per second with a burst of 1000;
//   - this store's GCRA, token bucket, fixed window and sliding log on
//     that limit (on the server's clock).
//
// Each implementation is its own sub-benchmark, with its allocations. On a
// shared machine whose load drifts, compare with BenchmarkRedisVersus,
// which interleaves them and reports the ratios:
//
//	go test ./store/redis/ -run '^$' -bench . -benchmem -count 3
func BenchmarkRedis(b *testing.B) {
	bench := newBenchSetup(b)
	for _, pattern := range []string{"hot", "100k"} {
		for _, callers := range []int{1, 16, 64} {
			for _, impl := range bench.impls {
				b.Run(pattern+"/callers="+strconv.Itoa(callers)+"/"+impl.name, func(b *testing.B) {
					op := bench.op(impl, pattern)
					runCallers(b, callers, op)
				})
			}
		}
	}
}

// BenchmarkRedisVersus runs the implementations of BenchmarkRedis in turns
// within each row: every round runs a slice of each (in rotating order),
// so that a machine whose load drifts weighs on all alike. It reports each
// one's decisions per second and the store's ratios to the floor and to
// redis_rate (gcra/redis_rate, token-bucket/floor, ...).
func BenchmarkRedisVersus(b *testing.B) {
	bench := newBenchSetup(b)
	const slice = 2000 // decisions per implementation per round
	for _, pattern := range []string{"hot", "100k"} {
		for _, callers := range []int{1, 16, 64} {
			b.Run(pattern+"/callers="+strconv.Itoa(callers), func(b *testing.B) {
				ops := make([]func(int64) error, len(bench.impls))
				for i, impl := range bench.impls {
					ops[i] = bench.op(impl, pattern)
				}
				elapsed := make([]time.Duration, len(ops))
				var seq atomic.Int64
				b.ResetTimer()
				for round := range b.N {
					for j := range ops {
						k := (round + j) % len(ops)
						start := time.Now()
						if err := runSlice(callers, slice, &seq, ops[k]); err != nil {
							b.Fatal(err)
						}
						elapsed[k] += time.Since(start)
					}
				}
				b.StopTimer()
				rate := make(map[string]float64)
				for i, impl := range bench.impls {
					rate[impl.name] = float64(b.N*slice) / elapsed[i].Seconds()
					b.ReportMetric(rate[impl.name], impl.name+"/s")
				}
				for _, name := range []string{"gcra", "token-bucket"} {
					b.ReportMetric(rate[name]/rate["redis_rate"], name+"/redis_rate")
					b.ReportMetric(rate[name]/rate["floor"], name+"/floor")
				}
				b.ReportMetric(rate["redis_rate"]/rate["floor"], "redis_rate/floor")
			})
		}
	}
}

// runSlice runs op n times from callers goroutines.
func runSlice(callers, n int, seq *atomic.Int64, op func(int64) error) error {
	var done atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for done.Add(1) <= int64(n) {
				if err := op(seq.Add(1)); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	return nil
}

type benchImpl struct {
	name string
	keys []string // the 100k keys it is given; keys[0] is the hot one
	op   func(key string) error
}

type benchSetup struct {
	impls []benchImpl
}

// op returns impl's operation for the i-th decision of a key pattern.
func (s *benchSetup) op(impl benchImpl, pattern string) func(int64) error {
	if pattern == "hot" {
		return func(int64) error { return impl.op(impl.keys[0]) }
	}
	return func(i int64) error { return impl.op(impl.keys[i%int64(len(impl.keys))]) }
}

func newBenchSetup(b *testing.B) *benchSetup {
	opts := clientOptions(redisAddr())
	opts.PoolSize = 128
	c := goredis.NewClient(opts)
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		unavailable(b, "Redis at %s is unreachable: %v", redisAddr(), err)
	}
	prefix := testPrefix(b, c)
	b.Cleanup(func() { deletePrefix(c, "rate:"+prefix) })
	// A deadline this machine's hiccups (other builds, fuzzers) cannot
	// reach: the benchmark measures throughput, not outages.
	store, err := New(c, WithPrefix(prefix), WithTimeout(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })

	// The store prefixes its keys itself; the others get the prefix here.
	const nKeys = 100_000
	keys, prefixed := make([]string, nKeys), make([]string, nKeys)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
		prefixed[i] = prefix + keys[i]
	}
	floor := goredis.NewScript("return 1")
	limiter := redis_rate.NewLimiter(c)
	rateLimit := redis_rate.PerSecond(1000)
	policy := func(alg core.Algorithm) *core.Policy {
		if bucketAlgorithm(alg) {
			return core.MustPolicy(core.Config{Name: "bench-" + alg.String(), Algorithm: alg, Quota: 1000, Period: time.Second, Burst: 1000})
		}
		return core.MustPolicy(core.Config{Name: "bench-" + alg.String(), Algorithm: alg, Quota: 1000, Period: time.Second})
	}

	impls := []benchImpl{
		{"floor", prefixed, func(key string) error {
			return floor.Run(ctx, c, []string{key}).Err()
		}},
		{"redis_rate", prefixed, func(key string) error {
			_, err := limiter.Allow(ctx, key, rateLimit)
			return err
		}},
	}
	for _, alg := range []core.Algorithm{core.GCRA, core.TokenBucket, core.FixedWindow, core.SlidingLog} {
		p := policy(alg)
		impls = append(impls, benchImpl{alg.String(), keys, func(key string) error {
			_, err := store.Take(ctx, core.Request{Key: key, Policy: p, Cost: 1})
			return err
		}})
	}

	return &benchSetup{impls: impls}
}

// runCallers runs op b.N times from exactly callers goroutines and reports
// decisions per second.
func runCallers(b *testing.B, callers int, op func(i int64) error) {
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for range callers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := op(i); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}
