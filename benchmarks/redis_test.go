package benchmarks

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"
	ulule "github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// redisContender is one library's limiter on Redis.
type redisContender struct {
	lib string
	// build returns a limiter under the shared policy on the client c,
	// with every key it writes under prefix.
	build func(tb testing.TB, c *goredis.Client, prefix string) allowFunc
	// floor marks the floor, which calls a script but limits nothing.
	floor bool
}

// redisContenders are the Redis limiters, sluice first, then the floor.
func redisContenders() []redisContender {
	return []redisContender{sluiceRedisContender, floorContender, ululeRedisContender, redisRateContender}
}

// floorContender is the least a decision of one script call can cost: one
// EVALSHA of a script that returns a constant, through go-redis.
var floorContender = redisContender{lib: "floor", floor: true, build: func(_ testing.TB, c *goredis.Client, prefix string) allowFunc {
	script := goredis.NewScript("return 1")
	return func(ctx context.Context, key string) (bool, error) {
		return true, script.Run(ctx, c, []string{prefix + key}).Err()
	}
}}

// ululeRedisContender is ulule/limiter's Redis store: a fixed window of 100
// per second from the key's first request (INCRBY and PEXPIRE in a script).
var ululeRedisContender = redisContender{lib: "ulule", build: func(tb testing.TB, c *goredis.Client, prefix string) allowFunc {
	s, err := ulredis.NewStoreWithOptions(c, ulule.StoreOptions{Prefix: prefix, MaxRetry: ulule.DefaultMaxRetry})
	if err != nil {
		tb.Fatal(err)
	}
	l := ulule.New(s, ulule.Rate{Period: period, Limit: quota})
	return func(ctx context.Context, key string) (bool, error) {
		r, err := l.Get(ctx, key)
		return err == nil && !r.Reached, err
	}
}}

// redisRateContender is go-redis/redis_rate: GCRA in a script, on the
// server's time.
var redisRateContender = redisContender{lib: "redis_rate", build: func(_ testing.TB, c *goredis.Client, prefix string) allowFunc {
	l := redis_rate.NewLimiter(c)
	limit := redis_rate.Limit{Rate: quota, Period: period, Burst: burst}
	return func(ctx context.Context, key string) (bool, error) {
		r, err := l.Allow(ctx, prefix+key, limit)
		return err == nil && r.Allowed > 0, err
	}
}}

// redisCallers are the numbers of goroutines deciding at once.
var redisCallers = []int{1, 64, 256}

// redisKeys are the workloads' numbers of keys: one hot key (after its
// burst nearly every decision is a denial, still a decision made in Redis),
// and manyKeys keys visited in turn (clients within their limits: every
// decision admits).
var redisKeys = []int{1, manyKeys}

// BenchmarkRedis times decisions on Redis from 1, 64 and 256 goroutines,
// on one hot key and over manyKeys keys. It reports decisions per second,
// the p50, p90 and p99 latency of one decision, the script calls Redis ran
// per decision, and the server's own time per decision (redis-µs/decision:
// the usec INFO commandstats counts for EVALSHA and EVAL over the run,
// divided by the decisions; what a decision costs the Redis core). Both are
// exact on a server of its own, as run.sh starts; on a shared server other
// clients' scripts count too. A decision that fails fails the benchmark.
func BenchmarkRedis(b *testing.B) {
	addr := redisAddr(b)
	run := newPrefix()
	for _, callers := range redisCallers {
		for _, nkeys := range redisKeys {
			keys := ipKeys(nkeys)
			for _, rc := range redisContenders() {
				b.Run(fmt.Sprintf("callers=%d/keys=%d/lib=%s", callers, nkeys, rc.lib), func(b *testing.B) {
					c := newRedisClient(b, addr)
					allow := rc.build(b, c, fmt.Sprintf("%s:%s:%d:%d:", run, rc.lib, callers, nkeys))
					ctx := context.Background()
					for i := range 1000 { // connections open, scripts loaded
						if _, err := allow(ctx, keys[spread(uint64(i), len(keys))]); err != nil {
							b.Fatal(err)
						}
					}
					before := scriptStats(b, c)
					lat := decideConcurrently(b, callers, keys, allow)
					after := scriptStats(b, c)
					n := float64(b.N)
					b.ReportMetric(n/b.Elapsed().Seconds(), "decisions/s")
					b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
					b.ReportMetric(float64(lat[len(lat)*9/10])/1e3, "p90-µs")
					b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-µs")
					b.ReportMetric(float64(after.calls-before.calls)/n, "calls/decision")
					b.ReportMetric(float64(after.usec-before.usec)/n, "redis-µs/decision")
				})
			}
		}
	}
}

// decideConcurrently makes b.N decisions from callers goroutines, the i-th
// on the key spread(i), and returns their latencies, sorted.
func decideConcurrently(b *testing.B, callers int, keys []string, allow allowFunc) []time.Duration {
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for range callers {
		wg.Go(func() {
			ctx := context.Background()
			for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
				start := time.Now()
				if _, err := allow(ctx, keys[spread(uint64(i), len(keys))]); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				lat[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	return lat
}

// redisAddr returns the address of the Redis the benchmarks use,
// REDIS_ADDR (default 127.0.0.1:6379), or skips tb if nothing answers
// there.
func redisAddr(tb testing.TB) string {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Skipf("no Redis at %s (set REDIS_ADDR): %v", addr, err)
	}
	return addr
}

// newRedisClient returns a client with connections enough for every
// caller, so that no peer waits for its pool, closed when tb ends.
func newRedisClient(tb testing.TB, addr string) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 512, MaxRetries: -1})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// newPrefix returns a key prefix no other run uses, so that runs sharing a
// Redis never read each other's keys.
func newPrefix() string { return "sluice-bench:" + rand.Text()[:10] }

// scriptStat is what INFO commandstats counts for EVALSHA and EVAL
// together: calls, and the µs the server spent running them.
type scriptStat struct{ calls, usec int64 }

// scriptStats returns the server's counts of EVALSHA and EVAL.
func scriptStats(tb testing.TB, c *goredis.Client) scriptStat {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var st scriptStat
	for line := range strings.SplitSeq(info, "\r\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(field, "=")
			var into *int64
			switch k {
			case "calls":
				into = &st.calls
			case "usec":
				into = &st.usec
			default:
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatalf("commandstats: %q: %v", line, err)
			}
			*into += n
		}
	}
	return st
}
