package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sluice-go/sluice/core"
	"github.com/sluice-go/sluice/store/memory"
)

// The benchmarks of the README's Redis table. Each runs against a private
// redis-server, so that its command counts are the benchmark's alone, on
// one hot key (a global limit: every decision on the same key), and
// compares, in one run:
//
//   - floor: one EVALSHA of a script that returns 1 per decision, through
//     a plain go-redis client: the least one call per decision can cost;
//   - central: this store with WithBatch(1): one script call per decision;
//   - batched: this store as it comes: decisions folded into batches;
//   - leased: WithLease, 100 units a lease, given back after 100ms;
//   - split: WithSplit over 4 keys, batched.
//
// Other libraries (go-redis/redis_rate, ulule/limiter) are compared in the
// benchmarks module, so that they never enter this module's dependencies.
//
// Rounds of -count 1 in a shell loop interleave the implementations, so
// that a noisy neighbour slows them alike; benchstat takes the medians:
//
//	for i in 1 2 3 4 5 6; do
//	  go test ./store/redisstore -run '^$' -bench 'Modes|Outage' -benchtime 20000x -count 1
//	done > redis.txt
//	benchstat -col /mode redis.txt
var benchModes = []string{"floor", "central", "batched", "leased", "split"}

// benchPolicy is generous enough that every decision is allowed: the
// benchmark measures decisions, not denials.
var benchPolicy = core.MustPolicy(core.PolicyConfig{Name: "bench", Algorithm: core.GCRA, Quota: 1_000_000, Period: time.Second, Burst: 1_000_000})

// BenchmarkModes reports, per implementation and number of concurrent
// callers: decisions per second, the p50 and p99 latency of a decision, and
// the script calls Redis ran per decision (INFO commandstats).
func BenchmarkModes(b *testing.B) {
	srv := startServer(b)
	for _, callers := range []int{1, 64, 256} {
		for _, mode := range benchModes {
			b.Run(fmt.Sprintf("callers=%d/mode=%s", callers, mode), func(b *testing.B) {
				decide, done := benchDecider(b, srv.addr(), mode, benchPolicy)
				defer done()
				for range 1000 { // warm: connections open, scripts loaded
					if err := decide(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				before := scriptCalls(b, srv.addr())
				lat := runDecisions(b, callers, decide)
				calls := scriptCalls(b, srv.addr()) - before
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
				b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-µs")
				b.ReportMetric(float64(calls)/float64(b.N), "calls/decision")
			})
		}
	}
}

// BenchmarkUnbatched compares this store with WithBatch(1), one script
// call per decision and the default connections, with the floor, one
// EVALSHA per decision on a go-redis pool with a connection for every
// caller, at 1, 64 and 256 callers, in one run: an unbatched store must
// never be slower, its few connections carrying as many calls at once as
// callers wait (pipelined). Interleave rounds as for BenchmarkModes:
//
//	for i in 1 2 3 4 5 6; do
//	  go test ./store/redis/redisstore -run '^$' -bench Unbatched -benchtime 20000x -count 1
//	done > unbatched.txt
//	benchstat -col /mode unbatched.txt
func BenchmarkUnbatched(b *testing.B) {
	srv := startServer(b)
	for _, callers := range []int{1, 64, 256} {
		for _, mode := range []string{"floor", "unbatched"} {
			b.Run(fmt.Sprintf("callers=%d/mode=%s", callers, mode), func(b *testing.B) {
				decide, done := benchDecider(b, srv.addr(), mode, benchPolicy)
				defer done()
				for range 1000 {
					if err := decide(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				before := scriptCalls(b, srv.addr())
				lat := runDecisions(b, callers, decide)
				calls := scriptCalls(b, srv.addr()) - before
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
				b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-µs")
				b.ReportMetric(float64(calls)/float64(b.N), "calls/decision")
			})
		}
	}
}

// BenchmarkOutage measures, per implementation of this store, how far a
// fleet of four instances overshoots a global limit while Redis is down:
// every instance hammers one key limited to 1,000 a second (burst 100) with
// a memory fallback applying a quarter of it (core.WithFallback(4)),
// Redis is killed for a second, and the units admitted during the outage
// are compared with what the limit allows in a second with a full bucket,
// 1,100. It reports the overshoot (negative: under the limit).
//
// One outage a run, whatever -benchtime says: an outage takes seconds.
func BenchmarkOutage(b *testing.B) {
	p := core.MustPolicy(core.PolicyConfig{Name: "outage", Algorithm: core.TokenBucket, Quota: 1000, Period: time.Second, Burst: 100})
	for _, mode := range []string{"central", "batched", "leased", "split"} {
		b.Run("mode="+mode, func(b *testing.B) {
			b.ReportMetric(outageOvershoot(b, mode, p), "overshoot-units")
		})
	}
}

func outageOvershoot(b *testing.B, mode string, p *core.Policy) float64 {
	srv := startServer(b)
	const instances, workers, outage = 4, 8, time.Second
	deciders := make([]func(context.Context) (core.Decision, error), instances)
	for i := range deciders {
		var done func()
		deciders[i], done = benchLimiter(b, srv.addr(), mode, p)
		defer done()
	}
	var down atomic.Bool
	var inOutage atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, decide := range deciders {
		for range workers {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					during := down.Load()
					d, err := decide(context.Background())
					if err == nil && d.Allowed && during && down.Load() {
						inOutage.Add(1)
					}
					if !d.Allowed {
						time.Sleep(100 * time.Microsecond) // a denied client backs off a little
					}
				}
			})
		}
	}
	time.Sleep(500 * time.Millisecond) // steady state: the bucket drained
	srv.kill()
	down.Store(true)
	time.Sleep(outage)
	down.Store(false)
	srv.start()
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	srv.kill()
	limit := float64(p.Burst()) + float64(p.Quota())*outage.Seconds()
	return float64(inOutage.Load()) - limit
}

// benchDecider returns a decision under p by the implementation mode,
// against Redis at addr, and what releases it.
func benchDecider(b *testing.B, addr, mode string, p *core.Policy) (func(context.Context) error, func()) {
	c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 512, MaxRetries: -1})
	var opts []Option
	switch mode {
	case "floor":
		floor := goredis.NewScript("return 1")
		return func(ctx context.Context) error { return floor.Run(ctx, c, []string{"hot"}).Err() }, func() { _ = c.Close() }
	case "central":
		opts = []Option{WithBatch(1), WithConns(64)}
	case "unbatched":
		opts = []Option{WithBatch(1)}
	case "leased":
		opts = []Option{WithLease(p, 100, 100*time.Millisecond)}
	case "split":
		opts = []Option{WithSplit(p, 4)}
	}
	// A deadline the machine's hiccups cannot reach: throughput, not outages.
	s, err := New(c, append(opts, WithTimeout(time.Second))...)
	if err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context) error {
			_, err := s.Take(ctx, core.Request{Key: "hot", Policy: p, Cost: 1})
			return err
		}, func() {
			_ = s.Close()
			_ = c.Close()
		}
}

// benchLimiter is a fleet instance for BenchmarkOutage: a Limiter on a
// store of mode, with a memory fallback applying a quarter of the limit.
func benchLimiter(b *testing.B, addr, mode string, p *core.Policy) (func(context.Context) (core.Decision, error), func()) {
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	opts := []Option{WithLogger(nil)}
	switch mode {
	case "central":
		opts = append(opts, WithBatch(1), WithConns(16))
	case "leased":
		opts = append(opts, WithLease(p, 20, 100*time.Millisecond))
	case "split":
		opts = append(opts, WithSplit(p, 4))
	}
	s, err := New(c, opts...)
	if err != nil {
		b.Fatal(err)
	}
	local, err := memory.New()
	if err != nil {
		b.Fatal(err)
	}
	l, err := core.NewLimiter(s, core.WithFallback(local, 4))
	if err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context) (core.Decision, error) {
			return l.Take(ctx, core.Request{Key: "hot", Policy: p, Cost: 1})
		}, func() {
			_, _, _ = s.Close(), local.Close(), c.Close()
		}
}

// runDecisions makes b.N decisions from callers goroutines and returns
// their latencies, sorted.
func runDecisions(b *testing.B, callers int, decide func(context.Context) error) []time.Duration {
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
				if err := decide(ctx); err != nil {
					failed.Store(err)
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

// scriptCalls returns the EVALSHA and EVAL calls the server at addr has
// run.
func scriptCalls(b *testing.B, addr string) int64 {
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(line, ":calls=")
		if ok && (name == "cmdstat_evalsha" || name == "cmdstat_eval") {
			calls, _, _ := strings.Cut(rest, ",")
			v, _ := strconv.ParseInt(calls, 10, 64)
			n += v
		}
	}
	return n
}
